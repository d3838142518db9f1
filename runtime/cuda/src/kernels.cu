// The CUDA kernels of doppler's GPU backend: one fused elementwise kernel (add, mul with the
// leading-axes broadcast, scale, exp, silu, gelu), row kernels (softmax, rmsnorm: one block per
// row), rope, a general transpose, the deterministic fill, the synthetic FLOP loop and the bf16
// conversion. Index math comes from kernel_math.hpp (shared with the host tests). matmul is cuBLAS
// (device.cpp); concat and slice are cudaMemcpy2DAsync copies.
#include "kernels.hpp"

#include <cuda_bf16.h>

namespace doppler::cuda::kernels {
namespace {

/// x / (1 + e), silu's and gelu's form; at x = −inf its limit −0 (−inf / (1 + inf) is NaN), as on
/// the CPU (cpu_kernels.cpp).
__device__ __forceinline__ float over_one_plus(float x, float e) { return x == -INFINITY ? -0.0f : x / (1.0f + e); }

__device__ __forceinline__ float apply(ew op, float x, float y, float factor) {
  switch (op) {
    case ew::add: return x + y;
    case ew::mul: return x * y;
    case ew::scale: return x * factor;
    case ew::exp: return expf(x);
    case ew::silu: return over_one_plus(x, expf(-x));
    case ew::gelu: {
      const float k = 0.7978845608028654f;  // sqrt(2 / pi); 0.5 (1 + tanh z) = 1 / (1 + e^(−2z))
      return over_one_plus(x, expf(-2.0f * k * (x + 0.044715f * x * x * x)));
    }
  }
  return x;
}

__global__ void elementwise_kernel(ew op, const float* __restrict__ x, const float* __restrict__ y,
                                   float* __restrict__ out, std::uint64_t n, std::uint64_t ny, float factor) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float yv = y ? y[broadcast_index(i, ny)] : 0.0f;
    out[i] = apply(op, x[i], yv, factor);
  }
}

__global__ void accumulate_kernel(float* __restrict__ out, const float* __restrict__ x, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = __fadd_rn(out[i], x[i]);
}

/// Block-wide reduction (sum or max) of one float per thread; every thread gets the result.
template <bool Max>
__device__ float block_reduce(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  __syncthreads();  // `shared` may still be read from a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : (Max ? -INFINITY : 0.0f);
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  return v;
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ out, std::uint64_t len) {
  __shared__ float shared[32];
  const float* in = x + std::uint64_t(blockIdx.x) * len;
  float* o = out + std::uint64_t(blockIdx.x) * len;
  float m = -INFINITY;
  for (std::uint64_t j = threadIdx.x; j < len; j += blockDim.x) m = fmaxf(m, in[j]);
  m = block_reduce<true>(m, shared);
  float sum = 0.0f;
  for (std::uint64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float e = expf(in[j] - m);
    o[j] = e;
    sum += e;
  }
  sum = block_reduce<false>(sum, shared);
  const float inv = 1.0f / sum;
  for (std::uint64_t j = threadIdx.x; j < len; j += blockDim.x) o[j] *= inv;
}

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                               std::uint64_t len, float eps) {
  __shared__ float shared[32];
  const float* in = x + std::uint64_t(blockIdx.x) * len;
  float* o = out + std::uint64_t(blockIdx.x) * len;
  float ss = 0.0f;
  for (std::uint64_t j = threadIdx.x; j < len; j += blockDim.x) ss += in[j] * in[j];
  ss = block_reduce<false>(ss, shared);
  const float inv = rsqrtf(ss / static_cast<float>(len) + eps);
  for (std::uint64_t j = threadIdx.x; j < len; j += blockDim.x) o[j] = in[j] * inv * w[j];
}

__global__ void rope_kernel(const float* __restrict__ x, float* __restrict__ out, std::uint64_t pairs,
                            std::uint64_t half, std::uint64_t seq, double base) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t k = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < pairs; k += stride) {
    const auto p = rope_position(static_cast<std::int64_t>(k), static_cast<std::int64_t>(half),
                                 static_cast<std::int64_t>(seq));
    double sn, cs;
    const double inv_freq = pow(base, rope_inv_freq_exponent(static_cast<std::int64_t>(k % half),
                                                             static_cast<std::int64_t>(2 * half)));
    sincos(static_cast<double>(p) * inv_freq, &sn, &cs);
    const float c = static_cast<float>(cs), s = static_cast<float>(sn);
    const float a = x[2 * k], b = x[2 * k + 1];
    out[2 * k] = a * c - b * s;
    out[2 * k + 1] = a * s + b * c;
  }
}

__global__ void transpose_kernel(const float* __restrict__ x, float* __restrict__ out, std::uint64_t n,
                                 transpose_geometry g) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = x[transpose_source(static_cast<std::int64_t>(i), g)];
}

