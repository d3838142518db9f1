#pragma once
// FNV-1a, 64 bit (Torch-free): problem fingerprints, checkpoint checksums, the doppler learner's
// problem identity. Internal to the learner library.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace doppler::learner::detail {

class fnv1a {
 public:
  void bytes(const void* data, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 1099511628211ULL;
    }
  }
  template <class T>
  void value(const T& v) { bytes(&v, sizeof v); }
  template <class T>
  void values(const std::vector<T>& v) {
    value(v.size());
    bytes(v.data(), v.size() * sizeof(T));
  }
  /// A string with its length (so that "ab","c" and "a","bc" differ).
  void text(std::string_view s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
  std::uint64_t digest() const { return h_; }

 private:
  std::uint64_t h_ = 1469598103934665603ULL;
};

}  // namespace doppler::learner::detail
