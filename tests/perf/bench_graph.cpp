// Loading graphs: parse + validate of doppler-graph/1 (target: >= 1M ops/s on a 1M-op graph).
// Baselines in the same run: nlohmann's DOM parse of the same text (what a naive loader pays before
// any validation) and a SAX pass that does nothing (the JSON lexer's floor). Compare ratios, not
// absolute numbers: these machines are noisy.
//   ./build/release/tests/perf/bench_graph --benchmark_counters_tabular=true

#include <doppler/runtime/graph_io.hpp>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace {

/// A layered graph of `n` ops mixing the common kinds (matmul, add, silu, reduce_sum, input).
std::string make_text(std::size_t n) {
  std::string s = R"({"format": "doppler-graph/1", "name": "bench", "ops": [)"
                  "\n{\"id\": \"x\", \"kind\": \"input\", \"shape\": [64, 64]},"
                  "\n{\"id\": \"w\", \"kind\": \"input\", \"shape\": [64, 64]}";
  for (std::size_t i = 2; i < n; ++i) {
    std::string id = "op" + std::to_string(i);
    std::string a = i > 2 ? "op" + std::to_string(i - 1) : "x";
    std::string b = i > 3 ? "op" + std::to_string(i - 2) : "w";
    switch (i % 4) {
      case 0: s += ",\n{\"id\": \"" + id + "\", \"kind\": \"matmul\", \"inputs\": [\"" + a + "\", \"w\"], \"shape\": [64, 64]}"; break;
      case 1: s += ",\n{\"id\": \"" + id + "\", \"kind\": \"add\", \"inputs\": [\"" + a + "\", \"" + b + "\"], \"shape\": [64, 64]}"; break;
      case 2: s += ",\n{\"id\": \"" + id + "\", \"kind\": \"silu\", \"inputs\": [\"" + a + "\"], \"shape\": [64, 64]}"; break;
      default: s += ",\n{\"id\": \"" + id + "\", \"kind\": \"reduce_sum\", \"inputs\": [\"" + a + "\", \"" + b + "\", \"x\"], \"shape\": [64, 64]}";
    }
  }
  return s + "\n]}\n";
}

const std::string& text_of(std::size_t n) {
  static std::size_t cached_n = 0;
  static std::string cached;
  if (cached_n != n) {
    cached = make_text(n);
    cached_n = n;
  }
  return cached;
}

void set_counters(benchmark::State& state, std::size_t n, std::size_t bytes) {
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_doppler_parse_validate(benchmark::State& state) {
  auto n = static_cast<std::size_t>(state.range(0));
  const std::string& text = text_of(n);
  for (auto _ : state) {
    // Freed inside the timing, as the DOM baseline's json is (until 2026-12-07 only doppler's free
    // was paused, a bias in doppler's favour).
    auto g = doppler::parse_graph(text, "bench.json");
    benchmark::DoNotOptimize(g.size());
  }
  set_counters(state, n, text.size());
}

void BM_baseline_nlohmann_dom(benchmark::State& state) {
  auto n = static_cast<std::size_t>(state.range(0));
  const std::string& text = text_of(n);
  for (auto _ : state) {
    auto j = nlohmann::json::parse(text);
    benchmark::DoNotOptimize(j.size());
  }
  set_counters(state, n, text.size());
}

void BM_baseline_sax_floor(benchmark::State& state) {
  auto n = static_cast<std::size_t>(state.range(0));
  const std::string& text = text_of(n);
  for (auto _ : state) {
    nlohmann::json_sax<nlohmann::json>* none = nullptr;
    nlohmann::detail::json_sax_acceptor<nlohmann::json> acceptor;
    (void)none;
    bool ok = nlohmann::json::sax_parse(text, &acceptor);
    benchmark::DoNotOptimize(ok);
  }
  set_counters(state, n, text.size());
}

void BM_doppler_save(benchmark::State& state) {
  auto n = static_cast<std::size_t>(state.range(0));
  doppler::graph g = doppler::parse_graph(text_of(n), "bench.json");
  for (auto _ : state) {
    auto out = doppler::to_json_text(g);
    benchmark::DoNotOptimize(out.size());
  }
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_doppler_parse_validate)->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_baseline_nlohmann_dom)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_baseline_sax_floor)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_doppler_save)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
