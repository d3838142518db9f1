// CPU kernels: elementwise ops, softmax, rmsnorm, rope, synthetic (matmul in cpu_matmul.cpp, data
// movement in cpu_layout.cpp).
#include <doppler/runtime/cpu_kernels.hpp>

#include "cpu_common.hpp"
#include "cpu_math.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <tuple>
#include <vector>

namespace doppler::cpu {

using detail::exp_approx;
using detail::shape_error;

namespace {

/// x op y with y broadcast over x's leading axes (y's shape equals x's trailing axes).
template <class Op>
tensor broadcast_binary(std::string_view kernel, const tensor& x, const tensor& y, Op f) {
  const shape_t& xs = x.shape();
  const shape_t& ys = y.shape();
  bool suffix = ys.size() <= xs.size() &&
                std::equal(ys.begin(), ys.end(), xs.end() - static_cast<std::ptrdiff_t>(ys.size()));
  if (!suffix)
    shape_error(kernel, "y " + to_string(ys) + " must equal x " + to_string(xs) + " or its trailing axes");
  tensor out(xs);
  const std::size_t n = x.numel(), ny = y.numel();
  const float* px = x.data();
  const float* py = y.data();
  float* po = out.data();
  if (ny == 0) return out;
  for (std::size_t off = 0; off < n; off += ny)
    for (std::size_t j = 0; j < ny; ++j) po[off + j] = f(px[off + j], py[j]);
  return out;
}

template <class Op>
tensor unary_map(const tensor& x, Op f) {
  tensor out(x.shape());
  const float* px = x.data();
  float* po = out.data();
  for (std::size_t i = 0; i < x.numel(); ++i) po[i] = f(px[i]);
  return out;
}

/// Rows of the last axis: {row count, row length}; throws for a rank-0 tensor.
std::pair<std::size_t, std::size_t> rows_of(std::string_view kernel, const tensor& x) {
  if (x.rank() == 0) shape_error(kernel, "needs rank >= 1");
  auto len = static_cast<std::size_t>(x.shape().back());
  return {len == 0 ? 0 : x.numel() / len, len};
}

/// Σ p[j]² (square = true) or Σ p[j] over n floats, in double with four independent partial sums.
template <bool square>
double sum_double(const float* p, std::size_t n) noexcept {
  double s[4] = {0, 0, 0, 0};
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (std::size_t u = 0; u < 4; ++u) s[u] += square ? double(p[j + u]) * double(p[j + u]) : double(p[j + u]);
  for (; j < n; ++j) s[0] += square ? double(p[j]) * double(p[j]) : double(p[j]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/// The (cos, sin) table of rope for `seq` positions × d/2 pairs, cached per thread (the last 8
/// distinct (seq, d, base) keys), so repeated runs of a graph do not recompute the trigonometry.
const std::vector<float>& rope_table(std::size_t seq, std::size_t d, double base) {
  struct entry {
    std::size_t seq, d;
    double base;
    std::vector<float> cs;
  };
  thread_local std::deque<entry> cache;
  for (const entry& e : cache)
    if (e.seq == seq && e.d == d && e.base == base) return e.cs;
  const std::size_t half = d / 2;
  std::vector<float> cs(seq * half * 2);
  std::vector<double> inv_freq(half);
  for (std::size_t i = 0; i < half; ++i) inv_freq[i] = std::pow(base, -2.0 * double(i) / double(d));
  for (std::size_t p = 0; p < seq; ++p)
    for (std::size_t i = 0; i < half; ++i) {
      const double theta = double(p) * inv_freq[i];
      cs[(p * half + i) * 2] = static_cast<float>(std::cos(theta));
      cs[(p * half + i) * 2 + 1] = static_cast<float>(std::sin(theta));
    }
  if (cache.size() == 8) cache.pop_front();
  cache.push_back({seq, d, base, std::move(cs)});
  return cache.back().cs;
}

/// v / (1 + e), silu's and gelu's form; at v = −inf its limit −0 (−inf / (1 + inf) is NaN), and a
/// NaN stays NaN.
float over_one_plus(float v, float e) {
  return v == -std::numeric_limits<float>::infinity() ? -0.0f : v / (1.0f + e);
}

}  // namespace

tensor add(const tensor& x, const tensor& y) {
  return broadcast_binary("add", x, y, [](float a, float b) { return a + b; });
}

tensor mul(const tensor& x, const tensor& y) {
  return broadcast_binary("mul", x, y, [](float a, float b) { return a * b; });
}

tensor silu(const tensor& x) {
  return unary_map(x, [](float v) { return over_one_plus(v, exp_approx(-v)); });
}

tensor gelu(const tensor& x) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
  // 0.5 (1 + tanh z) = 1 / (1 + e^(−2z)): one exp, no tanh.
  return unary_map(x, [](float v) { return over_one_plus(v, exp_approx(-2.0f * k * (v + 0.044715f * v * v * v))); });
}

tensor exp(const tensor& x) {
  return unary_map(x, [](float v) { return exp_approx(v); });
}

tensor scale(const tensor& x, double factor) {
  const auto f = static_cast<float>(factor);
  return unary_map(x, [f](float v) { return v * f; });
}

tensor softmax(const tensor& x) {
  auto [rows, len] = rows_of("softmax", x);
  tensor out(x.shape());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * len;
    float* o = out.data() + r * len;
    float m = *std::max_element(in, in + len);
    for (std::size_t j = 0; j < len; ++j) o[j] = exp_approx(in[j] - m);
    const auto inv = static_cast<float>(1.0 / sum_double<false>(o, len));
    for (std::size_t j = 0; j < len; ++j) o[j] *= inv;
  }
  return out;
}

tensor rmsnorm(const tensor& x, const tensor& w, float eps) {
  auto [rows, len] = rows_of("rmsnorm", x);
  if (w.rank() != 1 || static_cast<std::size_t>(w.shape()[0]) != len)
    shape_error("rmsnorm", "weight " + to_string(w.shape()) + " must be [" + std::to_string(len) + "]");
  tensor out(x.shape());
  const float* pw = w.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * len;
    float* o = out.data() + r * len;
    const double ss = sum_double<true>(in, len);
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / double(len) + double(eps)));
    for (std::size_t j = 0; j < len; ++j) o[j] = in[j] * inv * pw[j];
  }
  return out;
}

