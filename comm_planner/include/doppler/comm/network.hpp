#pragma once
/// The time-expanded network: a cluster cut into epochs of length τ for chunks of a given size.
/// A link carries `cap` chunks per window of `window` = β+1 epochs (β = ⌈chunk/(bw·τ)⌉ − 1, the
/// extra epochs a chunk occupies a slow link). A chunk sent at epoch e over a link into a device is
/// held there from epoch e + `offset` (= δ + β + 1, δ = ⌈α/τ⌉, or 0 when α/τ ≤ 0.1). Switches hold
/// nothing: a chunk entering a switch in epoch e leaves it in the same epoch e; a link out of a
/// switch accounts for the whole hop (δ of the in-link's α plus its own, the larger β).

#include <doppler/runtime/cluster.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace doppler::comm {

enum class epoch_mode { fast, slow, given };
std::optional<epoch_mode> parse_epoch_mode(std::string_view s) noexcept;

/// One directed link of the time-expanded network.
struct te_link {
  node_index src = 0, dst = 0;
  link_index cluster_link = 0;
  std::int32_t window = 1;  ///< β + 1
  std::int32_t cap = 1;     ///< chunks per window
  std::int32_t offset = 1;  ///< epochs from send to held at dst (0 into a switch: same epoch)
  double bandwidth = 0, latency = 0;
};

constexpr std::int32_t unreachable_epochs = std::numeric_limits<std::int32_t>::max() / 4;

/// Limits that keep the time-expanded network (and every horizon built on it) bounded: a link hop
/// may take at most `max_hop_epochs` epochs (δ + β + 1: τ too short for the chunk or the latency),
/// and a link may carry at most `max_epoch_chunks` chunks per window (τ far too long for the chunk).
constexpr std::int32_t max_hop_epochs = 1 << 14;
constexpr std::int32_t max_epoch_chunks = 1 << 14;
/// Chunk sizes a demand or schedule may use: at least one byte, at most 1 TiB.
constexpr double min_chunk_bytes = 1;
constexpr double max_chunk_bytes = 1099511627776.0;

class network {
 public:
  /// τ from `mode` (`given` uses `tau`). Links listed in `removed` (cluster link indices, e.g.
  /// failures) are left out. Throws doppler::error(bad_argument) when the chunk size is outside
  /// [min_chunk_bytes, max_chunk_bytes] (path `chunk_bytes`), or when τ makes a hop longer than
  /// max_hop_epochs or a window carry more than max_epoch_chunks (path `tau` for a given τ or a
  /// bandwidth spread that fast/slow cannot cover, `chunk_bytes` when tiny chunks make a link's
  /// latency too many fast/slow epochs).
  network(const cluster& c, double chunk_bytes, epoch_mode mode = epoch_mode::fast, double tau = 0,
          const std::vector<link_index>& removed = {});

  const cluster& topology() const noexcept { return *cluster_; }
  double tau() const noexcept { return tau_; }
  double chunk_bytes() const noexcept { return chunk_bytes_; }
  std::size_t node_count() const noexcept { return out_.size(); }
  std::size_t device_count() const noexcept { return devices_; }
  bool is_switch(node_index n) const noexcept { return n >= devices_; }
  const std::vector<te_link>& links() const noexcept { return links_; }
  const std::vector<std::uint32_t>& out_links(node_index n) const noexcept { return out_[n]; }
  const std::vector<std::uint32_t>& in_links(node_index n) const noexcept { return in_[n]; }
  /// The link src → dst, if present.
  std::optional<std::uint32_t> find_link(node_index src, node_index dst) const;
  /// Fewest epochs from holding a chunk at device a to holding it at device b (unreachable_epochs
  /// when b cannot be reached); computed lazily for all pairs on first use.
  std::int32_t epochs_between(device_index a, device_index b) const;
  /// Earliest epoch node n can send a chunk held at device a from epoch 0 (switches included).
  std::int32_t epochs_to_node(device_index a, node_index n) const;
  /// Fewest epochs from a send leaving node n (in some epoch) to device b holding it; for a device n
  /// that already holds it this is epochs_between(n, b).
  std::int32_t epochs_from_node(node_index n, device_index b) const;

 private:
  void compute_distances() const;

  const cluster* cluster_;
  double tau_ = 0, chunk_bytes_ = 0;
  std::size_t devices_ = 0;
  std::vector<te_link> links_;
  std::vector<std::vector<std::uint32_t>> out_, in_;
  mutable std::vector<std::int32_t> to_node_;    // D × N: device a holds at 0 → node n can send at
  mutable std::vector<std::int32_t> from_node_;  // N × D: node n sends → device b holds after
};

}  // namespace doppler::comm
