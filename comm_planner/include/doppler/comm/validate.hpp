#pragma once
/// The validator and schedule simulator: replays a schedule on the time-expanded network, checks
/// every rule of the schedule contract, and reports transfer time, algorithmic bandwidth and the
/// peak buffer of every device; also an α-β replay in continuous time (each link serves its sends
/// in epoch order, one at a time, as soon as the chunk is there).

#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace doppler::comm {

struct validate_options {
  bool switch_copy = true;  ///< a switch may send one incoming chunk out of several links
};

struct replay_report {
  std::int32_t epochs_used = 0;       ///< first epoch by which every destination holds its chunks
  double transfer_seconds = 0;        ///< epochs_used × τ
  double simulated_seconds = 0;       ///< α-β continuous-time replay of the same sends
  double algbw = 0;                   ///< output bytes per GPU / transfer_seconds (bytes/s)
  double output_bytes = 0;
  double bytes_moved = 0;             ///< Σ over sends of chunk bytes (link traffic)
  std::size_t sends = 0;
  std::vector<double> peak_buffer_bytes;  ///< per device: max over epochs of live chunks × chunk bytes
  std::vector<std::int32_t> chunk_epochs; ///< per demand chunk: epoch its last destination holds it
  /// Per send, in the schedule's order: the α-β replay's interval on its link, [begin, end) (the
  /// chunk then arrives after the link's latency).
  std::vector<double> send_begin, send_end;
};

/// Checks `s` against `d` on `net` (whose τ and chunk size must match the schedule's) and replays
/// it. Throws doppler::error(bad_value) at JSON path `sends[i]` for the first violated send in
/// (epoch, file) order: unknown chunk, no such link, a device sending what it does not hold yet, a
/// switch forwarding what did not enter it in that epoch, a link over capacity; or at `sends` when a
/// destination lacks a chunk at the end, or at `epochs` when the header claims fewer epochs than used.
replay_report validate_schedule(const network& net, const demand& d, const schedule& s,
                                const validate_options& opt = {});

/// Chrome trace event JSON (docs/simulator.md, "Trace") of the α-β replay `rep` of `s` (validate_schedule's
/// report of it): one process per link that carries sends, each send a complete event "chunk K"
/// over its replayed interval (args: chunk, epoch, from, to, bytes); `otherData` has makespan_s (the
/// replay's end), source "simulator", and the schedule's method, demand, epochs and epoch_seconds.
std::string schedule_trace(const cluster& c, const schedule& s, const replay_report& rep);

/// Builds the network the schedule was made for (its τ and chunk size) and validates on it; an
/// epoch length or chunk size outside the network's limits (max_hop_epochs, max_epoch_chunks) is a
/// bad_value at `epoch_seconds` or `chunk_bytes`.
replay_report validate_schedule(const cluster& c, const demand& d, const schedule& s,
                                const validate_options& opt = {});

}  // namespace doppler::comm
