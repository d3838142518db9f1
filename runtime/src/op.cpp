#include <doppler/runtime/op.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

namespace doppler {

namespace {
constexpr std::array<std::string_view, op_kind_count> kind_names = {
    "input", "matmul", "add",       "mul",    "silu",   "gelu",       "exp",       "scale",
    "softmax", "rmsnorm", "rope", "transpose", "concat", "slice", "reduce_sum", "synthetic"};
constexpr std::array<op_kind, op_kind_count> kinds = {
    op_kind::input,   op_kind::matmul,  op_kind::add,  op_kind::mul,       op_kind::silu,
    op_kind::gelu,    op_kind::exp,     op_kind::scale, op_kind::softmax,  op_kind::rmsnorm,
    op_kind::rope,    op_kind::transpose, op_kind::concat, op_kind::slice, op_kind::reduce_sum,
    op_kind::synthetic};

/// Normalizes a possibly negative axis; -1 if out of range.
std::int64_t norm_axis(std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < 0) axis += r;
  return (axis < 0 || axis >= r) ? -1 : axis;
}

shape_check fail(std::string why) { return {{}, std::move(why)}; }
}  // namespace

std::string_view to_string(op_kind kind) noexcept { return kind_names[static_cast<int>(kind)]; }

std::optional<op_kind> parse_op_kind(std::string_view name) noexcept {
  for (int i = 0; i < op_kind_count; ++i)
    if (kind_names[i] == name) return kinds[i];
  return std::nullopt;
}

std::span<const op_kind> all_op_kinds() noexcept { return kinds; }

std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::bf16: return "bf16";
    case dtype::f16: return "f16";
  }
  return "f32";
}

std::optional<dtype> parse_dtype(std::string_view name) noexcept {
  if (name == "f32") return dtype::f32;
  if (name == "bf16") return dtype::bf16;
  if (name == "f16") return dtype::f16;
  return std::nullopt;
}

std::size_t size_of(dtype t) noexcept { return t == dtype::f32 ? 4 : 2; }

double numel(const shape_t& s) noexcept {
  double n = 1;
  for (auto d : s) n *= static_cast<double>(d);
  return s.empty() ? 0 : n;
}

