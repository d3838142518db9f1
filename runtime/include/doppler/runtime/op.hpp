#pragma once
/// Op kinds, element types, shapes and the per-kind rules: shape inference and FLOP/byte accounting.
/// The formulas are documented in docs/formats.md; keep the two in step.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace doppler {

/// The op kinds of `doppler-graph/1` (docs/formats.md).
enum class op_kind : std::uint8_t {
  input, matmul, add, mul, silu, gelu, exp, scale, softmax, rmsnorm, rope, transpose, concat, slice,
  reduce_sum, synthetic,
};
inline constexpr int op_kind_count = 16;

/// The kind's name as written in files, e.g. "reduce_sum".
std::string_view to_string(op_kind kind) noexcept;
/// Parses a kind name; nullopt for an unknown name.
std::optional<op_kind> parse_op_kind(std::string_view name) noexcept;
/// All kinds, in enum order.
std::span<const op_kind> all_op_kinds() noexcept;

/// Element types of tensors.
enum class dtype : std::uint8_t { f32, bf16, f16 };
std::string_view to_string(dtype t) noexcept;
std::optional<dtype> parse_dtype(std::string_view name) noexcept;
/// Bytes per element: 4 for f32, 2 for bf16 and f16.
std::size_t size_of(dtype t) noexcept;

/// A tensor shape: positive extents, outermost first. Empty means "no shape" (a synthetic op).
using shape_t = std::vector<std::int64_t>;

/// Number of elements of a shape (1 for rank 0 is never used: an empty shape means absent).
double numel(const shape_t& s) noexcept;
/// "[64, 128]"
std::string to_string(const shape_t& s);

/// Kind-specific attributes. Only the fields of the op's kind are meaningful.
struct op_attrs {
  double factor = 1.0;              ///< scale: multiplier
  double base = 10000.0;            ///< rope: frequency base
  std::vector<std::int64_t> perm;   ///< transpose: output axis i is input axis perm[i]
  std::int64_t axis = 0;            ///< concat, slice (negative counts from the end)
  std::int64_t start = 0, end = 0;  ///< slice: [start, end) along axis

  bool operator==(const op_attrs&) const = default;
};

/// Result of checking an op against its inputs: the inferred output shape, or why it is invalid.
struct shape_check {
  shape_t shape;        ///< inferred output shape (empty for synthetic ops without a shape)
  std::string problem;  ///< empty when valid
  bool ok() const noexcept { return problem.empty(); }
};

/// Number of inputs a kind takes: {min, max}; max = -1 for "any number".
std::pair<int, int> arity(op_kind kind) noexcept;

/// Infers the output shape of an op of `kind` from its input shapes and attributes, checking that
/// they agree with the kind's rules. Does not look at a declared shape.
shape_check infer_shape(op_kind kind, std::span<const shape_t* const> inputs, const op_attrs& attrs);

/// FLOPs of an op derived from its kind and shapes (docs/formats.md lists the formula per kind).
/// Synthetic ops have no derived FLOPs (their `flops` field is required).
double derived_flops(op_kind kind, std::span<const shape_t* const> inputs, const shape_t& out,
                     const op_attrs& attrs) noexcept;

}  // namespace doppler
