#pragma once
/// The cost model: how long an op takes on a device and a tensor takes between devices. Constants are
/// data, kept in one place and overridable from a `doppler-costs/1` JSON file (docs/simulator.md):
///   op time       = overhead + max(flops / (device FLOP/s × efficiency[kind]),   (0 for 0 FLOPs)
///                                  output bytes / bandwidth[kind])              (0 where unset)
///   transfer time = Σ route link latency + bytes / route bottleneck bandwidth (0 on the same device)
/// `synthetic` ops have efficiency 1: a 1e12-FLOP synthetic op takes 1 s on a 1e12 FLOP/s device.
/// The defaults set no bandwidth, no overhead and no host-core limit: op time = the FLOP term alone.
/// `host_cores` (0 = unlimited) is read by the `wc` simulator: the devices share that many cores.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace doppler {

class cost_model {
 public:
  /// The default efficiency table (fraction of a device's sustained FLOP/s each kind reaches).
  cost_model();

  /// Reads `{"format": "doppler-costs/1", "efficiency": {"matmul": 0.8, ...}}` plus the optional
  /// `"bandwidth": {"slice": 2e10, ...}`, `"overhead": 5e-6` and `"host_cores": 2`; kinds and fields
  /// not named keep their defaults. Errors name the file, the JSON path and the reason.
  static cost_model load(const std::string& path);
  static cost_model parse(std::string_view text, const std::string& file = "<costs>");
  std::string to_json_text() const;

  double efficiency(op_kind k) const noexcept { return efficiency_[static_cast<int>(k)]; }
  /// Efficiency in [1e-6, 1] (outside: errc::bad_argument, as for every setter's range).
  cost_model& set_efficiency(op_kind k, double e);

  /// Output bytes per second a kind's kernel sustains (the memory term); 0 = no memory term.
  double bandwidth(op_kind k) const noexcept { return bandwidth_[static_cast<int>(k)]; }
  /// Sets the memory term of kind `k`: bytes/s, finite and ≥ 1e3, or 0 to remove it.
  cost_model& set_bandwidth(op_kind k, double bytes_per_s);
  /// Fixed seconds added to every op (dispatch, kernel launch), in [0, 1e3]; default 0.
  double overhead() const noexcept { return overhead_; }
  cost_model& set_overhead(double seconds);
  /// Cores the devices of a host share (processor sharing in the `wc` simulator): 0 = unlimited, else
  /// in [0.01, 1e6].
  double host_cores() const noexcept { return host_cores_; }
  cost_model& set_host_cores(double cores);

  /// Seconds op `o` takes on device `d` when it has a core to itself.
  double op_time(const op& o, const device& d) const noexcept {
    const int k = static_cast<int>(o.kind);
    double t = o.flops <= 0 ? 0.0 : o.flops / (d.flops * efficiency_[k]);
    if (bandwidth_[k] > 0 && o.bytes > 0) t = std::max(t, o.bytes / bandwidth_[k]);
    return overhead_ + t;
  }
  /// Seconds `bytes` take from device a to device b along the route (uncontended).
  double transfer_time(const cluster& c, device_index a, device_index b, double bytes) const noexcept {
    return c.transfer_time(a, b, bytes);
  }

 private:
  std::array<double, op_kind_count> efficiency_{};
  std::array<double, op_kind_count> bandwidth_{};  // 0 = no memory term
  double overhead_ = 0;
  double host_cores_ = 0;
};

}  // namespace doppler
