#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph.hpp>

#include <algorithm>
#include <cmath>

namespace doppler {

namespace {
std::string op_path(std::size_t i) { return "ops[" + std::to_string(i) + "]"; }
const shape_t empty_shape;
}  // namespace

std::optional<op_index> graph::find(std::string_view id) const {
  return index_.find(id, [this](std::uint32_t i) -> std::string_view { return ops_[i].id; });
}

// ---- builder --------------------------------------------------------------------------------------

graph_builder::graph_builder(std::string name, dtype t) : name_(std::move(name)), dtype_(t) {}

const std::string& graph_builder::add(op_spec spec) {
  auto i = specs_.size();
  if (spec.shape.empty() && spec.kind != op_kind::synthetic) {
    std::vector<const shape_t*> ins;
    ins.reserve(spec.inputs.size());
    bool all_known = true;
    for (auto& in : spec.inputs) {
      auto it = known_.find(in);
      if (it == known_.end()) { all_known = false; break; }
      ins.push_back(&specs_[it->second].shape);
    }
    if (all_known) {
      auto check = infer_shape(spec.kind, ins, spec.attrs);
      if (!check.ok())
        throw error(errc::shape_mismatch, "", op_path(i), "op '" + spec.id + "' (" +
                    std::string(to_string(spec.kind)) + "): " + check.problem);
      spec.shape = std::move(check.shape);
    }
  }
  if (!known_.emplace(spec.id, i).second)
    throw error(errc::duplicate_id, "", op_path(i) + ".id", "'" + spec.id + "' is already used");
  specs_.push_back(std::move(spec));
  return specs_.back().id;
}

const std::string& graph_builder::input(std::string id, shape_t shape) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::input;
  s.shape = std::move(shape);
  return add(std::move(s));
}

const std::string& graph_builder::unary(op_kind kind, std::string id, const std::string& x) {
  op_spec s;
  s.id = std::move(id);
  s.kind = kind;
  s.inputs = {x};
  return add(std::move(s));
}

const std::string& graph_builder::binary(op_kind kind, std::string id, const std::string& a,
                                         const std::string& b) {
  op_spec s;
  s.id = std::move(id);
  s.kind = kind;
  s.inputs = {a, b};
  return add(std::move(s));
}

const std::string& graph_builder::scale(std::string id, const std::string& x, double factor) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::scale;
  s.inputs = {x};
  s.attrs.factor = factor;
  return add(std::move(s));
}

const std::string& graph_builder::transpose(std::string id, const std::string& x,
                                            std::vector<std::int64_t> perm) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::transpose;
  s.inputs = {x};
  s.attrs.perm = std::move(perm);
  return add(std::move(s));
}

const std::string& graph_builder::concat(std::string id, const std::vector<std::string>& xs,
                                         std::int64_t axis) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::concat;
  s.inputs = xs;
  s.attrs.axis = axis;
  return add(std::move(s));
}

const std::string& graph_builder::slice(std::string id, const std::string& x, std::int64_t axis,
                                        std::int64_t start, std::int64_t end) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::slice;
  s.inputs = {x};
  s.attrs.axis = axis;
  s.attrs.start = start;
  s.attrs.end = end;
  return add(std::move(s));
}

const std::string& graph_builder::reduce_sum(std::string id, const std::vector<std::string>& xs) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::reduce_sum;
  s.inputs = xs;
  return add(std::move(s));
}

const shape_t& graph_builder::shape_of(const std::string& id) const {
  auto it = known_.find(id);
  return it == known_.end() ? empty_shape : specs_[it->second].shape;
}

// ---- build: validation and derived structure ---------------------------------------------------------

