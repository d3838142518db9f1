#pragma once
// Helpers shared by the CPU kernel files (private to runtime/src).

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/tensor.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace doppler::cpu::detail {

/// Throws the shape error of kernel `kernel`.
[[noreturn]] inline void shape_error(std::string_view kernel, const std::string& why) {
  throw error(errc::shape_mismatch, std::string(kernel) + ": " + why);
}

/// `axis` as an index into a shape of rank `rank` (negative counts from the end); throws if out of
/// range.
inline std::size_t norm_axis(std::string_view kernel, std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    shape_error(kernel, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<std::size_t>(a);
}

/// Product of the extents of s[from, to).
inline std::size_t extent_product(const shape_t& s, std::size_t from, std::size_t to) {
  std::size_t n = 1;
  for (std::size_t i = from; i < to; ++i) n *= static_cast<std::size_t>(s[i]);
  return n;
}

}  // namespace doppler::cpu::detail
