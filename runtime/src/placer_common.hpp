#pragma once
/// Internals shared by the placers: a flat transfer-time table, device memory accounting, the
/// infeasibility error, and the placer classes' factory functions.

#include <doppler/runtime/placer.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace doppler::detail {

/// Uncontended transfer times as a flat D×D table of latency and 1/bandwidth: time(a, b, bytes) =
/// lat[a][b] + bytes · inv_bw[a][b] (0 on the diagonal). Same numbers as cluster::transfer_time,
/// without the route indirection in the schedulers' inner loops.
class transfer_table {
 public:
  explicit transfer_table(const cluster& c);
  double time(device_index a, device_index b, double bytes) const noexcept {
    std::size_t k = static_cast<std::size_t>(a) * n_ + b;
    return lat_[k] + bytes * inv_bw_[k];
  }

 private:
  std::size_t n_ = 0;
  std::vector<double> lat_, inv_bw_;
};

/// Device memory use as the sum of the output bytes of the ops placed there (Baechi's model).
class memory_tracker {
 public:
  memory_tracker(const graph& g, const cluster& c, bool enabled);
  /// True if op v's output fits on device d (always true when disabled).
  bool fits(device_index d, op_index v) const noexcept {
    return !enabled_ || used_[d] + g_[v].bytes <= cap_[d];
  }
  void add(device_index d, op_index v) noexcept { used_[d] += g_[v].bytes; }
  void remove(device_index d, op_index v) noexcept { used_[d] -= g_[v].bytes; }
  bool enabled() const noexcept { return enabled_; }
  double used(device_index d) const noexcept { return used_[d]; }
  double capacity(device_index d) const noexcept { return cap_[d]; }
  /// Throws errc::infeasible: op v fits on no device. `method` names the placer.
  [[noreturn]] void fail(op_index v, std::string_view method) const;
  /// Throws errc::infeasible up front when the whole graph's bytes exceed the cluster's memory.
  void check_total(std::string_view method) const;

 private:
  const graph& g_;
  const cluster& c_;
  bool enabled_;
  std::vector<double> used_, cap_;
};

/// Bottom levels under critical_path_costs (the priority most placers store as `order`); throws
/// check_finite_levels' error when one is not finite.
std::vector<double> default_bottom_levels(const graph& g, const cluster& c, const cost_model& cm);

/// Throws errc::bad_value naming the op when a bottom level in `levels` is inf or NaN: costs whose
/// sum along a path overflows a double (an op's own non-finite time is refused before, by
/// critical_path_costs). Placers would otherwise compare infinities.
void check_finite_levels(const graph& g, const cluster& c, std::span<const double> levels);

/// The bad_value error for op v's time t on device d, which is not finite.
[[noreturn]] void refuse_op_time(const graph& g, const cluster& c, op_index v, device_index d, double t);

std::unique_ptr<placer> make_cp_placer();
std::unique_ptr<placer> make_heft_placer();
std::unique_ptr<placer> make_metf_placer();
std::unique_ptr<placer> make_metis_placer();
std::unique_ptr<placer> make_search_placer();

}  // namespace doppler::detail
