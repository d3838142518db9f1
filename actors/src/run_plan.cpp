// Precomputed tables of a run plan, and the backend registry.

#include <doppler/actors/backend.hpp>
#include <doppler/actors/run_plan.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

namespace doppler::actors {

std::uint32_t run_plan::consumers_on(op_index i, device_index d) const noexcept {
  std::uint32_t n = 0;
  for (op_index s : g->succs(i)) n += p.device[s] == d ? 1u : 0u;
  return n;
}

namespace {

std::uint32_t slot_in(const run_plan& plan, const slot_tables& t, op_index i, device_index d) {
  if (plan.p.device[i] == d) return t.home_slot[i];
  for (std::uint32_t e = plan.remote_off[i]; e < plan.remote_off[i + 1]; ++e)
    if (plan.remote_dest[e] == d) return t.remote_slot[e];
  return UINT32_MAX;  // not held there (an invalid plan)
}

/// The compact buffer slots of every device (run_plan::slots); needs rank, uses_home, remote_off /
/// remote_dest and in_op.
std::shared_ptr<const slot_tables> make_slot_tables(const run_plan& plan) {
  const graph& g = *plan.g;
  const std::size_t n = g.size();
  const std::size_t nd = plan.devices.size();
  const auto& dev = plan.p.device;
  auto t = std::make_shared<slot_tables>();
  std::vector<std::uint32_t> home(nd, 0), total(nd, 0);
  for (op_index i = 0; i < n; ++i) ++home[dev[i]];
  total = home;
  for (device_index d : plan.remote_dest) ++total[d];
  t->base.assign(nd + 1, 0);
  t->hbase.assign(nd + 1, 0);
  for (std::size_t d = 0; d < nd; ++d) {
    t->base[d + 1] = t->base[d] + total[d];
    t->hbase[d + 1] = t->hbase[d] + home[d];
  }
  t->slot_op.assign(t->base[nd], 0);
  t->slot_exit.assign(t->base[nd], 0);
  t->pending0.assign(n, 0);
  t->home_slot.assign(n, 0);
  t->home.resize(n);
  t->remote_slot.assign(plan.remote_dest.size(), 0);
  t->remote_uses.assign(plan.remote_dest.size(), 0);
  // Slots: home ops first (op order), then received outputs (op order).
  std::vector<std::uint32_t> next_home(nd, 0), next_recv(home);
  for (op_index i = 0; i < n; ++i) {
    device_index d = dev[i];
    std::uint32_t s = next_home[d]++;
    t->home_slot[i] = s;
    t->slot_op[t->base[d] + s] = i;
    t->slot_exit[t->base[d] + s] = g.succs(i).empty() ? 1 : 0;
    t->pending0[t->hbase[d] + s] = static_cast<std::uint32_t>(g.preds(i).size());
    for (std::uint32_t e = plan.remote_off[i]; e < plan.remote_off[i + 1]; ++e) {
      device_index r = plan.remote_dest[e];
      std::uint32_t rs = next_recv[r]++;
      t->remote_slot[e] = rs;
      t->slot_op[t->base[r] + rs] = i;
      t->slot_exit[t->base[r] + rs] = g.succs(i).empty() ? 1 : 0;
    }
  }
  // Records and their flat arrays, device by device in home-slot order.
  for (std::size_t d = 0; d < nd; ++d)
    for (std::uint32_t s = 0; s < home[d]; ++s) {
      op_index i = t->slot_op[t->base[d] + s];
      auto& r = t->home[t->hbase[d] + s];
      r.op = i;
      r.rank = plan.rank[i];
      r.uses = plan.uses_home[i];
      r.in_begin = static_cast<std::uint32_t>(t->in_slot.size());
      for (std::uint32_t k = plan.in_off[i]; k < plan.in_off[i + 1]; ++k)
        t->in_slot.push_back(slot_in(plan, *t, plan.in_op[k], dev[i]));
      r.pred_begin = static_cast<std::uint32_t>(t->pred_slot.size());
      for (op_index p : g.preds(i)) t->pred_slot.push_back(slot_in(plan, *t, p, dev[i]));
      r.succ_begin = static_cast<std::uint32_t>(t->home_succ.size());
      for (op_index x : g.succs(i))
        if (dev[x] == dev[i]) t->home_succ.push_back(t->home_slot[x]);
      r.remote_begin = plan.remote_off[i];
      r.n_in = static_cast<std::uint32_t>(plan.in_off[i + 1] - plan.in_off[i]);
      r.n_pred = static_cast<std::uint32_t>(t->pred_slot.size() - r.pred_begin);
      r.n_succ = static_cast<std::uint32_t>(t->home_succ.size() - r.succ_begin);
      r.n_remote = static_cast<std::uint32_t>(plan.remote_off[i + 1] - plan.remote_off[i]);
    }
  t->rs_off.assign(plan.remote_dest.size() + 1, 0);
  for (op_index i = 0; i < n; ++i)
    for (std::uint32_t e = plan.remote_off[i]; e < plan.remote_off[i + 1]; ++e) {
      for (op_index x : g.succs(i))
        if (dev[x] == plan.remote_dest[e]) t->remote_succ.push_back(t->home_slot[x]);
      t->remote_uses[e] = static_cast<std::uint32_t>(t->remote_succ.size() - t->rs_off[e]);
      t->rs_off[e + 1] = static_cast<std::uint32_t>(t->remote_succ.size());
    }
  return t;
}

}  // namespace

void finish_plan(run_plan& plan, const run_plan* previous) {
  if (!plan.g || !plan.c) throw error(errc::bad_argument, "run plan without graph or cluster");
  if (previous && previous != &plan && previous->g == plan.g && previous->c == plan.c &&
      plan.devices.size() == plan.c->device_count() &&
      previous->rank.size() == plan.g->size() && previous->p.device == plan.p.device &&
      previous->p.order == plan.p.order) {  // checked and tabulated already
    plan.rank = previous->rank;
    plan.remote_off = previous->remote_off;
    plan.remote_dest = previous->remote_dest;
    plan.in_off = previous->in_off;
    plan.in_op = previous->in_op;
    plan.uses_home = previous->uses_home;
    plan.op_bytes = previous->op_bytes;
    plan.slots = previous->slots;
    return;
  }
  check_placement(plan.p, *plan.g, *plan.c);
  if (plan.devices.size() != plan.c->device_count())
    throw error(errc::bad_argument, "run plan: " + std::to_string(plan.devices.size()) +
                                        " device actors for " + std::to_string(plan.c->device_count()) +
                                        " devices");
  const graph& g = *plan.g;
  std::size_t n = g.size();
  plan.rank.assign(n, 0);
  std::span<const op_index> order = plan.p.order.empty() ? g.topo_order() : std::span<const op_index>(plan.p.order);
  for (std::uint32_t k = 0; k < order.size(); ++k) plan.rank[order[k]] = k;
  plan.remote_off.assign(n + 1, 0);
  plan.remote_dest.clear();
  plan.in_off.assign(n + 1, 0);
  plan.in_op.clear();
  plan.uses_home.assign(n, 0);
  plan.op_bytes.resize(n);
  std::vector<device_index> seen;
  for (op_index i = 0; i < n; ++i) {
    seen.clear();
    std::uint32_t home = 0;
    for (op_index s : g.succs(i)) {
      device_index d = plan.p.device[s];
      if (d == plan.p.device[i]) ++home;
      else if (std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
    }
    std::sort(seen.begin(), seen.end());
    plan.remote_dest.insert(plan.remote_dest.end(), seen.begin(), seen.end());
    plan.remote_off[i + 1] = static_cast<std::uint32_t>(plan.remote_dest.size());
    plan.uses_home[i] = home + static_cast<std::uint32_t>(seen.size());
    plan.op_bytes[i] = g[i].bytes;
    const auto& in = g[i].inputs;
    plan.in_op.insert(plan.in_op.end(), in.begin(), in.end());
    plan.in_off[i + 1] = static_cast<std::uint32_t>(plan.in_op.size());
  }
  plan.slots = make_slot_tables(plan);
}

plan_text to_text(const run_plan& plan) {
  plan_text t;
  t.engine = plan.engine;
  t.run = plan.run;
  t.graph_json = to_json_text(*plan.g);
  t.cluster_json = to_json_text(*plan.c);
  t.device = plan.p.device;
  t.order = plan.p.order;
  for (const auto& d : plan.devices) t.devices.push_back(caf::actor_cast<caf::actor>(d));
  t.mode = static_cast<std::uint8_t>(plan.mode);
  t.keep = static_cast<std::uint8_t>(plan.keep);
  t.seed = plan.seed;
  t.record_trace = plan.record_trace;
  t.timeout_ms = plan.timeout.count();
  t.device_release = plan.device_release;
  return t;
}

std::shared_ptr<run_plan> from_text(const plan_text& t) {
  auto plan = std::make_shared<run_plan>();
  plan->engine = t.engine;
  plan->run = t.run;
  plan->g = std::make_shared<const graph>(parse_graph(t.graph_json, "<plan graph>"));
  plan->c = std::make_shared<const cluster>(parse_cluster(t.cluster_json, "<plan cluster>"));
  plan->p.device = t.device;
  plan->p.order = t.order;
  for (const auto& d : t.devices) plan->devices.push_back(caf::actor_cast<device_actor>(d));
  plan->mode = t.mode == 1 ? exec_mode::bsp : exec_mode::wc;
  plan->keep = t.keep == 1 ? keep_outputs::all : keep_outputs::exits;
  plan->seed = t.seed;
  plan->record_trace = t.record_trace;
  plan->timeout = std::chrono::milliseconds(t.timeout_ms);
  plan->device_release = t.device_release;
  finish_plan(*plan);
  return plan;
}

tensor_ref backend::execute_held(device_index d, const graph& g, op_index i, std::span<const tensor_ref* const> inputs,
                                 std::uint64_t seed) {
  std::vector<std::shared_ptr<const tensor>> staged;  // host copies of device-memory inputs
  std::vector<const tensor*> ptrs;
  ptrs.reserve(inputs.size());
  for (const tensor_ref* in : inputs) {
    if (!in || in->ptr || !in->mem) {
      ptrs.push_back(in ? in->ptr.get() : nullptr);
      continue;
    }
    staged.push_back(in->host());
    ptrs.push_back(staged.back().get());
  }
  tensor out = execute_on(d, g, i, ptrs, seed);
  return tensor_ref{std::make_shared<const tensor>(std::move(out)), nullptr};
}

tensor_ref backend::copy_held(device_index, device_index, const tensor_ref& v) {
  auto host = v.host();
  return tensor_ref{host ? std::make_shared<const tensor>(*host) : nullptr, nullptr};
}

tensor_ref backend::allocate_held(device_index, const shape_t&) {
  throw error(errc::internal, "backend '" + std::string(name()) +
                                  "' does not implement allocate_held (needed for planned transfers on a resident backend)");
}

void backend::copy_range_held(device_index, device_index, const tensor_ref&, const tensor_ref&, std::size_t, std::size_t) {
  throw error(errc::internal, "backend '" + std::string(name()) +
                                  "' does not implement copy_range_held (needed for planned transfers on a resident backend)");
}

namespace {

class cpu_backend final : public backend {
 public:
  std::string_view name() const noexcept override { return "cpu"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs,
                 std::uint64_t seed) override {
    return execute_op(g, i, inputs, seed);
  }
};

class null_backend final : public backend {
 public:
  std::string_view name() const noexcept override { return "null"; }
  tensor execute(const graph&, op_index, std::span<const tensor* const>, std::uint64_t) override {
    return tensor{};
  }
  bool runs_inline() const noexcept override { return true; }
};

/// Holds every kernel for its modeled time on the device (sleeping, so emulated devices run in
/// parallel whatever the host's cores) and returns an empty tensor.
class emulated_backend final : public backend {
 public:
  emulated_backend(std::shared_ptr<const cluster> c, cost_model costs) : c_(std::move(c)), costs_(std::move(costs)) {}
  std::string_view name() const noexcept override { return "emulate"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed) override {
    return execute_on(0, g, i, inputs, seed);
  }
  tensor execute_on(device_index d, const graph& g, op_index i, std::span<const tensor* const>,
                    std::uint64_t) override {
    if (d >= c_->device_count())  // an anonymous worker device standing for a device of a larger cluster
      throw error(errc::bad_argument, "emulate: device index " + std::to_string(d) + " is not in cluster '" +
                                          c_->name() + "' (serve emulated devices by id of the run's cluster)");
    hold(d, costs_.op_time(g[i], (*c_)[d]));
    return tensor{};
  }
  void interrupt(device_index d) noexcept override {
    {
      std::lock_guard lock(hold_mutex_);
      if (d >= hold_gen_.size()) return;
      ++hold_gen_[d];
    }
    held_.notify_all();
  }
  double copy_seconds(device_index src, device_index dst, double bytes) override {
    if (src == dst || src >= c_->device_count() || dst >= c_->device_count()) return 0.0;
    const route& rt = c_->route_between(src, dst);
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    std::lock_guard lock(links_mutex_);
    if (link_free_.empty()) link_free_.assign(c_->links().size(), 0.0);
    double start = now;
    for (link_index l : rt.links) start = std::max(start, link_free_[l]);
    const double end = start + costs_.transfer_time(*c_, src, dst, bytes);
    for (link_index l : rt.links) link_free_[l] = end;
    return end - now;
  }

 private:
  std::mutex links_mutex_;
  std::vector<double> link_free_;  // steady-clock seconds each directed link is reserved until
  // Holds end at their modeled time or when interrupt(d) bumps their device's generation.
  std::mutex hold_mutex_;
  std::condition_variable held_;
  std::vector<std::uint64_t> hold_gen_;  // per device index
  void hold(device_index d, double seconds) {
    if (!(seconds > 0)) return;
    constexpr double longest = 1e9;  // s: beyond it a deadline would overflow the clock
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                std::chrono::duration<double>(std::min(seconds, longest)));
    std::unique_lock lock(hold_mutex_);
    if (hold_gen_.size() < c_->device_count()) hold_gen_.resize(c_->device_count(), 0);
    const std::uint64_t gen = hold_gen_[d];
    held_.wait_until(lock, until, [&] { return hold_gen_[d] != gen; });
  }
  std::shared_ptr<const cluster> c_;
  cost_model costs_;
};

/// make_straggler_backend: `inner`, with the listed devices slower by their factor.
class straggler_backend final : public backend {
 public:
  straggler_backend(std::shared_ptr<backend> inner, std::vector<std::pair<device_index, double>> slowdowns)
      : inner_(std::move(inner)) {
    if (!inner_) throw error(errc::bad_argument, "straggler backend: no inner backend");
    for (auto [d, f] : slowdowns) {
      if (d >= factor_.size()) factor_.resize(d + 1, 1.0);
      factor_[d] *= f;
      if (!(f >= 1.0) || !(factor_[d] <= 1e6)) {  // beyond, the slowed wait's nanoseconds overflow
        std::ostringstream m;  // %g-like: 1001, not 1001.000000
        m << "straggler backend: device " << d << "'s slowdown must be a number in [1, 1e6] (got " << f
          << "; its factors multiply to " << factor_[d] << ")";
        throw error(errc::bad_argument, m.str());
      }
    }
  }
  std::string_view name() const noexcept override { return inner_->name(); }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed) override {
    return execute_on(0, g, i, inputs, seed);
  }
  tensor execute_on(device_index d, const graph& g, op_index i, std::span<const tensor* const> inputs,
                    std::uint64_t seed) override {
    return slowed(d, [&] { return inner_->execute_on(d, g, i, inputs, seed); });
  }
  bool resident() const noexcept override { return inner_->resident(); }
  tensor_ref execute_held(device_index d, const graph& g, op_index i, std::span<const tensor_ref* const> inputs,
                          std::uint64_t seed) override {
    return slowed(d, [&] { return inner_->execute_held(d, g, i, inputs, seed); });
  }
  tensor_ref copy_held(device_index src, device_index dst, const tensor_ref& v) override {
    return inner_->copy_held(src, dst, v);
  }
  tensor_ref allocate_held(device_index d, const shape_t& shape) override { return inner_->allocate_held(d, shape); }
  void copy_range_held(device_index src, device_index dst, const tensor_ref& from, const tensor_ref& into,
                       std::size_t first, std::size_t last) override {
    inner_->copy_range_held(src, dst, from, into, first, last);
  }
  double copy_seconds(device_index src, device_index dst, double bytes) override {
    return inner_->copy_seconds(src, dst, bytes);
  }
  bool runs_inline() const noexcept override { return inner_->runs_inline(); }
  void interrupt(device_index d) noexcept override { inner_->interrupt(d); }

 private:
  /// Runs `op` (one kernel on device d) and then sleeps (factor − 1) × its wall time, so that it
  /// occupies its device factor × as long.
  template <class Op>
  std::invoke_result_t<Op> slowed(device_index d, Op&& op) {
    const double f = d < factor_.size() ? factor_[d] : 1.0;
    if (f == 1.0) return op();
    const auto t0 = std::chrono::steady_clock::now();
    auto out = op();
    const auto took = std::chrono::steady_clock::now() - t0;
    std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::nanoseconds>(took * (f - 1.0)));
    return out;
  }
  std::shared_ptr<backend> inner_;
  std::vector<double> factor_;  // per device index: 1 = not slowed
};

}  // namespace

std::shared_ptr<backend> make_straggler_backend(std::shared_ptr<backend> inner,
                                                std::vector<std::pair<device_index, double>> slowdowns) {
  return std::make_shared<straggler_backend>(std::move(inner), std::move(slowdowns));
}

std::vector<std::string> backend_names() { return {"cpu", "null", "emulate"}; }

std::shared_ptr<backend> make_backend(std::string_view name) {
  if (name == "cpu") return std::make_shared<cpu_backend>();
  if (name == "null") return std::make_shared<null_backend>();
  throw error(errc::unknown_kind, "unknown backend \"" + std::string(name) + "\" (backends: cpu, null, emulate)");
}

std::shared_ptr<backend> make_backend(std::string_view name, std::shared_ptr<const cluster> c, const cost_model& costs) {
  if (name == "emulate") return std::make_shared<emulated_backend>(std::move(c), costs);
  return make_backend(name);
}

}  // namespace doppler::actors
