#pragma once
// Helpers of the GPU test files: the skip rule (errors against the CPU reference: max_rel_diff, tensor.hpp).
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

}  // namespace doppler::testing
