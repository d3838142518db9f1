#pragma once
/// A communication demand (`doppler-demand/1`): chunks of equal size, each starting at one source
/// device and needed by a set of destination devices; optionally grouped into weighted jobs
/// (several tenants planned jointly). Builders for the common collectives.

#include <doppler/runtime/cluster.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace doppler::comm {

/// One chunk: a commodity that starts at `source` and must reach every device of `destinations`.
struct chunk {
  std::uint32_t id = 0;                    ///< the id the file and the schedule use
  device_index source = 0;
  std::vector<device_index> destinations;  ///< distinct, never the source
  std::uint32_t job = 0;                   ///< index into demand::jobs (0 when there are none)
};

/// A tenant of a multi-job demand: its name and its weight in the joint objective.
struct job {
  std::string name;
  double weight = 1;
};

struct demand {
  std::string name;
  double chunk_bytes = 0;
  std::vector<chunk> chunks;
  std::vector<job> jobs;    ///< empty for a single-job demand
  double output_bytes = 0;  ///< per-GPU output buffer for algbw; 0 = derived (see output_size)

  /// Output bytes per GPU that algorithmic bandwidth divides by: `output_bytes` when set, else the
  /// largest number of chunks any device ends up with (sourced or received) × chunk_bytes.
  double output_size(std::size_t device_count) const;
  /// Position of the chunk with id `id`, if any.
  std::optional<std::size_t> find_chunk(std::uint32_t id) const;
  /// Checks ids unique, devices in range, destinations distinct and not the source, chunk_bytes > 0.
  void validate(const cluster& c, const std::string& file = "<demand>") const;
};

enum class collective { allgather, alltoall, broadcast, scatter, gather };
std::string_view to_string(collective k) noexcept;
std::optional<collective> parse_collective(std::string_view s) noexcept;

/// Builds a collective over the cluster's devices (all of them, or `participants` when given):
/// allgather: every device's k chunks to every other; alltoall: k chunks for every ordered pair;
/// broadcast/scatter from `root` (broadcast: k chunks to all; scatter: k chunks per other device);
/// gather to `root`. Name e.g. "allgather-8x2".
demand make_collective(const cluster& c, collective kind, double chunk_bytes, int chunks_per_gpu = 1,
                       device_index root = 0, std::vector<device_index> participants = {});

/// Reads/writes `doppler-demand/1`; device names resolve against `c`; errors name the JSON path.
demand parse_demand(std::string_view text, const cluster& c, const std::string& file = "<demand>");
demand load_demand(const std::string& path, const cluster& c);
std::string to_json_text(const demand& d, const cluster& c);
void save_demand(const demand& d, const cluster& c, const std::string& path);

/// Several demands as the jobs of one: chunks renumbered, each job keeps its name and weight.
demand merge_jobs(const std::vector<demand>& parts, const std::vector<double>& weights);

}  // namespace doppler::comm
