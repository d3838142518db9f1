// CPU kernels that move data: transpose, concat, slice; and reduce_sum.
#include <doppler/runtime/cpu_kernels.hpp>

#include "cpu_common.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace doppler::cpu {

using detail::extent_product;
using detail::norm_axis;
using detail::shape_error;

tensor transpose(const tensor& x, std::span<const std::int64_t> perm) {
  const std::size_t r = x.rank();
  if (perm.size() != r)
    shape_error("transpose", "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  shape_t out_shape(r);
  for (std::size_t i = 0; i < r; ++i) {
    auto p = perm[i];
    if (p < 0 || p >= static_cast<std::int64_t>(r) || seen[static_cast<std::size_t>(p)])
      shape_error("transpose", "perm is not a permutation of the axes of " + to_string(x.shape()));
    seen[static_cast<std::size_t>(p)] = true;
    out_shape[i] = x.shape()[static_cast<std::size_t>(p)];
  }
  tensor out(out_shape);
  if (out.numel() == 0 || r == 0) {
    std::copy_n(x.data(), x.numel(), out.data());
    return out;
  }
  // Input strides, permuted into output axis order: out axis a steps the input by stride[perm[a]].
  std::vector<std::size_t> in_stride(r), step(r);
  in_stride[r - 1] = 1;
  for (std::size_t a = r - 1; a > 0; --a) in_stride[a - 1] = in_stride[a] * static_cast<std::size_t>(x.shape()[a]);
  for (std::size_t a = 0; a < r; ++a) step[a] = in_stride[static_cast<std::size_t>(perm[a])];
  // Odometer over the output's outer axes; the innermost output axis is a strided copy.
  const std::size_t inner = static_cast<std::size_t>(out_shape[r - 1]), inner_step = step[r - 1];
  std::vector<std::size_t> idx(r, 0);
  const float* src = x.data();
  float* dst = out.data();
  std::size_t in_off = 0;
  const std::size_t outer = out.numel() / inner;
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t j = 0; j < inner; ++j) dst[j] = src[in_off + j * inner_step];
    dst += inner;
    for (std::size_t a = r - 1; a-- > 0;) {  // advance the odometer on axes r-2 .. 0
      in_off += step[a];
      if (++idx[a] < static_cast<std::size_t>(out_shape[a])) break;
      in_off -= step[a] * idx[a];
      idx[a] = 0;
    }
  }
  return out;
}

tensor concat(std::span<const tensor* const> xs, std::int64_t axis) {
  if (xs.empty()) shape_error("concat", "needs at least one input");
  const shape_t& first = xs[0]->shape();
  const std::size_t ax = norm_axis("concat", axis, first.size());
  shape_t out_shape = first;
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const shape_t& s = xs[i]->shape();
    bool same = s.size() == first.size();
    for (std::size_t d = 0; same && d < s.size(); ++d) same = d == ax || s[d] == first[d];
    if (!same)
      shape_error("concat", "input " + std::to_string(i) + " " + to_string(s) + " does not match " +
                                to_string(first) + " outside axis " + std::to_string(ax));
    out_shape[ax] += s[ax];
  }
  tensor out(out_shape);
  // Each input contributes a contiguous chunk of (its axis extent × inner) floats per outer index.
  const std::size_t outer = extent_product(first, 0, ax), inner = extent_product(first, ax + 1, first.size());
  const std::size_t out_row = static_cast<std::size_t>(out_shape[ax]) * inner;
  std::size_t col = 0;
  for (const tensor* t : xs) {
    const std::size_t chunk = static_cast<std::size_t>(t->shape()[ax]) * inner;
    for (std::size_t o = 0; o < outer; ++o)
      std::copy_n(t->data() + o * chunk, chunk, out.data() + o * out_row + col);
    col += chunk;
  }
  return out;
}

tensor slice(const tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end) {
  const std::size_t ax = norm_axis("slice", axis, x.rank());
  const std::int64_t len = x.shape()[ax];
  if (start < 0 || end > len || start >= end)
    shape_error("slice", "[" + std::to_string(start) + ", " + std::to_string(end) +
                             ") is not a non-empty range of axis " + std::to_string(ax) + " of " + to_string(x.shape()));
  shape_t out_shape = x.shape();
  out_shape[ax] = end - start;
  tensor out(out_shape);
  const std::size_t outer = extent_product(x.shape(), 0, ax), inner = extent_product(x.shape(), ax + 1, x.rank());
  const std::size_t in_row = static_cast<std::size_t>(len) * inner;
  const std::size_t chunk = static_cast<std::size_t>(end - start) * inner;
  const std::size_t off = static_cast<std::size_t>(start) * inner;
  for (std::size_t o = 0; o < outer; ++o) std::copy_n(x.data() + o * in_row + off, chunk, out.data() + o * chunk);
  return out;
}

tensor reduce_sum(std::span<const tensor* const> xs) {
  if (xs.empty()) shape_error("reduce_sum", "needs at least one input");
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (xs[i]->shape() != xs[0]->shape())
      shape_error("reduce_sum", "input " + std::to_string(i) + " " + to_string(xs[i]->shape()) +
                                    " differs from input 0 " + to_string(xs[0]->shape()));
  tensor out(xs[0]->shape());
  std::copy_n(xs[0]->data(), out.numel(), out.data());
  float* o = out.data();
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const float* p = xs[i]->data();
    for (std::size_t j = 0; j < out.numel(); ++j) o[j] += p[j];
  }
  return out;
}

}  // namespace doppler::cpu
