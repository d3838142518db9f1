#pragma once
/// The CPU backend's kernels, one function per op kind (`doppler-graph/1`, docs/formats.md). Each
/// takes its input tensors and attributes, checks their shapes (a mismatch throws
/// `error(shape_mismatch)`), and returns a new output tensor. All run on the calling thread only:
/// matmul calls OpenBLAS pinned to one thread, so several device workers never oversubscribe cores.
/// Numerics (eps, gelu form, rope pairing) are in docs/cpu_backend.md.

#include <doppler/runtime/tensor.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace doppler::cpu {

/// rmsnorm's epsilon: y = x / sqrt(mean(x²) + eps) · w.
inline constexpr float rmsnorm_eps = 1e-6f;
/// Floats in the buffer a `synthetic` kernel computes on (1 KiB: stays in L1).
inline constexpr std::size_t synthetic_buffer = 256;

/// A (..., m, k) · B (k, n) or (..., k, n) with A's batch axes → (..., m, n). OpenBLAS sgemm, one
/// call for a shared 2-D B (batch folded into rows), one per batch entry otherwise.
tensor matmul(const tensor& a, const tensor& b);

/// Pins OpenBLAS to one thread (a no-op when it already is). OpenBLAS's thread count is process-wide
/// and changes float summation order: matmul calls it, and so does the learner (LibTorch's CPU
/// matmuls go through the same OpenBLAS), so a policy computes the same numbers — and the same
/// greedy placement — whether or not a CPU-backend run came first in the process.
void pin_blas_to_one_thread();
/// The kernel set OpenBLAS chose when it loaded (`openblas_get_corename`: "Haswell", "SkylakeX",
/// "Zen", ... — "Prescott" is its generic SSE3 fallback where it does not recognize the CPU). It
/// chooses once, before main, from the CPU or from OPENBLAS_CORETYPE (docs/cpu_backend.md, "BLAS kernels").
std::string blas_core();

/// x + y, y equal to x's shape or to x's trailing axes (broadcast over x's leading axes).
tensor add(const tensor& x, const tensor& y);
/// x · y elementwise, with add's broadcast.
tensor mul(const tensor& x, const tensor& y);
/// x · sigmoid(x) = x / (1 + e^−x).
tensor silu(const tensor& x);
/// 0.5 x (1 + tanh(z)), z = sqrt(2/π) (x + 0.044715 x³) (the tanh approximation), evaluated as
/// x / (1 + e^(−2z)), the same function.
tensor gelu(const tensor& x);
/// e^x elementwise. Every exp of the kernels (silu, gelu, softmax too) is a vectorizable Cephes-style
/// polynomial, within 2 ulp of std::exp; results below e^−87.3 flush to 0.
tensor exp(const tensor& x);
/// x · factor.
tensor scale(const tensor& x, double factor);
/// Softmax over the last axis, stable: exp(x − max) / Σ exp(x − max), sums in double.
tensor softmax(const tensor& x);
/// x / sqrt(mean over the last axis of x² + eps) · w, w of the last axis' length.
tensor rmsnorm(const tensor& x, const tensor& w, float eps = rmsnorm_eps);
/// Rotary embedding: adjacent pairs (x[2i], x[2i+1]) of the last axis (length d) rotate by the
/// angle p · base^(−2i/d), p the index along axis −2 (0 for a rank-1 x). Angles in double.
tensor rope(const tensor& x, double base = 10000.0);
/// out[i0, …] = x[j…] with out axis a = x axis perm[a].
tensor transpose(const tensor& x, std::span<const std::int64_t> perm);
/// Concatenation along `axis` (negative counts from the end); inputs equal outside it.
tensor concat(std::span<const tensor* const> xs, std::int64_t axis);
/// [start, end) along `axis` (negative counts from the end).
tensor slice(const tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end);
/// Elementwise sum of equally shaped tensors, added in argument order.
tensor reduce_sum(std::span<const tensor* const> xs);

/// Runs ⌈flops / (2 · synthetic_buffer)⌉ rounds of a multiply-add over `buf` (each round costs
/// 2 · synthetic_buffer FLOPs and depends on the previous one) and returns the number of rounds.
/// Values stay bounded (a contraction towards c / (1 − a), |c| ≤ 1e-3).
std::uint64_t synthetic_compute(double flops, std::span<float, synthetic_buffer> buf) noexcept;
/// A synthetic op's kernel: runs `synthetic_compute(flops)` on a buffer seeded from `seed` and
/// returns a tensor of `shape` filled uniformly from `seed`, whose first elements are overwritten by
/// the computed buffer (so the loop cannot be optimized away and the output is deterministic).
tensor synthetic(double flops, const shape_t& shape, std::uint64_t seed);

}  // namespace doppler::cpu
