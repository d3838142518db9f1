#pragma once
/// A flat open-addressing index from string ids to dense indices, for the id lookups of big graphs
/// (a 1M-op graph resolves ~2M input ids while loading; std::unordered_map's node chains made that
/// the loader's largest cost). The ids themselves live elsewhere: a lookup function maps an index back
/// to its id, so the table stores only hashes and indices.

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace doppler {

class id_index {
 public:
  /// Clears the index and sizes it for `n` ids.
  void reset(std::size_t n) {
    std::size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    slots_.assign(cap, slot{});
    mask_ = cap - 1;
  }

  /// Inserts (id -> index). Returns the index already stored for `id` if there is one (and does not
  /// insert). `id_of(i)` must return the id of index i.
  template <class IdOf>
  std::optional<std::uint32_t> insert(std::string_view id, std::uint32_t index, const IdOf& id_of) {
    auto h = hash(id);
    for (std::size_t s = h & mask_;; s = (s + 1) & mask_) {
      slot& e = slots_[s];
      if (e.index == empty) {
        e = {h, index};
        return std::nullopt;
      }
      if (e.hash == h && id_of(e.index) == id) return e.index;
    }
  }

  template <class IdOf>
  std::optional<std::uint32_t> find(std::string_view id, const IdOf& id_of) const {
    if (slots_.empty()) return std::nullopt;
    auto h = hash(id);
    for (std::size_t s = h & mask_;; s = (s + 1) & mask_) {
      const slot& e = slots_[s];
      if (e.index == empty) return std::nullopt;
      if (e.hash == h && id_of(e.index) == id) return e.index;
    }
  }

 private:
  static constexpr std::uint32_t empty = UINT32_MAX;
  struct slot {  // 8 bytes: a 1M-id index is 16 MB and stays mostly in the last-level cache
    std::uint32_t hash = 0;
    std::uint32_t index = empty;
  };
  static std::uint32_t hash(std::string_view s) noexcept {
    auto h = std::hash<std::string_view>{}(s);
    return static_cast<std::uint32_t>(h ^ (h >> 32));
  }

  std::vector<slot> slots_;
  std::size_t mask_ = 0;
};

}  // namespace doppler
