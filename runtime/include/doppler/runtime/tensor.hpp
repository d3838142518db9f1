#pragma once
/// A simple owning tensor for the CPU backend: a shape and contiguous row-major f32 storage, and the
/// deterministic fill rule that gives every `input` op (and every `synthetic` op's output) its data
/// from a run seed. Graphs of dtype bf16/f16 compute in f32 too; only their byte accounting
/// (`bytes(dtype)`, the graph's `op::bytes`) uses the graph's element size. docs/cpu_backend.md.

#include <doppler/runtime/host_buffers.hpp>
#include <doppler/runtime/op.hpp>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace doppler {

/// A dense row-major tensor of floats. Extents may be 0 (an empty buffer); an empty shape is a
/// scalar with one element.
class tensor {
 public:
  tensor() = default;
  /// A zero-filled tensor of this shape. Throws `error(bad_value)` for a negative extent.
  explicit tensor(shape_t shape);
  /// A tensor holding a copy of `values` (in cached storage); their count must equal the shape's
  /// element count.
  tensor(shape_t shape, std::vector<float> values);

  const shape_t& shape() const noexcept { return shape_; }
  std::size_t rank() const noexcept { return shape_.size(); }
  /// Extent of axis `axis`; negative counts from the end (-1 is the last axis).
  std::int64_t dim(std::int64_t axis) const;
  std::size_t numel() const noexcept { return data_.size(); }
  bool empty() const noexcept { return data_.empty(); }

  float* data() noexcept { return data_.data(); }
  const float* data() const noexcept { return data_.data(); }
  std::span<float> values() noexcept { return data_; }
  std::span<const float> values() const noexcept { return data_; }
  float& operator[](std::size_t i) noexcept { return data_[i]; }
  float operator[](std::size_t i) const noexcept { return data_[i]; }

  /// Bytes this tensor accounts for in a graph of element type `t` (numel × size_of(t)); the
  /// storage itself is always f32.
  double bytes(dtype t = dtype::f32) const noexcept {
    return static_cast<double>(numel()) * static_cast<double>(size_of(t));
  }

 private:
  shape_t shape_;
  std::vector<float, host_allocator<float>> data_;  // large buffers are reused across runs (host_buffers.hpp)
};

/// Number of elements of a shape as an integer (1 for the empty shape).
std::size_t element_count(const shape_t& s);

/// True when both tensors have the same shape and bitwise-identical values.
bool bitwise_equal(const tensor& a, const tensor& b) noexcept;
/// Largest |a[i] − b[i]|; +inf when the shapes differ, NaN when any difference is NaN (wherever it
/// sits: a check `!(diff <= tol)` then fails on it).
double max_abs_diff(const tensor& a, const tensor& b) noexcept;
/// max_abs_diff(a, ref) over ref's largest |value| (the GPU checks' error against a reference);
/// +inf when the shapes differ or any difference is NaN, so `err <= tol` fails on both.
double max_rel_diff(const tensor& a, const tensor& ref) noexcept;
/// True when every value is finite.
bool all_finite(const tensor& t) noexcept;

// ---- deterministic fills ---------------------------------------------------------------------

/// Seed of one op in a run: a 64-bit mix of the run seed and the op's id (FNV-1a of the id, then
/// splitmix64). Keyed by id, not index, so a graph re-ordered in its file gets the same data.
std::uint64_t op_seed(std::uint64_t run_seed, std::string_view op_id) noexcept;

/// Fills `t` with values uniform in [-1, 1) × `scale`; element i depends only on (seed, i), so the
/// fill is reproducible bit for bit on every machine.
void fill_uniform(tensor& t, std::uint64_t seed, float scale = 1.0f) noexcept;

/// The fill rule of `input` ops (docs/cpu_backend.md):
/// - an id ending in `.ones` (moe-layer's gate-widening row) is filled with 1;
/// - otherwise uniform [-1, 1) × sqrt(3 / n), n = the last axis' length, so every element has
///   variance 1/n: a product with a square matrix keeps its scale and long chains stay finite.
float input_fill_scale(const shape_t& shape) noexcept;
/// Allocates and fills the tensor of an `input` op with `id` and `shape` under `run_seed`.
tensor make_input(std::string_view id, const shape_t& shape, std::uint64_t run_seed);

}  // namespace doppler
