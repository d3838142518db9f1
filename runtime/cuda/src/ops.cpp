// enqueue_op: the kernels of one op on one stream. matmul is cuBLAS (f32 SGEMM, or bf16 inputs with
// f32 accumulation via cublasGemmStridedBatchedEx); concat and slice are 2-D async copies; the rest
// are the kernels of kernels.cu. Semantics follow the CPU backend (docs/cpu_backend.md).
#include "device_impl.hpp"

#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/cpu_kernels.hpp>

#include <climits>
#include <string>

namespace doppler::cuda {

namespace {

int as_int(std::uint64_t v, const char* what) {
  if (v > static_cast<std::uint64_t>(INT_MAX))
    throw error(errc::infeasible, std::string("matmul: ") + what + " = " + std::to_string(v) + " exceeds cuBLAS' int range");
  return static_cast<int>(v);
}

std::uint64_t product(const shape_t& s, std::size_t from, std::size_t to) {
  std::uint64_t p = 1;
  for (std::size_t a = from; a < to; ++a) p *= static_cast<std::uint64_t>(s[a]);
  return p;
}

std::size_t norm_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) throw error(errc::bad_value, "axis " + std::to_string(axis) + " out of range");
  return static_cast<std::size_t>(a);
}

/// Row-major C (batch × m × n) = A (batch × m × k) · B (k × n, shared, or batch × k × n): the
/// column-major identity Cᵀ = Bᵀ Aᵀ, so cuBLAS sees (n × k) · (k × m).
void matmul(cuda_device::impl& dev, stream_state& st, const device_tensor& a, const device_tensor& b,
            const device_tensor& c, bool bf16) {
  const shape_t& as = a.shape();
  const shape_t& bs = b.shape();
  const std::uint64_t m = static_cast<std::uint64_t>(as[as.size() - 2]), k = static_cast<std::uint64_t>(as.back());
  const std::uint64_t n = static_cast<std::uint64_t>(bs.back());
  const std::uint64_t batch = product(as, 0, as.size() - 2);
  if (c.numel() == 0) return;
  if (k == 0) {
    DOPPLER_CUDA_CHECK(cudaMemsetAsync(c.data(), 0, c.bytes(), st.stream));
    return;
  }
  const bool batched_b = bs.size() > 2;
  // A shared B folds A's batch into rows: one GEMM of (batch·m) × k · k × n.
  const int rows = as_int(batched_b ? m : batch * m, "rows"), cols = as_int(n, "n"), inner = as_int(k, "k");
  const int count = as_int(batched_b ? batch : 1, "batch");
  const long long sa = static_cast<long long>(m * k), sb = static_cast<long long>(k * n),
                  sc = static_cast<long long>(m * n);
  const float one = 1.0f, zero = 0.0f;
  if (!bf16) {
    DOPPLER_CUBLAS_CHECK(cublasSgemmStridedBatched(st.blas, CUBLAS_OP_N, CUBLAS_OP_N, cols, rows, inner, &one, b.data(),
                                                   cols, sb, a.data(), inner, sa, &zero, c.data(), cols, sc, count));
    return;
  }
  // bf16: round both operands to bf16 in pool buffers, multiply with f32 accumulation into f32 C.
  int index = 0;
  for (std::size_t q = 0; q < dev.streams.size(); ++q)
    if (dev.streams[q].get() == &st) index = static_cast<int>(q);
  std::shared_ptr<void> a16 = dev.alloc(a.numel() * 2, index), b16 = dev.alloc(b.numel() * 2, index);
  DOPPLER_CUDA_CHECK(kernels::to_bf16(a.data(), a16.get(), a.numel(), st.stream));
  DOPPLER_CUDA_CHECK(kernels::to_bf16(b.data(), b16.get(), b.numel(), st.stream));
  DOPPLER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(st.blas, CUBLAS_OP_N, CUBLAS_OP_N, cols, rows, inner, &one,
                                                  b16.get(), CUDA_R_16BF, cols, sb, a16.get(), CUDA_R_16BF, inner, sa,
                                                  &zero, c.data(), CUDA_R_32F, cols, sc, count, CUBLAS_COMPUTE_32F,
                                                  CUBLAS_GEMM_DEFAULT));
  // a16 / b16 are freed stream-ordered after the GEMM when they go out of scope here.
}

/// `rows` rows of `width` floats from `src` (rows `src_pitch` floats apart) to `dst` (`dst_pitch`
/// apart), device to device on `s`. cudaMemcpy2DAsync refuses pitches above the device's maximum
/// (cudaDevAttrMaxPitch, 2^31 - 1 bytes where we have looked): one row is one plain copy, and rows
/// that far apart are copied one by one (they are few: each is over 2 GiB).
void copy_rows(float* dst, std::uint64_t dst_pitch, const float* src, std::uint64_t src_pitch, std::uint64_t width,
               std::uint64_t rows, cudaStream_t s) {
  constexpr std::uint64_t max_pitch = (std::uint64_t(1) << 31) - 1;
  const std::uint64_t b = sizeof(float);
  if (rows == 1) {
    DOPPLER_CUDA_CHECK(cudaMemcpyAsync(dst, src, width * b, cudaMemcpyDeviceToDevice, s));
  } else if (dst_pitch * b <= max_pitch && src_pitch * b <= max_pitch) {
    DOPPLER_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch * b, src, src_pitch * b, width * b, rows,
                                         cudaMemcpyDeviceToDevice, s));
  } else {
    for (std::uint64_t r = 0; r < rows; ++r)
      DOPPLER_CUDA_CHECK(cudaMemcpyAsync(dst + r * dst_pitch, src + r * src_pitch, width * b,
                                         cudaMemcpyDeviceToDevice, s));
  }
}

}  // namespace

