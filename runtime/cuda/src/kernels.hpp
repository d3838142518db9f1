#pragma once
// Private to the CUDA backend: launchers of the kernels in kernels.cu. They depend on CUDA and
// kernel_math.hpp only (kernels.cu compiles as C++17), and return the launch's cudaError_t for the
// caller to check with DOPPLER_CUDA_CHECK. Empty inputs launch nothing and return cudaSuccess.
#include <doppler/cuda/kernel_math.hpp>

#include <cuda_runtime.h>

#include <cstdint>

namespace doppler::cuda::kernels {

/// Elementwise operations of the fused elementwise kernel.
enum class ew : int { add, mul, scale, exp, silu, gelu };

/// out[i] = f(x[i], y[broadcast_index(i, ny)]) for i < n (y may be null for unary ops).
cudaError_t elementwise(ew op, const float* x, const float* y, float* out, std::uint64_t n, std::uint64_t ny,
                 float factor, cudaStream_t s);
/// out[i] += x[i] (reduce_sum's argument-order accumulation).
cudaError_t accumulate(float* out, const float* x, std::uint64_t n, cudaStream_t s);
/// Softmax over rows of length len, one block per row.
cudaError_t softmax(const float* x, float* out, std::uint64_t rows, std::uint64_t len, cudaStream_t s);
/// rmsnorm over rows of length len with weight w (len floats).
cudaError_t rmsnorm(const float* x, const float* w, float* out, std::uint64_t rows, std::uint64_t len, float eps,
             cudaStream_t s);
/// Rope on x viewed as rows × d (d even), positions along axis −2 of extent seq (1 for rank 1);
/// angles p · base^(−2i/d) in double.
cudaError_t rope(const float* x, float* out, std::uint64_t rows, std::uint64_t d, std::uint64_t seq,
                 double base, cudaStream_t s);
/// General transpose.
cudaError_t transpose(const float* x, float* out, std::uint64_t n, const transpose_geometry& g, cudaStream_t s);
/// The fill rule: out[i] = fill_value(splitmix64(seed), i, scale), or 1 for all when ones.
cudaError_t fill(float* out, std::uint64_t n, std::uint64_t seed, float scale, bool ones, cudaStream_t s);
/// The synthetic op: fill out from seed, then run `rounds` rounds of b ← b·a + c over the 256-float
/// buffer seeded from seed ^ 0x5deece66d, written to out's first min(n, 256) floats (bit-identical
/// to the CPU: separate multiply and add, no contraction).
cudaError_t synthetic(float* out, std::uint64_t n, std::uint64_t seed, std::uint64_t rounds, cudaStream_t s);
/// f32 → bf16 (round to nearest even) into `out` (n uint16 values).
cudaError_t to_bf16(const float* x, void* out, std::uint64_t n, cudaStream_t s);

}  // namespace doppler::cuda::kernels
