// Which CPU kernels a doppler process runs with: OpenBLAS's (the CPU backend's matmuls, and
// LibTorch's in doppler-learn) and ATen's. Both libraries pick their kernels per CPU, and OpenBLAS
// does so once, when it loads — before main — so pinning them means setting their variables and
// starting the program again (docs/cpu_backend.md, "BLAS kernels").

#include "commands.hpp"

#include <doppler/runtime/cpu_kernels.hpp>

#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace doppler::cli {

namespace {

constexpr const char* pinned_blas_core = "Haswell";  // OpenBLAS's AVX2 + FMA kernels

/// Pins both libraries to their AVX2 kernels where the CPU has AVX2 and FMA (every x86-64 server of
/// the last decade), for two reasons. Numbers: a trained policy depends on the order of every
/// floating-point sum in it, and the same command and seed trained measurably different policies on
/// a Skylake and on a Sapphire Rapids Xeon (docs/learner.md, "Same numbers on every machine"); pinned,
/// any such machine computes the same numbers. Speed: where a VM hides the CPU's model (its name
/// reads "Intel(R) Xeon(R) Processor"), OpenBLAS 0.3.21 does not recognize it and falls back to its
/// generic SSE3 kernels ("Prescott"): matmul ran at a quarter of the AVX2 kernels' speed and whole
/// runs 2.2x slower (docs/cpu_backend.md, "BLAS kernels"). A variable the user set wins;
/// DOPPLER_NATIVE_KERNELS=1 keeps the libraries' own choice. Returns whether it set OPENBLAS_CORETYPE.
bool pin_cpu_kernels() {
  const char* native = std::getenv("DOPPLER_NATIVE_KERNELS");
  if (native && *native && std::string(native) != "0") return false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  ::setenv("ATEN_CPU_CAPABILITY", "avx2", 0);
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return false;
  ::setenv("OPENBLAS_CORETYPE", pinned_blas_core, 1);
  return true;
#else
  return false;
#endif
}

}  // namespace

void restart_with_pinned_kernels(char** argv) {
  if (!pin_cpu_kernels()) return;
  if (::strcasecmp(cpu::blas_core().c_str(), pinned_blas_core) == 0) return;  // already running them
  // The variable is set now, so the restarted process pins nothing and does not come back here.
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc?): go on with the kernels OpenBLAS chose — slower, and a training's numbers
  // may differ; --version, calibrate, train and run --json say which kernels ran.
}

}  // namespace doppler::cli