namespace {

/// Finds one cycle among the ops Kahn's algorithm could not order; returns an op on it and a
/// description of the cycle.
std::pair<op_index, std::string> describe_cycle(const std::vector<std::uint32_t>& indeg, const graph& g) {
  auto ops = g.ops();
  op_index start = 0;
  while (indeg[start] == 0) ++start;
  // Walk predecessors that are still blocked until an op repeats: that op lies on a cycle.
  std::vector<int> seen_at(ops.size(), -1);
  std::vector<op_index> walk;
  op_index v = start;
  while (seen_at[v] < 0) {
    seen_at[v] = static_cast<int>(walk.size());
    walk.push_back(v);
    for (op_index p : g.preds(v))
      if (indeg[p] > 0) { v = p; break; }
  }
  std::string cyc;
  // walk[seen_at[v]..] are consumers of their successors in the walk; print producer -> consumer.
  for (auto i = walk.size(); i-- > static_cast<std::size_t>(seen_at[v]);) cyc += "'" + ops[walk[i]].id + "' -> ";
  cyc += "'" + ops[walk.back()].id + "'";
  return {v, "op '" + ops[v].id + "' is on a cycle: " + cyc};
}

}  // namespace

graph graph_builder::build() && {
  graph g;
  g.name_ = std::move(name_);
  g.dtype_ = dtype_;
  const std::size_t n = specs_.size();
  known_.clear();

  // 1+2. ids, then inputs. Each op's inputs are resolved right after its id is indexed: most name
  // recent ops, whose index slots are still in cache. Inputs that name later ops wait for a second pass.
  g.ops_.resize(n);
  g.index_.reset(n);
  auto id_of = [&g](std::uint32_t i) -> std::string_view { return g.ops_[i].id; };
  constexpr op_index unresolved = UINT32_MAX;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> forward;  // (op, input position)
  for (std::size_t i = 0; i < n; ++i) {
    op& o = g.ops_[i];
    op_spec& s = specs_[i];
    if (s.id.empty()) throw error(errc::bad_value, "", op_path(i) + ".id", "must be a non-empty string");
    o.id = std::move(s.id);
    o.name = std::move(s.name);
    o.kind = s.kind;
    o.shape = std::move(s.shape);
    o.attrs = std::move(s.attrs);
    o.flops_override = s.flops;
    o.bytes_override = s.bytes;
    if (auto prev = g.index_.insert(o.id, static_cast<op_index>(i), id_of))
      throw error(errc::duplicate_id, "", op_path(i) + ".id",
                  "'" + o.id + "' is already the id of ops[" + std::to_string(*prev) + "]");
    o.inputs.resize(s.inputs.size());
    for (std::size_t j = 0; j < s.inputs.size(); ++j) {
      auto found = g.index_.find(s.inputs[j], id_of);
      o.inputs[j] = found ? *found : unresolved;
      if (!found) forward.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
    }
  }
  for (auto [i, j] : forward) {
    const std::string& name = specs_[i].inputs[j];
    auto found = g.index_.find(name, id_of);
    if (!found)
      throw error(errc::unknown_id, "", op_path(i) + ".inputs[" + std::to_string(j) + "]",
                  "op '" + g.ops_[i].id + "' names input '" + name + "', which is not an op of this graph");
    g.ops_[i].inputs[j] = *found;
  }
  specs_.clear();

  // Distinct producers go into the CSR predecessor arrays.
  g.pred_off_.assign(n + 1, 0);
  g.pred_.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    g.pred_off_[i] = static_cast<std::uint32_t>(g.pred_.size());
    const auto& ins = g.ops_[i].inputs;
    for (std::size_t j = 0; j < ins.size(); ++j) {
      if (ins[j] == i)
        throw error(errc::cycle, "", op_path(i) + ".inputs[" + std::to_string(j) + "]",
                    "op '" + g.ops_[i].id + "' is on a cycle: it names itself as an input");
      auto first = g.pred_.begin() + g.pred_off_[i];
      if (std::find(first, g.pred_.end(), ins[j]) == g.pred_.end()) g.pred_.push_back(ins[j]);
    }
  }
  g.pred_off_[n] = static_cast<std::uint32_t>(g.pred_.size());
  const std::size_t edges = g.pred_.size();

  // 3. shapes, attributes and costs, in file order
  std::vector<const shape_t*> in_shapes;
  const double elem = static_cast<double>(size_of(dtype_));
  for (std::size_t i = 0; i < n; ++i) {
    op& o = g.ops_[i];
    auto path = [i] { return op_path(i); };
    in_shapes.clear();
    for (op_index p : o.inputs) in_shapes.push_back(&g.ops_[p].shape);
    for (std::size_t d = 0; d < o.shape.size(); ++d)
      if (o.shape[d] <= 0)
        throw error(errc::bad_value, "", path() + ".shape[" + std::to_string(d) + "]",
                    "op '" + o.id + "': extents must be positive, got " + std::to_string(o.shape[d]));
    if (o.kind == op_kind::input) {
      if (o.shape.empty())
        throw error(errc::missing_field, "", path() + ".shape", "input op '" + o.id + "' needs a shape");
      if (!o.inputs.empty())
        throw error(errc::shape_mismatch, "", path() + ".inputs", "input op '" + o.id + "' cannot have inputs");
    } else if (o.kind == op_kind::synthetic) {
      // FORMATS.md: an opaque op "must give flops and bytes", with or without a shape.
      if (!o.flops_override || !o.bytes_override)
        throw error(errc::missing_field, "", path() + (o.flops_override ? ".bytes" : ".flops"),
                    "synthetic op '" + o.id + "' needs `flops` and `bytes`");
    } else {
      if (o.shape.empty())
        throw error(errc::missing_field, "", path() + ".shape", "op '" + o.id + "' needs its output `shape`");
      auto check = infer_shape(o.kind, in_shapes, o.attrs);
      if (!check.ok())
        throw error(errc::shape_mismatch, "", path(), "op '" + o.id + "' (" + std::string(to_string(o.kind)) +
                    "): " + check.problem);
      if (check.shape != o.shape)
        throw error(errc::shape_mismatch, "", path() + ".shape",
                    "op '" + o.id + "' declares " + to_string(o.shape) + " but its inputs give " +
                        to_string(check.shape));
    }
    for (auto* ov : {&o.flops_override, &o.bytes_override})
      if (*ov && (!std::isfinite(**ov) || **ov < 0))
        throw error(errc::bad_value, "", path() + (ov == &o.flops_override ? ".flops" : ".bytes"),
                    "op '" + o.id + "': must be finite and >= 0");
    o.flops = o.flops_override ? *o.flops_override : derived_flops(o.kind, in_shapes, o.shape, o.attrs);
    o.bytes = o.bytes_override ? *o.bytes_override : numel(o.shape) * elem;
    g.total_flops_ += o.flops;
    g.total_bytes_ += o.bytes;
    if (!std::isfinite(g.total_flops_) || !std::isfinite(g.total_bytes_))  // every sum over the graph would too
      throw error(errc::bad_value, "", path() + (std::isfinite(g.total_flops_) ? ".bytes" : ".flops"),
                  "op '" + o.id + "' takes the graph's total FLOPs or bytes past the largest double");
  }

  // 4. successors (CSR) and topological order; a leftover means a cycle
  g.succ_off_.assign(n + 1, 0);
  std::vector<std::uint32_t> indeg(n);
  for (std::size_t i = 0; i < n; ++i) {
    indeg[i] = g.pred_off_[i + 1] - g.pred_off_[i];
    for (op_index p : g.preds(static_cast<op_index>(i))) ++g.succ_off_[p + 1];
  }
  for (std::size_t i = 0; i < n; ++i) g.succ_off_[i + 1] += g.succ_off_[i];
  g.succ_.resize(edges);
  {
    std::vector<std::uint32_t> fill(g.succ_off_.begin(), g.succ_off_.end() - 1);
    for (std::size_t i = 0; i < n; ++i)
      for (op_index p : g.preds(static_cast<op_index>(i))) g.succ_[fill[p]++] = static_cast<op_index>(i);
  }
  g.topo_.reserve(n);
  // FIFO Kahn: topo_ itself is the queue.
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) g.topo_.push_back(static_cast<op_index>(i));
  for (std::size_t head = 0; head < g.topo_.size(); ++head)
    for (op_index s : g.succs(g.topo_[head]))
      if (--indeg[s] == 0) g.topo_.push_back(s);
  if (g.topo_.size() != n) {
    auto [v, what] = describe_cycle(indeg, g);
    throw error(errc::cycle, "", op_path(v), what);
  }
  return g;
}

}  // namespace doppler
