#pragma once
/// The cost model: how long an op takes on a device and a tensor takes between devices. Constants are
/// data, kept in one place and overridable from a `doppler-costs/1` JSON file (docs/simulator.md):
///   op time       = flops / (device FLOP/s × efficiency[kind])      (0 for ops of zero FLOPs)
///   transfer time = Σ route link latency + bytes / route bottleneck bandwidth (0 on the same device)
/// `synthetic` ops have efficiency 1: a 1e12-FLOP synthetic op takes 1 s on a 1e12 FLOP/s device.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>

#include <array>
#include <string>
#include <string_view>

namespace doppler {

class cost_model {
 public:
  /// The default efficiency table (fraction of a device's sustained FLOP/s each kind reaches).
  cost_model();

  /// Reads `{"format": "doppler-costs/1", "efficiency": {"matmul": 0.8, ...}}`; kinds not named keep
  /// their defaults. Errors name the file, the JSON path and the reason.
  static cost_model load(const std::string& path);
  static cost_model parse(std::string_view text, const std::string& file = "<costs>");
  std::string to_json_text() const;

  double efficiency(op_kind k) const noexcept { return efficiency_[static_cast<int>(k)]; }
  cost_model& set_efficiency(op_kind k, double e);

  /// Seconds op `o` takes on device `d`.
  double op_time(const op& o, const device& d) const noexcept {
    return o.flops <= 0 ? 0.0 : o.flops / (d.flops * efficiency_[static_cast<int>(o.kind)]);
  }
  /// Seconds `bytes` take from device a to device b along the route (uncontended).
  double transfer_time(const cluster& c, device_index a, device_index b, double bytes) const noexcept {
    return c.transfer_time(a, b, bytes);
  }

 private:
  std::array<double, op_kind_count> efficiency_{};
};

}  // namespace doppler
