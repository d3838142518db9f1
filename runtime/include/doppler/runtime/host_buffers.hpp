#pragma once
/// The host buffer cache behind every tensor's storage (docs/cpu_backend.md, "Tensor memory").
///
/// A run allocates each op's output afresh and frees it when its last consumer has read it; the
/// next run allocates the same sizes again. Through plain malloc, buffers of more than 128 KiB are
/// fresh `mmap`s: every page faults in (and is zeroed by the kernel) on first touch and every free
/// is a `munmap` with a TLB shootdown across the device threads. On the CPU backend that was most
/// of a Llama block's makespan (docs/cpu_backend.md: the cache runs it 3.4x faster in one thread,
/// 3.1x on the actor runtime), and how much depended on the process (glibc moves its mmap
/// threshold with the history of frees). Large buffers therefore go through this cache: a freed
/// buffer is kept, by its size rounded up to a page, and handed to the next request of that size
/// — the host counterpart of a GPU runtime's caching allocator. Small buffers go to malloc.
///
/// The cache is process-wide and thread-safe; it holds at most `limit` bytes of free buffers
/// (default: a quarter of physical memory; environment variable DOPPLER_HOST_CACHE_MB overrides
/// it, 0 disables the cache). Buffers in use are not counted against the limit.

#include <cstddef>
#include <limits>
#include <new>

namespace doppler {

/// Buffers smaller than this many bytes bypass the cache (malloc serves them well).
inline constexpr std::size_t host_cache_min_bytes = 64 * 1024;

/// Counters of the host buffer cache since the process started (or the last reset).
struct host_cache_stats {
  std::size_t hits = 0;          // large requests served from the cache
  std::size_t misses = 0;        // large requests that had to allocate
  std::size_t cached_bytes = 0;  // free buffers held now
  std::size_t cached_buffers = 0;
  std::size_t limit_bytes = 0;   // the most free bytes the cache keeps
};

/// Allocates `bytes` (64-byte aligned) from the cache, or fresh when no free buffer of that size
/// is cached. Throws std::bad_alloc when memory is exhausted.
void* host_allocate(std::size_t bytes);
/// Returns a buffer `host_allocate(bytes)` gave (the same `bytes`). Keeps it for reuse while the
/// cache's free bytes stay within the limit (making room by releasing buffers of other sizes),
/// else releases it.
void host_deallocate(void* p, std::size_t bytes) noexcept;
host_cache_stats host_cache_statistics() noexcept;
/// Sets the most free bytes the cache keeps (0: keep none) and releases what exceeds it.
void set_host_cache_limit(std::size_t bytes) noexcept;
/// Releases every cached free buffer to the system.
void trim_host_cache() noexcept;
/// Zeroes the hit and miss counters.
void reset_host_cache_counters() noexcept;

/// A standard allocator over host_allocate/host_deallocate (tensor storage).
template <class T>
struct host_allocator {
  using value_type = T;
  host_allocator() noexcept = default;
  template <class U>
  host_allocator(const host_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(host_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { host_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const host_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace doppler
