#include <doppler/runtime/error.hpp>
#include <doppler/runtime/fnv1a.hpp>
#include <doppler/runtime/tensor.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace doppler {

std::size_t element_count(const shape_t& s) {
  std::size_t n = 1;
  for (auto e : s) {
    if (e < 0) throw error(errc::bad_value, "negative tensor extent in " + to_string(s));
    n *= static_cast<std::size_t>(e);
  }
  return n;
}

tensor::tensor(shape_t shape) : shape_(std::move(shape)), data_(element_count(shape_), 0.0f) {}

tensor::tensor(shape_t shape, std::vector<float> values)
    : shape_(std::move(shape)), data_(values.begin(), values.end()) {
  if (data_.size() != element_count(shape_))
    throw error(errc::shape_mismatch, std::to_string(data_.size()) + " values for a tensor of shape " +
                                          to_string(shape_));
}

std::int64_t tensor::dim(std::int64_t axis) const {
  auto r = static_cast<std::int64_t>(shape_.size());
  std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw error(errc::bad_argument, "axis " + std::to_string(axis) + " out of range for shape " + to_string(shape_));
  return shape_[static_cast<std::size_t>(a)];
}

bool bitwise_equal(const tensor& a, const tensor& b) noexcept {
  return a.shape() == b.shape() &&
         (a.numel() == 0 || std::memcmp(a.data(), b.data(), a.numel() * sizeof(float)) == 0);
}

double max_abs_diff(const tensor& a, const tensor& b) noexcept {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < a.numel(); ++i) {
    double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return d;  // a NaN on either side is the answer: no later value may hide it
    if (d > m) m = d;
  }
  return m;
}

double max_rel_diff(const tensor& a, const tensor& ref) noexcept {
  const double diff = max_abs_diff(a, ref);
  if (!std::isfinite(diff)) return std::numeric_limits<double>::infinity();
  double peak = 0;
  for (float v : ref.values()) peak = std::max(peak, std::fabs(double(v)));
  return diff / std::max(peak, 1e-30);
}

bool all_finite(const tensor& t) noexcept {
  for (float v : t.values())
    if (!std::isfinite(v)) return false;
  return true;
}

namespace {

constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t op_seed(std::uint64_t run_seed, std::string_view op_id) noexcept {
  fnv1a h;
  h.chars(op_id);
  return splitmix64(splitmix64(run_seed) ^ h.digest());
}

void fill_uniform(tensor& t, std::uint64_t seed, float scale) noexcept {
  // One 64-bit hash per pair of elements: element 2j takes bits 40..63 of splitmix64(base + j),
  // element 2j + 1 bits 8..31; 24 bits make a float in [0, 1) exactly, mapped to [-1, 1).
  float* p = t.data();
  const std::size_t n = t.numel();
  const std::uint64_t base = splitmix64(seed);
  constexpr float unit = 1.0f / 16777216.0f;
  auto value = [scale](std::uint64_t bits24) { return (2.0f * static_cast<float>(bits24) * unit - 1.0f) * scale; };
  for (std::size_t j = 0; 2 * j < n; ++j) {
    const std::uint64_t h = splitmix64(base + j);
    p[2 * j] = value(h >> 40);
    if (2 * j + 1 < n) p[2 * j + 1] = value((h >> 8) & 0xffffffu);
  }
}

float input_fill_scale(const shape_t& shape) noexcept {
  double n = shape.empty() || shape.back() <= 0 ? 1.0 : static_cast<double>(shape.back());
  return static_cast<float>(std::sqrt(3.0 / n));
}

tensor make_input(std::string_view id, const shape_t& shape, std::uint64_t run_seed) {
  tensor t(shape);
  constexpr std::string_view ones = ".ones";
  if (id.size() >= ones.size() && id.substr(id.size() - ones.size()) == ones) {
    for (float& v : t.values()) v = 1.0f;
  } else {
    fill_uniform(t, op_seed(run_seed, id), input_fill_scale(shape));
  }
  return t;
}

}  // namespace doppler
