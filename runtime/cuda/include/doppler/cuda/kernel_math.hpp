#pragma once
/// Index arithmetic and scalar math shared by the CUDA kernels and their host-side tests: launch
/// geometry, the add/mul broadcast index, the transpose gather offset, rope's position and angle,
/// the deterministic fill hash and the synthetic loop's round count. Every function is
/// `__host__ __device__` under nvcc and plain inline C++ elsewhere, so the CPU test suite checks the
/// exact code the kernels run. No CUDA header is needed to include this file.

#include <cstdint>

#if defined(__CUDACC__)
#define DOPPLER_HD __host__ __device__ __forceinline__
#else
#define DOPPLER_HD inline
#endif

namespace doppler::cuda {

/// Threads per block of the elementwise kernels.
inline constexpr unsigned elementwise_block = 256;
/// Cap on blocks of a grid-stride launch (enough to fill an H100's 132 SMs many times over).
inline constexpr unsigned max_grid_blocks = 65535;
/// Largest tensor rank the transpose kernel handles.
inline constexpr int max_rank = 8;

/// A 1-D launch: `blocks` blocks of `threads`; kernels loop grid-stride over n elements.
struct launch_1d {
  unsigned blocks = 0;
  unsigned threads = 0;
};

/// Grid for n elements with `block` threads per block: ⌈n / block⌉ blocks capped at `max_blocks`
/// (the kernels stride over the rest); 0 blocks for n = 0, so the launcher skips the launch.
DOPPLER_HD launch_1d grid_for(std::uint64_t n, unsigned block = elementwise_block,
                              unsigned max_blocks = max_grid_blocks) {
  launch_1d g;
  g.threads = block;
  const std::uint64_t b = (n + block - 1) / block;
  g.blocks = static_cast<unsigned>(b < max_blocks ? b : max_blocks);
  return g;
}

/// Threads per block of a row kernel (softmax, rmsnorm: one block per row): the smallest multiple
/// of 32 that covers `len`, clamped to [32, 1024].
DOPPLER_HD unsigned row_block(std::uint64_t len) {
  std::uint64_t t = (len + 31) / 32 * 32;
  if (t < 32) t = 32;
  if (t > 1024) t = 1024;
  return static_cast<unsigned>(t);
}

/// Index of y read for output element i of x op y, y being x's trailing axes (ny elements) or x's
/// whole shape: the leading axes repeat, so it is i mod ny.
DOPPLER_HD std::uint64_t broadcast_index(std::uint64_t i, std::uint64_t ny) { return ny == 0 ? 0 : i % ny; }

/// Geometry of a transpose: output extents and, per output axis a, the input stride of the axis it
/// reads (input axis perm[a]).
struct transpose_geometry {
  int rank = 0;
  std::int64_t out_dims[max_rank] = {};
  std::int64_t src_strides[max_rank] = {};
};

/// Builds the geometry from the input's extents and the permutation (out axis a = in axis perm[a]).
/// Returns false when the rank exceeds `max_rank` or perm is not a permutation.
inline bool make_transpose_geometry(const std::int64_t* in_dims, int rank, const std::int64_t* perm,
                                    transpose_geometry& g) {
  if (rank < 0 || rank > max_rank) return false;
  std::int64_t in_strides[max_rank] = {};
  std::int64_t s = 1;
  for (int a = rank - 1; a >= 0; --a) {
    in_strides[a] = s;
    s *= in_dims[a];
  }
  bool seen[max_rank] = {};
  g.rank = rank;
  for (int a = 0; a < rank; ++a) {
    const std::int64_t p = perm[a];
    if (p < 0 || p >= rank || seen[p]) return false;
    seen[p] = true;
    g.out_dims[a] = in_dims[p];
    g.src_strides[a] = in_strides[p];
  }
  return true;
}

/// Input offset that output element `i` (row-major over out_dims) reads.
DOPPLER_HD std::int64_t transpose_source(std::int64_t i, const transpose_geometry& g) {
  std::int64_t off = 0;
  for (int a = g.rank - 1; a >= 0; --a) {
    const std::int64_t d = g.out_dims[a];
    off += (i % d) * g.src_strides[a];
    i /= d;
  }
  return off;
}

/// Rope position of pair `pair` (index over all pairs of x, d/2 per row): its row's index along
/// axis −2 (`seq` its extent, 1 for a rank-1 x, giving position 0).
DOPPLER_HD std::int64_t rope_position(std::int64_t pair, std::int64_t half, std::int64_t seq) {
  return (pair / half) % seq;
}

/// Rotation angle of pair i (0 ≤ i < d/2) at position p: p · base^(−2i/d), in double as on the CPU.
/// (Callers pass the inverse frequency precomputed on the host when they can.)
DOPPLER_HD double rope_inv_freq_exponent(std::int64_t i, std::int64_t d) {
  return -2.0 * static_cast<double>(i) / static_cast<double>(d);
}

/// splitmix64, the mixer of the CPU backend's fill rule (tensor.cpp): identical bits on the GPU.
DOPPLER_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Element i of `fill_uniform(t, seed, scale)` given base = splitmix64(seed): the same bits as the
/// CPU (24-bit integers make exact floats; the product by 2⁻²⁴ · 2 is exact, one rounding at
/// `scale`).
DOPPLER_HD float fill_value(std::uint64_t base, std::uint64_t i, float scale) {
  const std::uint64_t h = splitmix64(base + i / 2);
  const std::uint64_t bits = (i % 2 == 0) ? (h >> 40) : ((h >> 8) & 0xffffffu);
  constexpr float unit = 1.0f / 16777216.0f;
  const float u = 2.0f * static_cast<float>(bits) * unit;  // exact
  return (u - 1.0f) * scale;
}

/// Rounds of the synthetic loop for `flops` (⌈flops / 512⌉, 0 for flops ≤ 0, saturating), as
/// `cpu::synthetic_compute` counts them.
DOPPLER_HD std::uint64_t synthetic_rounds(double flops) {
  if (!(flops > 0)) return 0;
  const double per_round = 512.0;
  double r = flops / per_round;
  const double fl = static_cast<double>(static_cast<std::uint64_t>(r < 1.8e19 ? r : 1.8e19));
  if (r >= 1.8e19) return ~std::uint64_t(0);
  return static_cast<std::uint64_t>(fl < r ? fl + 1.0 : fl);
}

/// Chunk `k` of a transfer of `bytes` cut into chunks of at most `chunk` bytes: [offset, offset+size).
struct byte_range {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};
/// Number of chunks (at least 1, even for 0 bytes: a transfer always signals completion).
DOPPLER_HD std::uint64_t chunk_count(std::uint64_t bytes, std::uint64_t chunk) {
  if (chunk == 0 || bytes == 0) return 1;
  return (bytes + chunk - 1) / chunk;
}
DOPPLER_HD byte_range chunk_range(std::uint64_t bytes, std::uint64_t chunk, std::uint64_t k) {
  if (chunk == 0) return {0, bytes};
  byte_range r;
  r.offset = k * chunk;
  if (r.offset >= bytes) return {bytes, 0};
  r.size = bytes - r.offset < chunk ? bytes - r.offset : chunk;
  return r;
}

}  // namespace doppler::cuda
