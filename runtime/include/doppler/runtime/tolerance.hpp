#pragma once
/// The one rule for "equal" among makespans, start times and path lengths: two values that are sums
/// of the same terms taken in different orders can differ in their last bits, so they count as equal
/// when they agree up to a relative 1e-9. cp's tie sets, route latencies, the learner's teacher
/// choices and the self-imitation gate all use this rule, so they agree on what a tie is.

#include <algorithm>
#include <cmath>

namespace doppler {

/// Relative tolerance of `nearly_equal`.
inline constexpr double relative_tolerance = 1e-9;

/// a and b equal up to a relative `relative_tolerance` (so 0 equals only 0).
inline bool nearly_equal(double a, double b) noexcept {
  return std::abs(a - b) <= relative_tolerance * std::max(std::abs(a), std::abs(b));
}

/// a below b by more than rounding: a < b and not nearly_equal(a, b).
inline bool clearly_less(double a, double b) noexcept { return a < b && !nearly_equal(a, b); }

}  // namespace doppler
