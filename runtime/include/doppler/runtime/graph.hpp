#pragma once
/// The graph model: a DAG of ops (`doppler-graph/1`). Build one with `graph_builder` (generators,
/// importers, the JSON loader all do), then query adjacency, topological order and costs. A built
/// graph is valid by construction: ids unique, inputs resolved, acyclic, shapes checked, costs set.

#include <doppler/runtime/id_index.hpp>
#include <doppler/runtime/op.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace doppler {

/// Index of an op inside its graph (position in file/insertion order).
using op_index = std::uint32_t;

/// One op of a graph, as the file states it plus its resolved inputs and effective cost.
struct op {
  std::string id;                      ///< unique, non-empty
  std::string name;                    ///< optional human name (e.g. the paper's op tag)
  op_kind kind = op_kind::synthetic;
  shape_t shape;                       ///< output shape; empty only for synthetic ops without one
  std::vector<op_index> inputs;        ///< in argument order (an input may repeat: mul [x, x])
  op_attrs attrs;
  std::optional<double> flops_override;  ///< `flops` as given in the file
  std::optional<double> bytes_override;  ///< `bytes` as given in the file
  double flops = 0;                    ///< effective FLOPs (override, else derived)
  double bytes = 0;                    ///< effective output bytes (override, else numel × dtype size)
};

/// What a builder receives: an op whose inputs are still ids.
struct op_spec {
  std::string id;
  op_kind kind = op_kind::synthetic;
  std::vector<std::string> inputs;
  shape_t shape;  ///< declared shape; empty = infer it (builder) / absent (synthetic)
  op_attrs attrs;
  std::optional<double> flops, bytes;
  std::string name;
};

/// An immutable, validated dataflow graph.
class graph {
 public:
  graph() = default;

  const std::string& name() const noexcept { return name_; }
  dtype element_type() const noexcept { return dtype_; }

  std::size_t size() const noexcept { return ops_.size(); }
  const op& operator[](op_index i) const noexcept { return ops_[i]; }
  std::span<const op> ops() const noexcept { return ops_; }
  /// Index of the op with this id, if any.
  std::optional<op_index> find(std::string_view id) const;

  /// Distinct producers of op i (a repeated input counts once), in first-use order.
  std::span<const op_index> preds(op_index i) const noexcept {
    return {pred_.data() + pred_off_[i], pred_.data() + pred_off_[i + 1]};
  }
  /// Distinct consumers of op i, in index order.
  std::span<const op_index> succs(op_index i) const noexcept {
    return {succ_.data() + succ_off_[i], succ_.data() + succ_off_[i + 1]};
  }
  /// Number of distinct (producer, consumer) edges.
  std::size_t edge_count() const noexcept { return pred_.size(); }
  /// A topological order (Kahn's algorithm, FIFO from the entries in index order: deterministic).
  std::span<const op_index> topo_order() const noexcept { return topo_; }

  double total_flops() const noexcept { return total_flops_; }
  double total_bytes() const noexcept { return total_bytes_; }

 private:
  friend class graph_builder;
  std::string name_;
  dtype dtype_ = dtype::f32;
  std::vector<op> ops_;
  id_index index_;  // id -> op index
  std::vector<std::uint32_t> pred_off_, succ_off_;
  std::vector<op_index> pred_, succ_, topo_;
  double total_flops_ = 0, total_bytes_ = 0;
};

/// Accumulates op specs and turns them into a validated graph. Errors are `doppler::error`s whose
/// path is the op's position (`ops[17].inputs[1]`), so a loader reports them against its file.
class graph_builder {
 public:
  explicit graph_builder(std::string name = {}, dtype t = dtype::f32);

  /// Adds an op. If `spec.shape` is empty, the kind is not synthetic and every input was added
  /// before, the shape is inferred now (throws on mismatch); otherwise `build` checks it.
  /// Returns the id, for chaining generators.
  const std::string& add(op_spec spec);
  /// Appends an op as given, without inference or lookups (loaders of big files).
  void push(op_spec spec) { specs_.push_back(std::move(spec)); }

  // Convenience for generators: add an op of a kind with inferred shape, return its id.
  const std::string& input(std::string id, shape_t shape);
  const std::string& unary(op_kind kind, std::string id, const std::string& x);
  const std::string& binary(op_kind kind, std::string id, const std::string& a, const std::string& b);
  const std::string& matmul(std::string id, const std::string& a, const std::string& b) {
    return binary(op_kind::matmul, std::move(id), a, b);
  }
  const std::string& scale(std::string id, const std::string& x, double factor);
  const std::string& transpose(std::string id, const std::string& x, std::vector<std::int64_t> perm);
  const std::string& concat(std::string id, const std::vector<std::string>& xs, std::int64_t axis);
  const std::string& slice(std::string id, const std::string& x, std::int64_t axis,
                           std::int64_t start, std::int64_t end);
  const std::string& reduce_sum(std::string id, const std::vector<std::string>& xs);

  /// Shape of an op already added (inferred or declared); empty if unknown.
  const shape_t& shape_of(const std::string& id) const;
  std::size_t size() const noexcept { return specs_.size(); }
  /// Sets the graph's name / element type.
  graph_builder& name(std::string n) { name_ = std::move(n); return *this; }
  graph_builder& element_type(dtype t) { dtype_ = t; return *this; }
  /// Reserves room for n ops (loaders of big files).
  void reserve(std::size_t n) { specs_.reserve(n); }

  /// Validates everything and returns the graph. Checks, in this order: ids (non-empty, unique),
  /// inputs (exist), kinds' arity, attributes and shapes (in file order), costs (finite, ≥ 0;
  /// synthetic ops need `flops` and `bytes` unless they have a shape), then acyclicity.
  graph build() &&;

 private:
  std::string name_;
  dtype dtype_;
  std::vector<op_spec> specs_;
  std::unordered_map<std::string, std::size_t> known_;  // id -> spec index (for inference)
};

}  // namespace doppler