void enqueue_op(cuda_device::impl& dev, stream_state& st, const graph& g, op_index i,
                std::span<const device_tensor* const> in, const device_tensor& out, std::uint64_t seed) {
  const op& o = g[i];
  const op_attrs& at = o.attrs;
  const cudaStream_t s = st.stream;
  const std::uint64_t n = out.numel();
  using kernels::ew;
  auto unary = [&](ew kind, float factor) {
    DOPPLER_CUDA_CHECK(kernels::elementwise(kind, in[0]->data(), nullptr, out.data(), n, 0, factor, s));
  };
  auto binary = [&](ew kind) {
    DOPPLER_CUDA_CHECK(kernels::elementwise(kind, in[0]->data(), in[1]->data(), out.data(), n, in[1]->numel(), 1.0f, s));
  };
  switch (o.kind) {
    case op_kind::input: {
      constexpr std::string_view ones = ".ones";
      const bool is_ones = o.id.size() >= ones.size() && o.id.compare(o.id.size() - ones.size(), ones.size(), ones) == 0;
      DOPPLER_CUDA_CHECK(kernels::fill(out.data(), n, op_seed(seed, o.id), input_fill_scale(o.shape), is_ones, s));
      return;
    }
    case op_kind::matmul: return matmul(dev, st, *in[0], *in[1], out, dev.options.matmul_in_bf16(g));
    case op_kind::add: return binary(ew::add);
    case op_kind::mul: return binary(ew::mul);
    case op_kind::silu: return unary(ew::silu, 1.0f);
    case op_kind::gelu: return unary(ew::gelu, 1.0f);
    case op_kind::exp: return unary(ew::exp, 1.0f);
    case op_kind::scale: return unary(ew::scale, static_cast<float>(at.factor));
    case op_kind::softmax:
    case op_kind::rmsnorm: {
      const auto len = static_cast<std::uint64_t>(out.shape().back());
      const std::uint64_t rows = len == 0 ? 0 : n / len;
      if (rows == 0) return;
      if (o.kind == op_kind::softmax) {
        DOPPLER_CUDA_CHECK(kernels::softmax(in[0]->data(), out.data(), rows, len, s));
      } else {
        DOPPLER_CUDA_CHECK(kernels::rmsnorm(in[0]->data(), in[1]->data(), out.data(), rows, len, cpu::rmsnorm_eps, s));
      }
      return;
    }
    case op_kind::rope: {
      const shape_t& xs = out.shape();
      const auto d = static_cast<std::uint64_t>(xs.back());
      const std::uint64_t seq = xs.size() >= 2 ? static_cast<std::uint64_t>(xs[xs.size() - 2]) : 1;
      if (d == 0 || n == 0) return;
      DOPPLER_CUDA_CHECK(kernels::rope(in[0]->data(), out.data(), n / d, d, seq, at.base, s));
      return;
    }
    case op_kind::transpose: {
      transpose_geometry geo;
      const shape_t& xs = in[0]->shape();
      if (at.perm.size() != xs.size() ||
          !make_transpose_geometry(xs.data(), static_cast<int>(xs.size()), at.perm.data(), geo))
        throw error(errc::shape_mismatch, "transpose: rank " + std::to_string(xs.size()) +
                                              " with this permutation is not supported (max rank " +
                                              std::to_string(max_rank) + ")");
      DOPPLER_CUDA_CHECK(kernels::transpose(in[0]->data(), out.data(), n, geo, s));
      return;
    }
    case op_kind::concat: {
      const shape_t& os = out.shape();
      const std::size_t axis = norm_axis(at.axis, os.size());
      const std::uint64_t outer = product(os, 0, axis), inner = product(os, axis + 1, os.size());
      const std::uint64_t row = static_cast<std::uint64_t>(os[axis]) * inner;
      std::uint64_t offset = 0;
      for (const device_tensor* x : in) {
        const std::uint64_t chunk = static_cast<std::uint64_t>(x->shape()[axis]) * inner;
        if (chunk > 0 && outer > 0)
          copy_rows(out.data() + offset, row, x->data(), chunk, chunk, outer, s);
        offset += chunk;
      }
      return;
    }
    case op_kind::slice: {
      const shape_t& xs = in[0]->shape();
      const std::size_t axis = norm_axis(at.axis, xs.size());
      const std::uint64_t outer = product(xs, 0, axis), inner = product(xs, axis + 1, xs.size());
      const std::uint64_t extent = static_cast<std::uint64_t>(xs[axis]);
      const std::uint64_t chunk = static_cast<std::uint64_t>(out.shape()[axis]) * inner;
      const auto start = static_cast<std::uint64_t>(at.start);  // 0 <= start < end <= extent (infer_shape)
      if (chunk > 0 && outer > 0)
        copy_rows(out.data(), chunk, in[0]->data() + start * inner, extent * inner, chunk, outer, s);
      return;
    }
    case op_kind::reduce_sum: {
      if (n == 0) return;
      DOPPLER_CUDA_CHECK(cudaMemcpyAsync(out.data(), in[0]->data(), out.bytes(), cudaMemcpyDeviceToDevice, s));
      for (std::size_t a = 1; a < in.size(); ++a) DOPPLER_CUDA_CHECK(kernels::accumulate(out.data(), in[a]->data(), n, s));
      return;
    }
    case op_kind::synthetic:
      DOPPLER_CUDA_CHECK(kernels::synthetic(out.data(), n, op_seed(seed, o.id), synthetic_rounds(o.flops), s));
      return;
  }
  throw error(errc::internal, "unhandled op kind");
}

}  // namespace doppler::cuda
