// The host buffer cache behind tensor storage (runtime/include/doppler/runtime/host_buffers.hpp).

#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/host_buffers.hpp>
#include <doppler/runtime/tensor.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

using namespace doppler;

namespace {

/// Every case starts from an empty cache with zeroed counters and a known limit, and restores the
/// limit afterwards (the cache is process-wide).
struct fresh_cache {
  std::size_t saved = host_cache_statistics().limit_bytes;
  explicit fresh_cache(std::size_t limit = std::size_t{256} << 20) {
    trim_host_cache();
    set_host_cache_limit(limit);
    reset_host_cache_counters();
  }
  ~fresh_cache() {
    trim_host_cache();
    set_host_cache_limit(saved);
  }
};

constexpr std::size_t big = std::size_t{1} << 20;  // 1 MiB: well above host_cache_min_bytes

}  // namespace

TEST_CASE("a freed large buffer is handed to the next request of its size") {
  fresh_cache c;
  void* a = host_allocate(big);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  std::memset(a, 7, big);
  host_deallocate(a, big);
  auto s = host_cache_statistics();
  CHECK(s.misses == 1);
  CHECK(s.hits == 0);
  CHECK(s.cached_buffers == 1);
  CHECK(s.cached_bytes == big);
  void* b = host_allocate(big - 100);  // rounds up to the same page count
  CHECK(b == a);
  s = host_cache_statistics();
  CHECK(s.hits == 1);
  CHECK(s.cached_bytes == 0);
  void* d = host_allocate(2 * big);  // another size: a miss
  CHECK(d != a);
  CHECK(host_cache_statistics().misses == 2);
  host_deallocate(b, big - 100);
  host_deallocate(d, 2 * big);
  CHECK(host_cache_statistics().cached_bytes == 3 * big);
}

TEST_CASE("small buffers bypass the cache") {
  fresh_cache c;
  void* a = host_allocate(host_cache_min_bytes - 1);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  host_deallocate(a, host_cache_min_bytes - 1);
  const auto s = host_cache_statistics();
  CHECK(s.hits + s.misses == 0);
  CHECK(s.cached_buffers == 0);
}

TEST_CASE("the cache keeps at most its limit of free bytes and prefers the latest frees") {
  fresh_cache c(3 * big);
  void* a = host_allocate(big);
  void* b = host_allocate(big);
  void* d = host_allocate(2 * big);
  host_deallocate(a, big);
  host_deallocate(b, big);
  CHECK(host_cache_statistics().cached_bytes == 2 * big);
  host_deallocate(d, 2 * big);  // 4 MiB would exceed 3: one 1 MiB buffer is released to make room
  auto s = host_cache_statistics();
  CHECK(s.cached_bytes == 3 * big);
  CHECK(s.cached_buffers == 2);
  CHECK(host_allocate(2 * big) == d);  // the latest free is kept
  host_deallocate(d, 2 * big);
  SUBCASE("a buffer larger than the limit is released, not cached") {
    void* h = host_allocate(4 * big);
    host_deallocate(h, 4 * big);
    CHECK(host_cache_statistics().cached_bytes == 3 * big);
  }
  SUBCASE("lowering the limit releases what exceeds it; 0 disables the cache") {
    set_host_cache_limit(big);
    CHECK(host_cache_statistics().cached_bytes <= big);
    set_host_cache_limit(0);
    CHECK(host_cache_statistics().cached_bytes == 0);
    void* e = host_allocate(big);
    host_deallocate(e, big);
    s = host_cache_statistics();
    CHECK(s.cached_buffers == 0);
  }
}

TEST_CASE("a tensor on a reused buffer is zero-filled and the cache makes repeated runs allocation-free") {
  fresh_cache c;
  {
    tensor t({512, 1024});
    std::fill(t.values().begin(), t.values().end(), 3.0f);
  }
  tensor u({1024, 512});  // same byte count: the buffer just freed, cleared again
  CHECK(host_cache_statistics().hits == 1);
  CHECK(std::all_of(u.values().begin(), u.values().end(), [](float v) { return v == 0.0f; }));

  workload_params p;
  p.dim = 512, p.heads = 8, p.seq = 256;
  const graph g = make_workload("llama-block", p);
  const auto first = execute_reference(g, reference_options{}.with_seed(3).exits_only());
  reset_host_cache_counters();
  const auto second = execute_reference(g, reference_options{}.with_seed(3).exits_only());
  const auto s = host_cache_statistics();
  // Every large buffer of the second run comes from the first run's frees, except as many as the
  // first run's outputs (still held here) occupy.
  const auto held = static_cast<std::size_t>(
      std::count_if(first.begin(), first.end(), [](const tensor& t) { return t.numel() * sizeof(float) >= host_cache_min_bytes; }));
  CHECK(s.hits > 10 * held);
  CHECK(s.misses <= held);
  REQUIRE(first.size() == second.size());
  for (std::size_t i = 0; i < first.size(); ++i) CHECK(bitwise_equal(first[i], second[i]));
}

TEST_CASE("the cache is safe to use from many threads at once") {
  // Two limits: one that forces evictions while the threads run, and one that never does (then a
  // size misses at most once per thread: four threads hold at most four buffers at a time).
  for (const std::size_t limit : {8 * big, 64 * big}) {
    CAPTURE(limit);
    fresh_cache c(limit);
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([t] {
        for (int i = 0; i < 500; ++i) {
          const std::size_t n = big * static_cast<std::size_t>(1 + (i + t) % 3);
          auto* q = static_cast<unsigned char*>(host_allocate(n));
          const auto tag = static_cast<unsigned char>(t + 1);
          q[0] = tag, q[n - 1] = tag;
          std::this_thread::yield();  // a buffer handed to two threads at once would be overwritten here
          CHECK_FALSE((q[0] != tag || q[n - 1] != tag));
          host_deallocate(q, n);
        }
      });
    for (auto& t : ts) t.join();
    const auto s = host_cache_statistics();
    CHECK(s.hits + s.misses == 2000);
    CHECK(s.cached_bytes <= limit);
    if (limit == 64 * big) {
      CHECK(s.hits > 1000);
      CHECK(s.misses <= 12);
    }
  }
}
