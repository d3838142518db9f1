#pragma once
// Private parts shared by the simulator's models (sim.cpp, sim_wc.cpp, sim_simple.cpp) and the
// lower bound (lower_bound.cpp).

#include <doppler/runtime/sim.hpp>

#include <random>
#include <span>
#include <vector>

namespace doppler::detail {

/// What every model needs besides the graph, cluster and placement: per-op durations on the op's
/// device (cost model or raw FLOPs, stragglers and op jitter applied) and the RNG for transfer jitter.
struct sim_inputs {
  std::vector<double> op_time;  ///< seconds, per op, on its placed device
  std::vector<double> bytes;    ///< output bytes, per op
  std::mt19937_64 rng;
  double jitter = 0;            ///< σ; 0 = transfers are exact
  double host_cores = 0;        ///< > 0: running ops share this many cores (processor sharing); 0 = off

  /// A lognormal(−σ²/2, σ) factor (mean 1), or 1 when jitter is off.
  double factor() {
    if (jitter <= 0) return 1.0;
    return std::lognormal_distribution<double>(-0.5 * jitter * jitter, jitter)(rng);
  }
};

/// Refuses options the simulator cannot run: streams, jitter, stragglers out of range; planned
/// transfers with the simple model.
void check_options(const sim_options& opt, const cluster& c);
/// Per-device slowdown factors (1 where no straggler is named; several entries multiply).
std::vector<double> slowdowns(const sim_options& opt, const cluster& c);
/// Seconds of op `o` on device `d` under the model: the cost model for wc, raw FLOPs for simple.
double base_time(const op& o, const device& d, const cost_model& cm, sim_model m) noexcept;

/// The work-conserving model (`exec_mode::wc` or `bsp`), see docs/simulator.md.
sim_result simulate_wc(const graph& g, const cluster& c, const placement& p, sim_inputs& in,
                       const sim_options& opt);
/// The DOPPLER paper's model (`sim_model::simple`), see docs/simulator.md.
sim_result simulate_simple(const graph& g, const cluster& c, const placement& p, sim_inputs& in,
                           const sim_options& opt);

}  // namespace doppler::detail
