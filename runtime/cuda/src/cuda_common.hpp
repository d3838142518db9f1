#pragma once
// Private to the CUDA backend: CHECK macros that add file:line and throw doppler::error, and the
// kernel launchers (kernels.hpp).
#include <doppler/cuda/cuda_backend.hpp>
#include <doppler/cuda/kernel_math.hpp>
#include <doppler/runtime/error.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

/// Throws doppler::error (errc::internal, "file:line: expr failed: ...") when a CUDA runtime call fails.
#define DOPPLER_CUDA_CHECK(expr)                                                              \
  do {                                                                                        \
    const cudaError_t doppler_e_ = (expr);                                                    \
    if (doppler_e_ != cudaSuccess) {                                                          \
      (void)cudaGetLastError(); /* clear a sticky launch error */                             \
      throw ::doppler::cuda::cuda_error(static_cast<int>(doppler_e_), #expr, __FILE__, __LINE__); \
    }                                                                                         \
  } while (0)
/// The same for cuBLAS calls.
#define DOPPLER_CUBLAS_CHECK(expr)                                                            \
  do {                                                                                        \
    const cublasStatus_t doppler_s_ = (expr);                                                 \
    if (doppler_s_ != CUBLAS_STATUS_SUCCESS)                                                  \
      throw ::doppler::cuda::cublas_error(static_cast<int>(doppler_s_), #expr, __FILE__, __LINE__); \
  } while (0)
/// The same for NCCL calls (ncclResult_t).
#define DOPPLER_NCCL_CHECK(expr)                                                              \
  do {                                                                                        \
    const ncclResult_t doppler_r_ = (expr);                                                   \
    if (doppler_r_ != ncclSuccess)                                                            \
      throw ::doppler::cuda::nccl_error(static_cast<int>(doppler_r_), #expr, __FILE__, __LINE__); \
  } while (0)

#include "kernels.hpp"
