#pragma once
// Sample statistics of makespans (measured or simulated), shared by the CLI commands.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

namespace doppler::cli {

struct sample_summary {
  std::size_t n = 0;
  double mean = 0, std = 0, min = 0;  ///< std: the sample standard deviation (0 below two values)
  /// Standard error of the mean (0 below two values).
  double se() const { return n > 1 ? std / std::sqrt(static_cast<double>(n)) : 0.0; }
};

/// Mean, sample standard deviation and minimum of `xs` (all 0 when it is empty).
inline sample_summary summarize(const std::vector<double>& xs) {
  sample_summary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  if (*lo == *hi) {  // equal values (a deterministic placer): exactly that, not its sum's rounding
    s.mean = s.min = *lo;
    return s;
  }
  s.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - s.mean) * (x - s.mean);
  s.std = xs.size() > 1 ? std::sqrt(ss / static_cast<double>(xs.size() - 1)) : 0.0;
  s.min = *std::min_element(xs.begin(), xs.end());
  return s;
}

}  // namespace doppler::cli
