// GPU probing and the translation of CUDA / cuBLAS / NCCL failures into doppler::error.
#include "cuda_common.hpp"

#include <nccl.h>

#include <fmt/format.h>

namespace doppler::cuda {

namespace {

std::string where(const char* expr, const char* file, int line) {
  return fmt::format("{}:{}: {} failed", file ? file : "?", line, expr ? expr : "?");
}

gpu_status probe() {
  gpu_status s;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    s.reason = fmt::format("cudaGetDeviceCount: error {} ({}: {})", static_cast<int>(e), cudaGetErrorName(e),
                           cudaGetErrorString(e));
    return s;
  }
  if (count <= 0) {
    s.reason = "cudaGetDeviceCount: 0 devices";
    return s;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess)
      s.names.push_back(fmt::format("{} (sm_{}{}, {:.1f} GiB)", p.name, p.major, p.minor,
                                    static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)));
  }
  s.devices = count;
  s.available = true;
  return s;
}

}  // namespace

const gpu_status& probe_gpus() {
  static const gpu_status status = probe();
  return status;
}

bool gpu_available(std::string* reason) {
  const gpu_status& s = probe_gpus();
  if (reason) *reason = s.available ? std::string{} : s.reason;
  return s.available;
}

error cuda_error(int code, const char* expr, const char* file, int line) {
  const auto e = static_cast<cudaError_t>(code);
  return error(errc::internal, fmt::format("{}: {} ({}): {}", where(expr, file, line), cudaGetErrorName(e), code,
                                           cudaGetErrorString(e)));
}

error cublas_error(int status, const char* expr, const char* file, int line) {
  const auto s = static_cast<cublasStatus_t>(status);
  return error(errc::internal, fmt::format("{}: {} ({}): {}", where(expr, file, line), cublasGetStatusName(s), status,
                                           cublasGetStatusString(s)));
}

error nccl_error(int result, const char* expr, const char* file, int line) {
  const auto r = static_cast<ncclResult_t>(result);
  return error(errc::internal,
               fmt::format("{}: NCCL result {}: {}", where(expr, file, line), result, ncclGetErrorString(r)));
}

}  // namespace doppler::cuda
