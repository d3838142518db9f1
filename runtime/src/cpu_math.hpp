#pragma once
// Vectorizable float math for the CPU kernels (private to runtime/src).

#include <bit>
#include <cstdint>

namespace doppler::cpu::detail {

/// e^x in float, written so compilers vectorize loops that call it (no libm call, no branches):
/// Cephes' expf — x = n·ln2 + r with |r| ≤ ln2/2, a degree-7 polynomial for e^r, 2^n built in the
/// exponent bits. Relative error ≤ 2 ulp on [-87, 88]; x < -87.33 gives 0, x > 88.72 gives +inf,
/// NaN gives NaN.
inline float exp_approx(float x) noexcept {
  constexpr float hi = 88.72283905206835f, lo = -87.33654475055310f;
  constexpr float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440e-4f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  // n = round(xc · log2e) via truncation, corrected for negative values (SSE2 has no floor).
  float v = xc * log2e + 0.5f;
  auto n = static_cast<std::int32_t>(v);
  n -= static_cast<float>(n) > v ? 1 : 0;
  const float fn = static_cast<float>(n);
  const float r = (xc - fn * c1) - fn * c2;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n for n in [-126, 128): scale in two steps so n = 128 (x near hi) does not overflow the bits.
  const std::int32_t n1 = n >> 1, n2 = n - n1;
  const float s1 = std::bit_cast<float>(static_cast<std::uint32_t>(n1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<std::uint32_t>(n2 + 127) << 23);
  float y = p * s1 * s2;
  y = x > hi ? __builtin_inff() : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;  // NaN in, NaN out
}

}  // namespace doppler::cpu::detail
