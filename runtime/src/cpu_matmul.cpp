// matmul through OpenBLAS's cblas_sgemm, pinned to one thread (device workers give the parallelism).
#include <doppler/runtime/cpu_kernels.hpp>

#include "cpu_common.hpp"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <mutex>

// Declared by OpenBLAS's cblas.h; repeated so the intent is visible and a reference-BLAS cblas.h
// would fail at link time rather than silently run multi-threaded.
extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
extern "C" char* openblas_get_corename(void);

namespace doppler::cpu {

using detail::shape_error;

namespace {

int blas_int(std::size_t v) {
  if (v > static_cast<std::size_t>(INT_MAX)) shape_error("matmul", "extent " + std::to_string(v) + " exceeds BLAS int");
  return static_cast<int>(v);
}

}  // namespace

void pin_blas_to_one_thread() {
  if (openblas_get_num_threads() == 1) return;
  static std::mutex m;  // device workers may race here on their first matmul
  const std::lock_guard<std::mutex> lock(m);
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

std::string blas_core() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

tensor matmul(const tensor& a, const tensor& b) {
  const shape_t& as = a.shape();
  const shape_t& bs = b.shape();
  if (as.size() < 2 || bs.size() < 2)
    shape_error("matmul", "A " + to_string(as) + " and B " + to_string(bs) + " need rank >= 2");
  const auto m = static_cast<std::size_t>(as[as.size() - 2]), k = static_cast<std::size_t>(as.back());
  const auto kb = static_cast<std::size_t>(bs[bs.size() - 2]), n = static_cast<std::size_t>(bs.back());
  if (k != kb) shape_error("matmul", "contraction mismatch: A " + to_string(as) + ", B " + to_string(bs));
  const bool batched_b = bs.size() > 2;
  if (batched_b && (bs.size() != as.size() || !std::equal(bs.begin(), bs.end() - 2, as.begin())))
    shape_error("matmul", "B " + to_string(bs) + " must be (k, n) or have A's batch axes " + to_string(as));
  shape_t out_shape(as.begin(), as.end() - 1);
  out_shape.push_back(bs.back());
  tensor out(out_shape);
  if (out.numel() == 0) return out;
  const std::size_t batch = detail::extent_product(as, 0, as.size() - 2);
  if (k == 0) return out;  // an empty contraction sums nothing
  pin_blas_to_one_thread();
  if (!batched_b) {
    // A shared B: fold A's batch axes into its rows, one GEMM of (batch·m) × k · k × n.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(batch * m), blas_int(n), blas_int(k), 1.0f,
                a.data(), blas_int(k), b.data(), blas_int(n), 0.0f, out.data(), blas_int(n));
    return out;
  }
  for (std::size_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(m), blas_int(n), blas_int(k), 1.0f,
                a.data() + i * m * k, blas_int(k), b.data() + i * k * n, blas_int(n), 0.0f,
                out.data() + i * m * n, blas_int(n));
  return out;
}

}  // namespace doppler::cpu
