#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph.hpp>

#include <algorithm>
#include <cmath>
#include <queue>

namespace doppler {

namespace {
std::string op_path(std::size_t i) { return "ops[" + std::to_string(i) + "]"; }
const shape_t empty_shape;
}  // namespace

graph::graph(const graph& other)
    : name_(other.name_), dtype_(other.dtype_), ops_(other.ops_), pred_off_(other.pred_off_),
      succ_off_(other.succ_off_), pred_(other.pred_), succ_(other.succ_), topo_(other.topo_),
      total_flops_(other.total_flops_), total_bytes_(other.total_bytes_) {
  reindex();
}

graph& graph::operator=(const graph& other) {
  if (this != &other) {
    graph copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void graph::reindex() {
  index_.clear();
  index_.reserve(ops_.size());
  for (std::size_t i = 0; i < ops_.size(); ++i) index_.emplace(ops_[i].id, static_cast<op_index>(i));
}

std::optional<op_index> graph::find(std::string_view id) const {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
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
std::pair<op_index, std::string> describe_cycle(const std::vector<std::uint32_t>& indeg,
                                                const std::vector<op>& ops,
                                                const std::vector<std::vector<op_index>>& preds) {
  op_index start = 0;
  while (indeg[start] == 0) ++start;
  // Walk predecessors that are still blocked until an op repeats: that op lies on a cycle.
  std::vector<int> seen_at(ops.size(), -1);
  std::vector<op_index> walk;
  op_index v = start;
  while (seen_at[v] < 0) {
    seen_at[v] = static_cast<int>(walk.size());
    walk.push_back(v);
    for (op_index p : preds[v])
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

  // 1. ids
  g.ops_.resize(n);
  g.index_.reserve(n);
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
    if (!g.index_.emplace(o.id, static_cast<op_index>(i)).second)
      throw error(errc::duplicate_id, "", op_path(i) + ".id",
                  "'" + o.id + "' is already the id of ops[" + std::to_string(g.index_[o.id]) + "]");
  }

  // 2. inputs resolve
  std::vector<std::vector<op_index>> preds(n);
  std::size_t edges = 0;
  for (std::size_t i = 0; i < n; ++i) {
    op& o = g.ops_[i];
    auto& ins = specs_[i].inputs;
    o.inputs.reserve(ins.size());
    for (std::size_t j = 0; j < ins.size(); ++j) {
      auto it = g.index_.find(ins[j]);
      if (it == g.index_.end())
        throw error(errc::unknown_id, "", op_path(i) + ".inputs[" + std::to_string(j) + "]",
                    "op '" + o.id + "' names input '" + ins[j] + "', which is not an op of this graph");
      if (it->second == i)
        throw error(errc::cycle, "", op_path(i) + ".inputs[" + std::to_string(j) + "]",
                    "op '" + o.id + "' is on a cycle: it names itself as an input");
      o.inputs.push_back(it->second);
      auto& p = preds[i];
      if (std::find(p.begin(), p.end(), it->second) == p.end()) p.push_back(it->second);
    }
    edges += preds[i].size();
  }
  specs_.clear();

  // 3. shapes, attributes and costs, in file order
  std::vector<const shape_t*> in_shapes;
  const double elem = static_cast<double>(size_of(dtype_));
  for (std::size_t i = 0; i < n; ++i) {
    op& o = g.ops_[i];
    const std::string path = op_path(i);
    in_shapes.clear();
    for (op_index p : o.inputs) in_shapes.push_back(&g.ops_[p].shape);
    for (std::size_t d = 0; d < o.shape.size(); ++d)
      if (o.shape[d] <= 0)
        throw error(errc::bad_value, "", path + ".shape[" + std::to_string(d) + "]",
                    "op '" + o.id + "': extents must be positive, got " + std::to_string(o.shape[d]));
    if (o.kind == op_kind::input) {
      if (o.shape.empty())
        throw error(errc::missing_field, "", path + ".shape", "input op '" + o.id + "' needs a shape");
      if (!o.inputs.empty())
        throw error(errc::shape_mismatch, "", path + ".inputs", "input op '" + o.id + "' cannot have inputs");
    } else if (o.kind == op_kind::synthetic) {
      if (o.shape.empty() && (!o.flops_override || !o.bytes_override))
        throw error(errc::missing_field, "", path + (o.flops_override ? ".bytes" : ".flops"),
                    "synthetic op '" + o.id + "' needs `flops` and `bytes`");
      if (!o.flops_override)
        throw error(errc::missing_field, "", path + ".flops", "synthetic op '" + o.id + "' needs `flops`");
    } else {
      if (o.shape.empty())
        throw error(errc::missing_field, "", path + ".shape", "op '" + o.id + "' needs its output `shape`");
      auto check = infer_shape(o.kind, in_shapes, o.attrs);
      if (!check.ok())
        throw error(errc::shape_mismatch, "", path, "op '" + o.id + "' (" + std::string(to_string(o.kind)) +
                    "): " + check.problem);
      if (check.shape != o.shape)
        throw error(errc::shape_mismatch, "", path + ".shape",
                    "op '" + o.id + "' declares " + to_string(o.shape) + " but its inputs give " +
                        to_string(check.shape));
    }
    for (auto* ov : {&o.flops_override, &o.bytes_override})
      if (*ov && (!std::isfinite(**ov) || **ov < 0))
        throw error(errc::bad_value, "", path + (ov == &o.flops_override ? ".flops" : ".bytes"),
                    "op '" + o.id + "': must be finite and >= 0");
    o.flops = o.flops_override ? *o.flops_override : derived_flops(o.kind, in_shapes, o.shape, o.attrs);
    o.bytes = o.bytes_override ? *o.bytes_override : numel(o.shape) * elem;
    g.total_flops_ += o.flops;
    g.total_bytes_ += o.bytes;
  }

  // 4. adjacency (CSR) and topological order; a leftover means a cycle
  g.pred_off_.assign(n + 1, 0);
  g.succ_off_.assign(n + 1, 0);
  g.pred_.reserve(edges);
  std::vector<std::uint32_t> indeg(n);
  for (std::size_t i = 0; i < n; ++i) {
    g.pred_off_[i] = static_cast<std::uint32_t>(g.pred_.size());
    g.pred_.insert(g.pred_.end(), preds[i].begin(), preds[i].end());
    indeg[i] = static_cast<std::uint32_t>(preds[i].size());
    for (op_index p : preds[i]) ++g.succ_off_[p + 1];
  }
  g.pred_off_[n] = static_cast<std::uint32_t>(g.pred_.size());
  for (std::size_t i = 0; i < n; ++i) g.succ_off_[i + 1] += g.succ_off_[i];
  g.succ_.resize(edges);
  {
    std::vector<std::uint32_t> fill(g.succ_off_.begin(), g.succ_off_.end() - 1);
    for (std::size_t i = 0; i < n; ++i)
      for (op_index p : preds[i]) g.succ_[fill[p]++] = static_cast<op_index>(i);
  }
  g.topo_.reserve(n);
  std::priority_queue<op_index, std::vector<op_index>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(static_cast<op_index>(i));
  while (!ready.empty()) {
    op_index v = ready.top();
    ready.pop();
    g.topo_.push_back(v);
    for (op_index s : g.succs(v))
      if (--indeg[s] == 0) ready.push(s);
  }
  if (g.topo_.size() != n) {
    auto [v, what] = describe_cycle(indeg, g.ops_, preds);
    throw error(errc::cycle, "", op_path(v), what);
  }
  return g;
}

}  // namespace doppler
