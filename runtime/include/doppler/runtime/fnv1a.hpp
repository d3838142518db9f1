#pragma once
// FNV-1a, 64 bit: a fast, stable, non-cryptographic digest. Used for op seeds (tensor.cpp), the
// learner's problem fingerprints and checkpoint checksums, and the digest of a training's teacher
// file. Its values are written into files (training states, checkpoints), so it must never change.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace doppler {

class fnv1a {
 public:
  /// The standard offset basis (op seeds).
  static constexpr std::uint64_t offset_basis = 14695981039346656037ULL;
  /// The learner's basis: the standard one with its last digit lost in a copy. Problem
  /// fingerprints, checkpoint checksums and the teacher-file digest of every checkpoint and
  /// training state written so far were made with it, so they keep it.
  static constexpr std::uint64_t learner_basis = 1469598103934665603ULL;

  constexpr explicit fnv1a(std::uint64_t basis = offset_basis) noexcept : h_(basis) {}

  void bytes(const void* data, std::size_t n) noexcept {
    const auto* b = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 1099511628211ULL;
    }
  }
  /// The characters of `s`, without its length (op ids, file contents).
  constexpr void chars(std::string_view s) noexcept {
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 1099511628211ULL;
    }
  }
  template <class T>
  void value(const T& v) noexcept { bytes(&v, sizeof v); }
  template <class T>
  void values(const std::vector<T>& v) noexcept {
    value(v.size());
    bytes(v.data(), v.size() * sizeof(T));
  }
  /// A string with its length (so that "ab","c" and "a","bc" differ).
  void text(std::string_view s) noexcept {
    value(s.size());
    chars(s);
  }
  constexpr std::uint64_t digest() const noexcept { return h_; }

 private:
  std::uint64_t h_;
};

}  // namespace doppler
