#pragma once
/// A schedule (`doppler-schedule/1`): which chunk crosses which link in which epoch.

#include <doppler/comm/demand.hpp>
#include <doppler/runtime/cluster.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace doppler::comm {

/// One chunk over the direct link src → dst, starting at `epoch`. src/dst are node indices
/// (devices 0..D-1, then switches).
struct send {
  std::uint32_t chunk = 0;  ///< chunk id (demand's chunk::id)
  node_index src = 0, dst = 0;
  std::int32_t epoch = 0;
  friend bool operator==(const send&, const send&) = default;
};

struct schedule {
  std::string topology, demand_name, method;
  double epoch_seconds = 0;
  std::int32_t epochs = 0;
  double chunk_bytes = 0;
  std::vector<send> sends;
  double transfer_seconds = 0;
  double lower_bound_seconds = 0;
  double solve_seconds = 0;
  /// Extra fields (written when set): whether the epoch count is proved minimal, and notes.
  bool proved_optimal = false;
  std::string note;
  /// A re-plan's epoch t0 (written when ≥ 0): its sends before t0 are the previous schedule's.
  std::int32_t replan_epoch = -1;
};

/// Reads/writes `doppler-schedule/1`; node names resolve against `c`; errors name the JSON path.
schedule parse_schedule(std::string_view text, const cluster& c, const std::string& file = "<schedule>");
schedule load_schedule(const std::string& path, const cluster& c);
std::string to_json_text(const schedule& s, const cluster& c);
void save_schedule(const schedule& s, const cluster& c, const std::string& path);

/// Sorts sends by (epoch, src, dst, chunk) — a canonical order for writing and comparing.
void canonicalize(schedule& s);

}  // namespace doppler::comm
