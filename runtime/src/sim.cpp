// The simulator's front door: option checks, per-op durations, model dispatch, the lower bound.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/sim.hpp>

#include "sim_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace doppler {

namespace {

void check_options(const sim_options& opt, const cluster& c) {
  if (opt.streams < 1 || opt.streams > max_streams)
    throw error(errc::bad_argument, "streams must be in [1, " + std::to_string(max_streams) + "], got " +
                                        std::to_string(opt.streams));
  if (!(opt.jitter >= 0 && opt.jitter <= max_jitter))
    throw error(errc::bad_argument, fmt::format("jitter must be a sigma in [0, {}], got {}", max_jitter, opt.jitter));
  if (opt.transfers && opt.model == sim_model::simple)
    throw error(errc::bad_argument, "planned transfers need the wc model (the simple model has no links)");
  for (const auto& [d, f] : opt.stragglers) {
    if (d >= c.device_count())
      throw error(errc::bad_argument, "straggler device index " + std::to_string(d) +
                                          " is out of range; the cluster has " +
                                          std::to_string(c.device_count()) + " devices");
    if (!std::isfinite(f) || f <= 0)
      throw error(errc::bad_argument, "straggler slowdown must be finite and > 0, got " + std::to_string(f));
  }
}

/// Per-device slowdown factors (1 where no straggler is named; several entries multiply).
std::vector<double> slowdowns(const sim_options& opt, const cluster& c) {
  std::vector<double> s(c.device_count(), 1.0);
  for (const auto& [d, f] : opt.stragglers) s[d] *= f;
  return s;
}

/// Seconds of op `o` on device `d` under the model: the cost model for wc, raw FLOPs for simple.
double base_time(const op& o, const device& d, const cost_model& cm, sim_model m) noexcept {
  if (m == sim_model::simple) return o.flops <= 0 ? 0.0 : o.flops / d.flops;
  return cm.op_time(o, d);
}

}  // namespace

sim_result simulate(const graph& g, const cluster& c, const placement& p, const cost_model& cm,
                    const sim_options& opt) {
  check_options(opt, c);
  check_placement(p, g, c);
  detail::sim_inputs in;
  in.rng.seed(opt.seed);
  in.jitter = opt.jitter;
  if (opt.model == sim_model::wc) in.host_cores = cm.host_cores();
  auto slow = slowdowns(opt, c);
  in.op_time.resize(g.size());
  in.bytes.resize(g.size());
  // Op factors are drawn first, in op order, so an op's jitter does not depend on the placement:
  // two placements simulated with one seed see the same op noise (common random numbers).
  for (op_index v = 0; v < g.size(); ++v) {
    device_index d = p.device[v];
    in.op_time[v] = base_time(g[v], c[d], cm, opt.model) * slow[d] * in.factor();
    if (!std::isfinite(in.op_time[v]))
      throw error(errc::bad_value, fmt::format("op '{}' would take {} s on device '{}' ({:g} FLOPs at {:g} FLOP/s): "
                                               "not a finite time",
                                               excerpt(g[v].id), in.op_time[v], excerpt(c[d].id), g[v].flops,
                                               c[d].flops));
    in.bytes[v] = g[v].bytes;
  }
  sim_result r = opt.model == sim_model::simple ? detail::simulate_simple(g, c, p, in, opt)
                                                : detail::simulate_wc(g, c, p, in, opt);
  if (!std::isfinite(r.makespan))
    throw error(errc::bad_value, fmt::format("the simulated makespan is not finite ({} s): ops and transfers in "
                                             "sequence take longer than a double can hold (check the graph's FLOPs "
                                             "and the cluster's speeds, bandwidths and latencies)",
                                             r.makespan));
  return r;
}

double makespan_lower_bound(const graph& g, const cluster& c, const cost_model& cm,
                            const sim_options& opt) {
  check_options(opt, c);
  if (g.size() == 0 || c.device_count() == 0) return 0;
  auto slow = slowdowns(opt, c);
  // Effective rates: a straggler computes at flops / slowdown.
  double total_rate = 0;
  device_index fastest = 0;
  for (device_index d = 0; d < c.device_count(); ++d) {
    double rate = c[d].flops / slow[d];
    total_rate += rate;
    if (rate > c[fastest].flops / slow[fastest]) fastest = d;
  }
  // Every op on the fastest device, no communication: the critical path. The same per-op times
  // summed are the work; D devices of `streams` concurrent ops each finish it no faster than
  // work-seconds-on-the-fastest × its rate / (Σ rates × streams).
  int streams = opt.model == sim_model::simple ? 1 : opt.streams;
  // An op's FLOP-equivalent work (time × rate) is the same on every device under the FLOP-only
  // model; a memory term or an overhead does not shrink on a faster device, so its work is least on
  // the slowest one, and that is what the bound may count.
  bool flop_only = opt.model == sim_model::simple || cm.overhead() <= 0;
  if (opt.model == sim_model::wc)
    for (op_kind k : all_op_kinds())
      if (cm.bandwidth(k) > 0) flop_only = false;
  device_index slowest = 0;
  for (device_index d = 0; d < c.device_count(); ++d)
    if (c[d].flops / slow[d] < c[slowest].flops / slow[slowest]) slowest = d;
  std::vector<double> t(g.size());
  double work = 0;  // FLOP-equivalents: seconds on a 1 FLOP/s device
  for (op_index v = 0; v < g.size(); ++v) {
    t[v] = base_time(g[v], c[fastest], cm, opt.model) * slow[fastest];
    work += flop_only ? t[v] * (c[fastest].flops / slow[fastest])
                      : base_time(g[v], c[slowest], cm, opt.model) * slow[slowest] * (c[slowest].flops / slow[slowest]);
  }
  double cp = critical_path(g, t);
  double bound = std::max(cp, work / (total_rate * streams));
  // Host-core sharing: at most host_cores ops progress at full speed at any instant, none faster than
  // on the fastest device.
  if (opt.model == sim_model::wc && cm.host_cores() > 0) {
    double seconds = 0;
    for (double x : t) seconds += x;
    bound = std::max(bound, seconds / cm.host_cores());
  }
  return bound;
}

double makespan_lower_bound(const graph& g, const cluster& c, const cost_model& cm) {
  return makespan_lower_bound(g, c, cm, sim_options{});
}

}  // namespace doppler
