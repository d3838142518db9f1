#pragma once
// Helpers of the GPU test files: the skip rule and the relative error used against the CPU reference.
#include <doppler/cuda/cuda_backend.hpp>
#include <doppler/runtime/cpu_backend.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace doppler::testing {

/// True when a GPU can run kernels; otherwise reports "skipped: no GPU (reason)" for the calling case.
inline bool have_gpu() {
  std::string why;
  if (cuda::gpu_available(&why)) return true;
  MESSAGE("skipped: no GPU (" << why << ")");
  return false;
}

/// max |a − b| / max |ref|: the error relative to the reference tensor's scale (∞ on a shape mismatch).
inline double rel_error(const tensor& a, const tensor& ref) {
  if (a.shape() != ref.shape()) return INFINITY;
  double peak = 0;
  for (float v : ref.values()) peak = std::max(peak, std::fabs(double(v)));
  const double diff = max_abs_diff(a, ref);  // NaN where either side has one: an error, not a pass
  return std::isnan(diff) ? INFINITY : diff / std::max(peak, 1e-30);
}

}  // namespace doppler::testing