tensor rope(const tensor& x, double base) {
  auto [rows, d] = rows_of("rope", x);
  if (d % 2 != 0) shape_error("rope", "last axis of " + to_string(x.shape()) + " must be even");
  if (!(base > 0) || !std::isfinite(base)) shape_error("rope", "base must be positive and finite");
  const std::size_t seq = x.rank() >= 2 ? static_cast<std::size_t>(x.dim(-2)) : 1;
  const std::size_t half = d / 2;
  const std::vector<float>& cs = rope_table(seq, half * 2, base);
  tensor out(x.shape());
  for (std::size_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * d;
    float* o = out.data() + r * d;
    const float* t = cs.data() + (r % seq) * half * 2;
    for (std::size_t i = 0; i < half; ++i) {
      const float c = t[2 * i], s = t[2 * i + 1];
      const float a = in[2 * i], b = in[2 * i + 1];
      o[2 * i] = a * c - b * s;
      o[2 * i + 1] = a * s + b * c;
    }
  }
  return out;
}

std::uint64_t synthetic_compute(double flops, std::span<float, synthetic_buffer> buf) noexcept {
  if (!(flops > 0)) return 0;
  constexpr double per_round = 2.0 * synthetic_buffer;
  const double r = std::ceil(flops / per_round);
  const auto rounds = r >= 1.8e19 ? std::uint64_t(-1) : static_cast<std::uint64_t>(r);
  // b ← b · a + c contracts towards c / (1 − a) = 1024 c; with |c| ≤ 1e-3 every value stays ≤ ~1.
  constexpr float a = 0.9990234375f;  // 1 − 2^-10, exact
  float c[synthetic_buffer];
  for (std::size_t i = 0; i < synthetic_buffer; ++i) c[i] = buf[i] * 1e-3f;
  float* b = buf.data();
  for (std::uint64_t k = 0; k < rounds; ++k)
    for (std::size_t i = 0; i < synthetic_buffer; ++i) b[i] = b[i] * a + c[i];
  return rounds;
}

tensor synthetic(double flops, const shape_t& shape, std::uint64_t seed) {
  tensor buf_t(shape_t{static_cast<std::int64_t>(synthetic_buffer)});
  fill_uniform(buf_t, seed ^ 0x5deece66dULL);
  std::span<float, synthetic_buffer> buf(buf_t.data(), synthetic_buffer);
  synthetic_compute(flops, buf);
  tensor out(shape);
  fill_uniform(out, seed);
  std::copy_n(buf.begin(), std::min(out.numel(), synthetic_buffer), out.data());
  return out;
}

}  // namespace doppler::cpu
