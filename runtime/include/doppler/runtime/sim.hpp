#pragma once
/// The discrete-event simulator: runs a placement in virtual time on a cluster under the cost model.
/// docs/simulator.md states exactly what each model includes and leaves out.
///
/// `model::wc` (default): work-conserving. An op becomes ready when every input is on its device; a
/// device runs up to `streams` ready ops at once, preferring the placement's `order` (else FIFO of
/// readiness). A tensor needed on another device is sent once per destination device over the routed
/// links; links are shared (concurrent transfers on a link queue FIFO — see docs/simulator.md).
/// `mode::bsp` runs level by level with a barrier after each level.
/// `model::simple` reproduces the DOPPLER paper's public simulator: one FIFO queue per device, op time
/// = flops / device FLOP/s, every cross-device edge delays its consumer by bytes / bandwidth of its
/// source's output, no contention, no latency.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace doppler {

class transfer_planner;  // transfer_plan.hpp

enum class exec_mode : std::uint8_t { wc, bsp };
enum class sim_model : std::uint8_t { wc, simple };

/// The most concurrent ops per device (`streams`) the simulator and the runtime accept.
inline constexpr int max_streams = 256;
/// The largest jitter σ the simulator accepts: beyond it the lognormal factor's median exp(−σ²/2)
/// (0.14 at σ = 2) collapses toward 0 and runs stop saying anything about the placement.
inline constexpr double max_jitter = 2.0;

struct sim_options {
  exec_mode mode = exec_mode::wc;
  sim_model model = sim_model::wc;
  int streams = 1;              ///< concurrent ops per device, 1 to max_streams
  double jitter = 0;            ///< σ of lognormal multiplicative noise on op and transfer times (0 = off), ≤ max_jitter
  std::uint64_t seed = 0;       ///< RNG seed for jitter
  std::vector<std::pair<device_index, double>> stragglers;  ///< device → slowdown factor (> 1)
  bool record_trace = false;    ///< fill sim_result::events
  /// Planned transfers (`wc` model only): a tensor that `wants_plan` (several destination devices, or
  /// a route through another device) moves as the planner says, chunk by chunk and hop by hop, when
  /// the planner returns a plan; null = every destination gets its own copy over its route.
  std::shared_ptr<transfer_planner> transfers;

  sim_options& with_mode(exec_mode m) { mode = m; return *this; }
  sim_options& with_model(sim_model m) { model = m; return *this; }
  sim_options& with_streams(int s) { streams = s; return *this; }
  sim_options& with_jitter(double sigma, std::uint64_t s) { jitter = sigma; seed = s; return *this; }
  sim_options& with_trace(bool on = true) { record_trace = on; return *this; }
  sim_options& with_transfers(std::shared_ptr<transfer_planner> planner) {
    transfers = std::move(planner);
    return *this;
  }
  sim_options& with_straggler(device_index d, double slowdown) {
    stragglers.emplace_back(d, slowdown);
    return *this;
  }
};

/// One interval of a trace: an op on a device, or a transfer on a link.
struct trace_event {
  enum class kind : std::uint8_t { op, transfer } what = kind::op;
  std::uint32_t id = 0;     ///< op index (for a transfer: the op whose output moves)
  std::uint32_t where = 0;  ///< device index (op) or directed link index (transfer)
  std::uint32_t dst = 0;    ///< transfer: destination device
  double start = 0, end = 0;
  double bytes = 0;         ///< transfer: the bytes it moves (a planned hop: one chunk); 0 = the op's whole output
};

struct sim_result {
  double makespan = 0;
  std::vector<double> busy;        ///< per device: seconds with at least one op running
  std::vector<double> link_bytes;  ///< per directed link: bytes carried
  std::vector<trace_event> events; ///< when record_trace
  std::size_t event_count = 0;     ///< events processed (for events/s benchmarks)
  /// busy[d] / makespan
  double utilization(device_index d) const noexcept { return makespan > 0 ? busy[d] / makespan : 0; }
};

/// Simulates one run. The placement must be valid (check_placement). Deterministic for a seed.
sim_result simulate(const graph& g, const cluster& c, const placement& p, const cost_model& cm,
                    const sim_options& opt = {});

/// Makespan lower bound: the largest of the critical path (every op on the fastest device, no
/// communication), total work / total FLOP/s (an op's work is flops / efficiency[kind]; synthetic ops:
/// their flops) and the head/tail bound: an op every op with work depends on (the block's input) sits
/// on one device, so the others start only once a tensor has reached them, and likewise they stop
/// early enough to send their last result to the one device of an op every op with work feeds
/// (docs/simulator.md, "Lower bound"). Valid for every placement of the `wc` model with one stream
/// and no jitter.
double makespan_lower_bound(const graph& g, const cluster& c, const cost_model& cm);
/// The same bound for the model, streams, stragglers and transfers of `opt`: `simple` ignores
/// efficiencies and latency, `streams` > 1 divides the work by the streams, straggler devices count at
/// their slowed rate, planned transfers count only what every path into a device pays.
/// Valid for every placement when `opt.jitter` is 0.
double makespan_lower_bound(const graph& g, const cluster& c, const cost_model& cm,
                            const sim_options& opt);

/// Chrome trace event JSON (docs/simulator.md, "Trace") of a simulated or measured run: one process per device and per
/// link, op id and kind in `args`, `otherData.makespan_s` and `otherData.source` (FORMATS.md: "simulator", "cpu" or
/// "cuda"); a non-empty `backend` adds `otherData.backend`, the runtime backend by name (cpu, null, emulate, cuda),
/// which tells a measured run from one whose op times were modelled (emulate) or empty (null).
std::string chrome_trace(const graph& g, const cluster& c, const sim_result& r, std::string_view source,
                         std::string_view backend = {});

}  // namespace doppler
