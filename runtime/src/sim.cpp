// The simulator's front door: option checks, per-op durations, model dispatch (the lower bound is
// in lower_bound.cpp).
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/sim.hpp>

#include "sim_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace doppler {

namespace detail {

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

}  // namespace detail

sim_result simulate(const graph& g, const cluster& c, const placement& p, const cost_model& cm,
                    const sim_options& opt) {
  detail::check_options(opt, c);
  check_placement(p, g, c);
  detail::sim_inputs in;
  in.rng.seed(opt.seed);
  in.jitter = opt.jitter;
  if (opt.model == sim_model::wc) in.host_cores = cm.host_cores();
  auto slow = detail::slowdowns(opt, c);
  in.op_time.resize(g.size());
  in.bytes.resize(g.size());
  // Op factors are drawn first, in op order, so an op's jitter does not depend on the placement:
  // two placements simulated with one seed see the same op noise (common random numbers).
  for (op_index v = 0; v < g.size(); ++v) {
    device_index d = p.device[v];
    in.op_time[v] = detail::base_time(g[v], c[d], cm, opt.model) * slow[d] * in.factor();
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

}  // namespace doppler
