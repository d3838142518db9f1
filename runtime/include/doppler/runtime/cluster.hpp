#pragma once
/// The cluster model (`doppler-cluster/1`): devices with compute and memory, switches that forward
/// but store nothing, directed links with bandwidth and latency, and the shortest-latency route
/// between every pair of devices. A built cluster is valid: every device reaches every other one.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace doppler {

enum class device_kind : std::uint8_t { gpu, cpu };
std::string_view to_string(device_kind k) noexcept;
std::optional<device_kind> parse_device_kind(std::string_view s) noexcept;

/// Index of a device in its cluster; devices are nodes 0..D-1, switches nodes D..D+S-1.
using device_index = std::uint32_t;
using node_index = std::uint32_t;
using link_index = std::uint32_t;

/// The numbers a cluster accepts (the constructor refuses others, naming the field): far outside any
/// real hardware on both sides, so only typos and unit mix-ups are refused — they would otherwise give
/// times of 1e200 s, or below the simulator's resolution, that look like results.
namespace cluster_limits {
inline constexpr double min_flops = 1, max_flops = 1e21;         ///< FLOP/s per device
inline constexpr double max_memory = 1e18;                        ///< bytes per device (≥ 1)
inline constexpr double min_bandwidth = 1, max_bandwidth = 1e16;  ///< bytes/s per link
inline constexpr double max_latency = 1e3;                        ///< seconds per link (≥ 0)
}  // namespace cluster_limits

struct device {
  std::string id;
  device_kind kind = device_kind::gpu;
  double flops = 0;   ///< sustained FLOP/s
  double memory = 0;  ///< bytes
  std::string host;
};

/// A link as the file states it (`duplex` adds the reverse direction).
struct link_spec {
  std::string src, dst;
  double bandwidth = 0;  ///< bytes/s
  double latency = 0;    ///< s
  bool duplex = false;
};

/// One direction of a link, between node indices.
struct link {
  node_index src = 0, dst = 0;
  double bandwidth = 0, latency = 0;
  std::uint32_t spec = 0;  ///< index into cluster::link_specs()
};

/// The route a tensor takes from one device to another: shortest total latency, then fewest hops,
/// then widest bottleneck. Routes may pass through switches and through other devices (GPUs forward).
struct route {
  std::vector<link_index> links;  ///< in order from source to destination; empty for a device to itself
  double latency = 0;             ///< Σ link latency
  double bandwidth = 0;           ///< bottleneck bandwidth (infinity for a device to itself)
  /// Latency + bytes / bottleneck bandwidth (the cost model's uncontended transfer time).
  double time(double bytes) const noexcept;
};

/// An immutable, validated cluster.
class cluster {
 public:
  /// Validates and builds: non-empty unique ids across devices and switches, known kinds,
  /// flops/memory/bandwidth/latency finite and within cluster_limits, link ends that exist, and every
  /// device pair reachable. Errors name the JSON path (`links[3].dst`).
  cluster(std::string name, std::vector<device> devices, std::vector<std::string> switches,
          std::vector<link_spec> links);
  cluster() = default;

  const std::string& name() const noexcept { return name_; }
  std::span<const device> devices() const noexcept { return devices_; }
  std::size_t device_count() const noexcept { return devices_.size(); }
  const device& operator[](device_index d) const noexcept { return devices_[d]; }
  std::span<const std::string> switches() const noexcept { return switches_; }
  std::span<const link_spec> link_specs() const noexcept { return specs_; }
  /// Directed links (duplex specs expanded).
  std::span<const link> links() const noexcept { return links_; }
  std::size_t node_count() const noexcept { return devices_.size() + switches_.size(); }
  /// Id of a node (device or switch).
  const std::string& node_id(node_index n) const noexcept;

  std::optional<device_index> find_device(std::string_view id) const;
  /// The route from device a to device b.
  const route& route_between(device_index a, device_index b) const noexcept {
    return routes_[static_cast<std::size_t>(a) * devices_.size() + b];
  }
  /// Uncontended transfer time of `bytes` from a to b (0 when a == b).
  double transfer_time(device_index a, device_index b, double bytes) const noexcept {
    return a == b ? 0.0 : route_between(a, b).time(bytes);
  }
  double total_flops() const noexcept;
  double max_device_flops() const noexcept;

 private:
  std::string name_;
  std::vector<device> devices_;
  std::vector<std::string> switches_;
  std::vector<link_spec> specs_;
  std::vector<link> links_;
  std::vector<route> routes_;  // D×D, row-major
};

/// Reads a `doppler-cluster/1` file; errors name the file, the JSON path and the reason.
cluster load_cluster(const std::string& path);
/// Parses `doppler-cluster/1` text; `file` is used in error messages.
cluster parse_cluster(std::string_view text, const std::string& file = "<cluster>");
/// Serializes to `doppler-cluster/1` (links as their specs: the round trip is lossless).
std::string to_json_text(const cluster& c);
/// Writes atomically.
void save_cluster(const cluster& c, const std::string& path);

/// Named presets: p100x4, dgx1-v100, ndv2-2, dgx-h100, h100-2x8, dgx2-2, cpu:N, doppler-paper:N
/// (docs/clusters.md gives each one's sources). Throws unknown_kind for an unknown name.
cluster make_preset(std::string_view name);
/// The preset names with a one-line description each.
std::vector<std::pair<std::string, std::string>> preset_catalog();
/// `spec` is a file path if such a file exists, else a preset name.
cluster load_cluster_or_preset(const std::string& spec);

}  // namespace doppler