std::string to_string(const shape_t& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::pair<int, int> arity(op_kind kind) noexcept {
  switch (kind) {
    case op_kind::input: return {0, 0};
    case op_kind::matmul:
    case op_kind::add:
    case op_kind::mul:
    case op_kind::rmsnorm: return {2, 2};
    case op_kind::concat:
    case op_kind::reduce_sum: return {1, -1};
    case op_kind::synthetic: return {0, -1};
    default: return {1, 1};
  }
}

shape_check infer_shape(op_kind kind, std::span<const shape_t* const> in, const op_attrs& a) {
  auto [lo, hi] = arity(kind);
  auto n = static_cast<int>(in.size());
  if (n < lo || (hi >= 0 && n > hi)) {
    std::string want = hi < 0 ? "at least " + std::to_string(lo)
                              : (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi));
    return fail(std::string(to_string(kind)) + " takes " + want + " input(s), got " + std::to_string(n));
  }
  if (kind == op_kind::synthetic || kind == op_kind::input) return {};
  for (int i = 0; i < n; ++i)
    if (in[i]->empty())
      return fail("input " + std::to_string(i) + " has no shape (a synthetic op without `shape` can only feed synthetic ops)");
  const shape_t& x = *in[0];

  switch (kind) {
    case op_kind::matmul: {
      const shape_t& b = *in[1];
      if (x.size() < 2) return fail("matmul input A must have rank >= 2, got " + to_string(x));
      if (b.size() < 2) return fail("matmul input B must have rank >= 2, got " + to_string(b));
      auto k = x[x.size() - 1];
      auto kb = b[b.size() - 2];
      if (k != kb)
        return fail("matmul contraction mismatch: A " + to_string(x) + " has k=" + std::to_string(k) +
                    ", B " + to_string(b) + " has k=" + std::to_string(kb));
      if (b.size() > 2) {
        if (b.size() != x.size() || !std::equal(b.begin(), b.end() - 2, x.begin()))
          return fail("matmul batch axes differ: A " + to_string(x) + ", B " + to_string(b) +
                      " (B must be (k, n) or have A's batch axes)");
      }
      shape_t out(x.begin(), x.end() - 1);
      out.push_back(b.back());
      return {out, {}};
    }
    case op_kind::add:
    case op_kind::mul: {
      const shape_t& y = *in[1];
      bool suffix = y.size() <= x.size() && std::equal(y.begin(), y.end(), x.end() - static_cast<std::ptrdiff_t>(y.size()));
      if (!suffix)
        return fail(std::string(to_string(kind)) + " shapes disagree: " + to_string(x) + " and " + to_string(y) +
                    " (y must equal x or x's trailing axes)");
      return {x, {}};
    }
    case op_kind::silu:
    case op_kind::gelu:
    case op_kind::exp:
    case op_kind::softmax: return {x, {}};
    case op_kind::scale:
      if (!std::isfinite(a.factor)) return fail("scale `factor` must be finite");
      // The kernels multiply in float32: a factor float32 cannot hold became inf or 0 there
      // (1e-10 x 1e39 gave inf for 1e29). 0 itself is fine.
      if (a.factor != 0 && !(std::fabs(a.factor) >= std::numeric_limits<float>::min() &&
                             std::fabs(a.factor) <= std::numeric_limits<float>::max()))
        return fail("scale `factor` " + fmt::format("{:g}", a.factor) +
                    " is outside float32's normal range (1.2e-38 to 3.4e38 in magnitude), in which the kernels compute");
      return {x, {}};
    case op_kind::rmsnorm: {
      const shape_t& w = *in[1];
      if (w.size() != 1 || w[0] != x.back())
        return fail("rmsnorm weight must have shape [" + std::to_string(x.back()) + "], got " + to_string(w));
      return {x, {}};
    }
    case op_kind::rope:
      if (x.back() % 2 != 0) return fail("rope needs an even last axis, got " + to_string(x));
      if (!(a.base > 0) || !std::isfinite(a.base)) return fail("rope `base` must be positive and finite");
      return {x, {}};
    case op_kind::transpose: {
      if (a.perm.size() != x.size())
        return fail("transpose `perm` has " + std::to_string(a.perm.size()) + " entries for an input of rank " +
                    std::to_string(x.size()));
      std::vector<bool> seen(x.size(), false);
      shape_t out(x.size());
      for (std::size_t i = 0; i < a.perm.size(); ++i) {
        auto p = a.perm[i];
        if (p < 0 || p >= static_cast<std::int64_t>(x.size()) || seen[static_cast<std::size_t>(p)])
          return fail("transpose `perm` is not a permutation of 0.." + std::to_string(x.size() - 1));
        seen[static_cast<std::size_t>(p)] = true;
        out[i] = x[static_cast<std::size_t>(p)];
      }
      return {out, {}};
    }
    case op_kind::concat: {
      auto ax = norm_axis(a.axis, x.size());
      if (ax < 0) return fail("concat `axis` " + std::to_string(a.axis) + " out of range for rank " + std::to_string(x.size()));
      shape_t out = x;
      for (int i = 1; i < n; ++i) {
        const shape_t& y = *in[i];
        bool same = y.size() == x.size();
        for (std::size_t d = 0; same && d < x.size(); ++d)
          if (static_cast<std::int64_t>(d) != ax && y[d] != x[d]) same = false;
        if (!same)
          return fail("concat input " + std::to_string(i) + " " + to_string(y) + " does not match input 0 " +
                      to_string(x) + " outside axis " + std::to_string(ax));
        auto& extent = out[static_cast<std::size_t>(ax)];
        if (__builtin_add_overflow(extent, y[static_cast<std::size_t>(ax)], &extent))  // wrapped to a shape that matched
          return fail("concat inputs' axis " + std::to_string(ax) + " extents add up past 64 bits");
      }
      return {out, {}};
    }
    case op_kind::slice: {
      auto ax = norm_axis(a.axis, x.size());
      if (ax < 0) return fail("slice `axis` " + std::to_string(a.axis) + " out of range for rank " + std::to_string(x.size()));
      auto len = x[static_cast<std::size_t>(ax)];
      if (a.start < 0 || a.end > len || a.start >= a.end)
        return fail("slice [" + std::to_string(a.start) + ", " + std::to_string(a.end) + ") is not a non-empty range of axis " +
                    std::to_string(ax) + " (length " + std::to_string(len) + ")");
      shape_t out = x;
      out[static_cast<std::size_t>(ax)] = a.end - a.start;
      return {out, {}};
    }
    case op_kind::reduce_sum:
      for (int i = 1; i < n; ++i)
        if (*in[i] != x)
          return fail("reduce_sum input " + std::to_string(i) + " " + to_string(*in[i]) + " differs from input 0 " + to_string(x));
      return {x, {}};
    default: break;
  }
  return fail("unhandled kind");
}

double derived_flops(op_kind kind, std::span<const shape_t* const> in, const shape_t& out,
                     const op_attrs&) noexcept {
  double m = numel(out);
  switch (kind) {
    case op_kind::input:
    case op_kind::transpose:
    case op_kind::concat:
    case op_kind::slice:
    case op_kind::synthetic: return 0;
    case op_kind::matmul: {
      // out = (..., m, n); k = A's last axis: 2·batch·m·n·k.
      double k = static_cast<double>(in[0]->back());
      return 2.0 * m * k;
    }
    case op_kind::add:
    case op_kind::mul:
    case op_kind::exp:
    case op_kind::scale: return m;
    case op_kind::silu: return 4 * m;
    case op_kind::gelu: return 8 * m;
    case op_kind::softmax: return 5 * m;
    case op_kind::rmsnorm: return 4 * m;
    case op_kind::rope: return 3 * m;
    case op_kind::reduce_sum: return static_cast<double>(in.size() - 1) * m;
  }
  return 0;
}

}  // namespace doppler
