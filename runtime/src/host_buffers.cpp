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
    {
      std::lock_guard lock(m_);
      if (bytes <= limit_) {
        // Make room among the other buffers: the one just freed is the likeliest to be asked for
        // again (the next run repeats this one's sizes).
        evict_to(limit_ - bytes);
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
    if (p) ::operator delete(p, buffer_alignment);
  }

  void set_limit(std::size_t bytes) noexcept {
    std::lock_guard lock(m_);
    limit_ = bytes;
    evict_to(bytes);
  }

  void trim() noexcept {
    std::lock_guard lock(m_);
    evict_to(0);
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
  /// Releases cached buffers, largest first, until at most `target` bytes are cached. Called with
  /// m_ held (eviction is rare: only when the cache is full or its limit drops).
  void evict_to(std::size_t target) noexcept {
    for (auto it = free_.rbegin(); cached_ > target && it != free_.rend(); ++it)
      while (!it->second.empty() && cached_ > target) {
        void* q = it->second.back();
        it->second.pop_back();
        cached_ -= it->first;
        --buffers_;
        DOPPLER_UNPOISON(q, it->first);
        ::operator delete(q, buffer_alignment);
      }
  }

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
void trim_host_cache() noexcept { the_cache().trim(); }
void reset_host_cache_counters() noexcept { the_cache().reset_counters(); }

}  // namespace doppler