__global__ void fill_kernel(float* __restrict__ out, std::uint64_t n, std::uint64_t base, float scale, bool ones) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = ones ? 1.0f : fill_value(base, i, scale);
}

/// One block of 256 threads, thread i owns buffer element i: the CPU's exact operation order.
__global__ void synthetic_kernel(float* __restrict__ out, std::uint64_t n, std::uint64_t buf_base,
                                 std::uint64_t rounds) {
  const unsigned i = threadIdx.x;
  float b = fill_value(buf_base, i, 1.0f);
  const float c = __fmul_rn(b, 1e-3f);
  const float a = 0.9990234375f;  // 1 − 2^-10
  for (std::uint64_t k = 0; k < rounds; ++k) b = __fadd_rn(__fmul_rn(b, a), c);
  if (i < n) out[i] = b;
}

__global__ void bf16_kernel(const float* __restrict__ x, __nv_bfloat16* __restrict__ out, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = __float2bfloat16_rn(x[i]);
}

}  // namespace

cudaError_t elementwise(ew op, const float* x, const float* y, float* out, std::uint64_t n, std::uint64_t ny, float factor,
                 cudaStream_t s) {
  const launch_1d g = grid_for(n);
  if (g.blocks == 0) return cudaSuccess;
  elementwise_kernel<<<g.blocks, g.threads, 0, s>>>(op, x, y, out, n, ny, factor);
  return cudaGetLastError();
}

cudaError_t accumulate(float* out, const float* x, std::uint64_t n, cudaStream_t s) {
  const launch_1d g = grid_for(n);
  if (g.blocks == 0) return cudaSuccess;
  accumulate_kernel<<<g.blocks, g.threads, 0, s>>>(out, x, n);
  return cudaGetLastError();
}

cudaError_t softmax(const float* x, float* out, std::uint64_t rows, std::uint64_t len, cudaStream_t s) {
  for (std::uint64_t r0 = 0; r0 < rows; r0 += 2147483647ULL) {  // gridDim.x limit
    const std::uint64_t r = rows - r0 < 2147483647ULL ? rows - r0 : 2147483647ULL;
    softmax_kernel<<<static_cast<unsigned>(r), row_block(len), 0, s>>>(x + r0 * len, out + r0 * len, len);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t rmsnorm(const float* x, const float* w, float* out, std::uint64_t rows, std::uint64_t len, float eps,
             cudaStream_t s) {
  for (std::uint64_t r0 = 0; r0 < rows; r0 += 2147483647ULL) {
    const std::uint64_t r = rows - r0 < 2147483647ULL ? rows - r0 : 2147483647ULL;
    rmsnorm_kernel<<<static_cast<unsigned>(r), row_block(len), 0, s>>>(x + r0 * len, w, out + r0 * len, len, eps);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t rope(const float* x, float* out, std::uint64_t rows, std::uint64_t d, std::uint64_t seq, double base,
          cudaStream_t s) {
  const std::uint64_t pairs = rows * (d / 2);
  const launch_1d g = grid_for(pairs);
  if (g.blocks == 0) return cudaSuccess;
  rope_kernel<<<g.blocks, g.threads, 0, s>>>(x, out, pairs, d / 2, seq, base);
  return cudaGetLastError();
}

cudaError_t transpose(const float* x, float* out, std::uint64_t n, const transpose_geometry& geo, cudaStream_t s) {
  const launch_1d g = grid_for(n);
  if (g.blocks == 0) return cudaSuccess;
  transpose_kernel<<<g.blocks, g.threads, 0, s>>>(x, out, n, geo);
  return cudaGetLastError();
}

cudaError_t fill(float* out, std::uint64_t n, std::uint64_t seed, float scale, bool ones, cudaStream_t s) {
  const launch_1d g = grid_for(n);
  if (g.blocks == 0) return cudaSuccess;
  fill_kernel<<<g.blocks, g.threads, 0, s>>>(out, n, splitmix64(seed), scale, ones);
  return cudaGetLastError();
}

cudaError_t synthetic(float* out, std::uint64_t n, std::uint64_t seed, std::uint64_t rounds, cudaStream_t s) {
  if (const cudaError_t e = fill(out, n, seed, 1.0f, false, s); e != cudaSuccess) return e;
  if (n == 0) return cudaSuccess;
  synthetic_kernel<<<1, 256, 0, s>>>(out, n, splitmix64(seed ^ 0x5deece66dULL), rounds);
  return cudaGetLastError();
}

cudaError_t to_bf16(const float* x, void* out, std::uint64_t n, cudaStream_t s) {
  const launch_1d g = grid_for(n);
  if (g.blocks == 0) return cudaSuccess;
  bf16_kernel<<<g.blocks, g.threads, 0, s>>>(x, static_cast<__nv_bfloat16*>(out), n);
  return cudaGetLastError();
}

}  // namespace doppler::cuda::kernels
