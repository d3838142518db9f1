// The host buffer cache (host_buffers.hpp): free large buffers kept by page-rounded size.

#include <doppler/runtime/host_buffers.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <cstdio>
#include <mutex>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A cached buffer is poisoned while it waits, so that a use after the tensor that owned it was
// destroyed is still caught under ASan.
#define DOPPLER_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define DOPPLER_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define DOPPLER_POISON(p, n) ((void)(p), (void)(n))
#define DOPPLER_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace doppler {

namespace {

constexpr std::align_val_t buffer_alignment{64};
constexpr std::size_t page = 4096;

std::size_t round_to_page(std::size_t bytes) { return (bytes + page - 1) / page * page; }

std::size_t default_limit() {
  if (const char* env = std::getenv("DOPPLER_HOST_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') return static_cast<std::size_t>(mb) * 1024 * 1024;
    // A malformed value is reported once and the default used, rather than failing every allocation.
    std::fprintf(stderr, "doppler: DOPPLER_HOST_CACHE_MB='%s' is not a whole number of MiB; using the default\n", env);
  }
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return std::size_t{1} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(size) / 4;
}

class cache {
 public:
  cache() : limit_(default_limit()) {}

  void* take(std::size_t bytes) {
    {
      std::lock_guard lock(m_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= bytes;
        --buffers_;
        ++hits_;
        DOPPLER_UNPOISON(p, bytes);
        return p;
      }
      ++misses_;
    }
    return ::operator new(bytes, buffer_alignment);
  }

  void give(void* p, std::size_t bytes) noexcept {
    std::vector<std::pair<void*, std::size_t>> release;
    {
      std::lock_guard lock(m_);
      if (bytes <= limit_) {
        // Make room by releasing buffers of other sizes, largest first: the one just freed is the
        // likeliest to be asked for again (the next run repeats this one's sizes).
        for (auto it = free_.rbegin(); cached_ + bytes > limit_ && it != free_.rend(); ++it) {
          auto& bin = it->second;
          while (!bin.empty() && cached_ + bytes > limit_) {
            release.emplace_back(bin.back(), it->first);
            bin.pop_back();
            cached_ -= it->first;
            --buffers_;
          }
        }
        try {
          free_[bytes].push_back(p);
          cached_ += bytes;
          ++buffers_;
          DOPPLER_POISON(p, bytes);
          p = nullptr;
        } catch (...) {  // no memory for the bookkeeping: release the buffer instead
        }
      }
    }
    for (auto [q, n] : release) {
      DOPPLER_UNPOISON(q, n);
      ::operator delete(q, buffer_alignment);
    }
    if (p) ::operator delete(p, buffer_alignment);
  }

  void set_limit(std::size_t bytes) noexcept {
    {
      std::lock_guard lock(m_);
      limit_ = bytes;
    }
    shrink_to(bytes);
  }

  void shrink_to(std::size_t bytes) noexcept {
    std::vector<std::pair<void*, std::size_t>> release;
    {
      std::lock_guard lock(m_);
      for (auto it = free_.rbegin(); cached_ > bytes && it != free_.rend(); ++it)
        while (!it->second.empty() && cached_ > bytes) {
          release.emplace_back(it->second.back(), it->first);
          it->second.pop_back();
          cached_ -= it->first;
          --buffers_;
        }
    }
    for (auto [q, n] : release) {
      DOPPLER_UNPOISON(q, n);
      ::operator delete(q, buffer_alignment);
    }
  }

  host_cache_stats stats() noexcept {
    std::lock_guard lock(m_);
    return {hits_, misses_, cached_, buffers_, limit_};
  }

  void reset_counters() noexcept {
    std::lock_guard lock(m_);
    hits_ = misses_ = 0;
  }

 private:
  std::mutex m_;
  std::map<std::size_t, std::vector<void*>> free_;  // page-rounded size -> free buffers
  std::size_t cached_ = 0, buffers_ = 0, hits_ = 0, misses_ = 0, limit_;
};

// Never destroyed: tensors in other static objects may be freed after this file's statics are.
cache& the_cache() {
  static cache* c = new cache;
  return *c;
}

}  // namespace

void* host_allocate(std::size_t bytes) {
  if (bytes < host_cache_min_bytes) return ::operator new(std::max<std::size_t>(bytes, 1), buffer_alignment);
  return the_cache().take(round_to_page(bytes));
}

void host_deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes < host_cache_min_bytes) {
    ::operator delete(p, buffer_alignment);
    return;
  }
  the_cache().give(p, round_to_page(bytes));
}

host_cache_stats host_cache_statistics() noexcept { return the_cache().stats(); }
void set_host_cache_limit(std::size_t bytes) noexcept { the_cache().set_limit(bytes); }
void trim_host_cache() noexcept { the_cache().shrink_to(0); }
void reset_host_cache_counters() noexcept { the_cache().reset_counters(); }

}  // namespace doppler
