// CPU backend kernels, one thread. Baselines in the same run: matmul (OpenBLAS sgemm) against a
// textbook i-j-k triple loop and a loop-reordered i-k-j one; elementwise kernels (which allocate
// their output) against memcpy of the same bytes; and the reference execution of the default
// workloads (goal: a Llama block well under a second on one core). Compare ratios, not absolute
// numbers: these machines are shared and noisy.
//   ./build/release/tests/perf/bench_cpu_kernels --benchmark_counters_tabular=true

#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/host_buffers.hpp>
#include <doppler/runtime/workloads.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

using namespace doppler;

namespace {

tensor random(shape_t s, std::uint64_t seed) {
  tensor t(std::move(s));
  fill_uniform(t, seed);
  return t;
}

void set_gflops(benchmark::State& st, double flops_per_iter) {
  st.counters["GFLOP/s"] = benchmark::Counter(flops_per_iter * double(st.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

void BM_matmul_openblas(benchmark::State& st) {
  const auto n = st.range(0);
  tensor a = random({n, n}, 1), b = random({n, n}, 2);
  for (auto _ : st) benchmark::DoNotOptimize(cpu::matmul(a, b));
  set_gflops(st, 2.0 * double(n) * double(n) * double(n));
}

/// Textbook C[i][j] = Σ_k A[i][k] B[k][j]: B is walked down a column (stride n).
void BM_matmul_naive_ijk(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  tensor a = random({st.range(0), st.range(0)}, 1), b = random({st.range(0), st.range(0)}, 2);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    const float* pa = a.data();
    const float* pb = b.data();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        float acc = 0;
        for (std::size_t k = 0; k < n; ++k) acc += pa[i * n + k] * pb[k * n + j];
        c[i * n + j] = acc;
      }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_gflops(st, 2.0 * double(n) * double(n) * double(n));
}

/// The same loops reordered i-k-j: unit stride inside, which the compiler vectorizes.
void BM_matmul_naive_ikj(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  tensor a = random({st.range(0), st.range(0)}, 1), b = random({st.range(0), st.range(0)}, 2);
  std::vector<float> c(n * n);
  for (auto _ : st) {
    std::fill(c.begin(), c.end(), 0.0f);
    const float* pa = a.data();
    const float* pb = b.data();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < n; ++k) {
        const float aik = pa[i * n + k];
        float* ci = c.data() + i * n;
        const float* bk = pb + k * n;
        for (std::size_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
      }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_gflops(st, 2.0 * double(n) * double(n) * double(n));
}

// ---- elementwise vs memcpy (bytes = what the kernel reads + writes) ------------------------------

void BM_memcpy(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  std::vector<float> src(n, 1.0f), dst(n);
  for (auto _ : st) {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(2 * n * sizeof(float)));
}

void BM_add(benchmark::State& st) {
  tensor x = random({st.range(0)}, 1), y = random({st.range(0)}, 2);
  for (auto _ : st) benchmark::DoNotOptimize(cpu::add(x, y));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(3 * x.numel() * sizeof(float)));
}

void BM_add_broadcast_row(benchmark::State& st) {
  tensor x = random({st.range(0) / 256, 256}, 1), y = random({256}, 2);
  for (auto _ : st) benchmark::DoNotOptimize(cpu::add(x, y));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(2 * x.numel() * sizeof(float)));
}

void BM_silu(benchmark::State& st) {
  tensor x = random({st.range(0)}, 1);
  for (auto _ : st) benchmark::DoNotOptimize(cpu::silu(x));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(2 * x.numel() * sizeof(float)));
}

void BM_softmax(benchmark::State& st) {
  tensor x = random({st.range(0) / 128, 128}, 1);
  for (auto _ : st) benchmark::DoNotOptimize(cpu::softmax(x));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(2 * x.numel() * sizeof(float)));
}

void BM_rmsnorm(benchmark::State& st) {
  tensor x = random({st.range(0) / 256, 256}, 1), w = random({256}, 2);
  for (auto _ : st) benchmark::DoNotOptimize(cpu::rmsnorm(x, w));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(2 * x.numel() * sizeof(float)));
}

void BM_transpose_last2(benchmark::State& st) {
  tensor x = random({8, st.range(0) / (8 * 128), 128}, 1);
  const std::vector<std::int64_t> perm{0, 2, 1};
  for (auto _ : st) benchmark::DoNotOptimize(cpu::transpose(x, perm));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(2 * x.numel() * sizeof(float)));
}

void BM_fill_input(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(make_input("w", {st.range(0)}, 1));
  st.SetBytesProcessed(std::int64_t(st.iterations()) * std::int64_t(st.range(0) * std::int64_t(sizeof(float))));
}

// ---- whole graphs ------------------------------------------------------------------------------

void BM_reference(benchmark::State& st, const char* name) {
  graph g = make_workload(name, workload_params{});
  for (auto _ : st) benchmark::DoNotOptimize(execute_reference(g, reference_options{}.with_seed(1).exits_only()));
  set_gflops(st, g.total_flops());
  st.counters["ops"] = double(g.size());
}

/// The host buffer cache (host_buffers.hpp) on and off: the phase-III block (dim 1024, seq 512,
/// 4 shards) executed in one thread, every op's output allocated afresh as in a run. `off` is the
/// baseline (malloc: large buffers are fresh mmaps that fault in page by page); report the ratio.
void BM_block_host_cache(benchmark::State& st, bool cached) {
  workload_params p;
  p.dim = 1024, p.heads = 16, p.seq = 512, p.shards = 4;
  graph g = make_workload("llama-block", p);
  const auto limit = host_cache_statistics().limit_bytes;
  if (!cached) set_host_cache_limit(0);
  reset_host_cache_counters();
  for (auto _ : st) benchmark::DoNotOptimize(execute_reference(g, reference_options{}.with_seed(1).exits_only()));
  const auto s = host_cache_statistics();
  set_host_cache_limit(limit);
  set_gflops(st, g.total_flops());
  st.counters["hit_rate"] = s.hits + s.misses ? double(s.hits) / double(s.hits + s.misses) : 0.0;
}

void BM_synthetic_1e8(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(cpu::synthetic(1e8, {1024}, 3));
  set_gflops(st, 1e8);
}

}  // namespace

BENCHMARK(BM_matmul_openblas)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_naive_ikj)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_naive_ijk)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_memcpy)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK_CAPTURE(BM_block_host_cache, off, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_block_host_cache, on, true)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_add_broadcast_row)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_silu)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_softmax)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_rmsnorm)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_transpose_last2)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_fill_input)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK(BM_synthetic_1e8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_reference, llama_block, "llama-block")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_reference, llama_layer, "llama-layer")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_reference, ffnn, "ffnn")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_reference, chainmm, "chainmm")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_reference, moe_layer, "moe-layer")->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
