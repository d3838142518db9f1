// Remote dispatch over CAF's middleman vs the same run on local devices, in one binary:
//   ./build/release/tests/perf/bench_remote --benchmark_counters_tabular=true
// The "remote" device (device 1 of cpu:2) is served by a `doppler::worker` in a second actor system of this process,
// reached over TCP on 127.0.0.1 (the same code path as a `doppler worker` process; one process keeps
// the steady clocks identical, so producer → consumer times are comparable). Local = all devices in
// the engine's own actor system.
//
// <remote>: 0 = local, 1 = remote over plain TCP, 2 = remote over TLS (CAF's openssl module, a
// self-signed certificate made with the openssl CLI in /tmp).
// bm_ops/<remote>/<shape>: per-op overhead with the `null` backend (no work: the protocol alone).
//   shape 0 = chain: 1,000 ops one after another on device 1 (each op: execute → op_done round trip)
//   shape 1 = DAG: 16 lanes × 200 levels, lanes 0–7 on device 0, 8–15 on device 1 (two inputs per
//             op, 1/8 of the edges cross devices): throughput with batching
// bm_transfer/<remote>/<MB>: one tensor of MB megabytes made on device 0 (local in both cases), read
//   by an op on device 1; `MB_per_s` = bytes / (producer's end → copy done on device 1), which
//   includes the completion message, the send order, serialization, TCP and the copy.

#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/actors/protocol.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>

#include <benchmark/benchmark.h>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace doppler;

/// A self-signed certificate (its own CA) for the TLS cases, made once with the openssl CLI and
/// removed at exit; empty when that fails.
const std::string& tls_cert_dir() {
  struct cert_dir {
    std::string path = (std::filesystem::temp_directory_path() / ("doppler_bench_tls_" + std::to_string(::getpid()))).string();
    bool ok = std::system(("mkdir -p " + path + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "
                           "/CN=localhost -keyout " + path + "/key.pem -out " + path + "/cert.pem >/dev/null 2>&1")
                              .c_str()) == 0;
    ~cert_dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const cert_dir dir;
  static const std::string none;
  return dir.ok ? dir.path : none;
}

/// An engine on cpu:2. mode 0: local; 1: device 1 comes from a worker in another actor system over
/// plain TCP (device 0 stays in the engine's); 2: the same over TLS.
struct setup {
  cluster c = make_preset("cpu:2");
  std::optional<worker> w;
  std::optional<engine> e;
  setup(std::int64_t mode, const std::string& backend) {
    auto opt = engine_options{}.with_backend(backend).with_network(mode > 0);
    if (mode == 2) {
      const auto& d = tls_cert_dir();
      if (d.empty()) throw std::runtime_error("openssl CLI failed: no certificate for the TLS case");
      opt.with_tls(d + "/cert.pem", d + "/key.pem", d + "/cert.pem");
    }
    if (mode > 0) w.emplace(c, std::vector<device_index>{1}, opt);
    e.emplace(c, opt);
    if (mode > 0) e->attach_worker("127.0.0.1", w->port());
  }
};

op_spec synthetic(std::string id, std::vector<std::string> inputs) {
  op_spec s;
  s.id = std::move(id);
  s.kind = op_kind::synthetic;
  s.flops = 0;
  s.bytes = 4;
  s.inputs = std::move(inputs);
  return s;
}

std::pair<std::shared_ptr<const graph>, placement> op_graph(bool dag) {
  graph_builder b("remote-ops");
  placement p;
  if (!dag) {
    for (int k = 0; k < 1000; ++k) {
      b.push(synthetic("c" + std::to_string(k), k ? std::vector<std::string>{"c" + std::to_string(k - 1)}
                                                  : std::vector<std::string>{}));
      p.device.push_back(1);
    }
  } else {
    constexpr int lanes = 16, depth = 200;
    auto id = [](int l, int j) { return "o" + std::to_string(l) + "_" + std::to_string(j); };
    for (int l = 0; l < depth; ++l)
      for (int j = 0; j < lanes; ++j) {
        b.push(synthetic(id(l, j), l ? std::vector<std::string>{id(l - 1, j), id(l - 1, (j + 1) % lanes)}
                                     : std::vector<std::string>{}));
        p.device.push_back(j < lanes / 2 ? 0 : 1);
      }
  }
  return {std::make_shared<const graph>(std::move(b).build()), std::move(p)};
}

void bm_ops(benchmark::State& state) {
  setup s(state.range(0), "null");
  auto [g, p] = op_graph(state.range(1) == 1);
  auto opt = run_options{}.with_trace(false);
  s.e->run(g, p, opt);  // warm-up
  double wall = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    s.e->run(g, p, opt);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double ops = static_cast<double>(g->size()) * static_cast<double>(state.iterations());
  state.counters["ops"] = static_cast<double>(g->size());
  state.counters["us_per_op"] = wall / ops * 1e6;
}

void bm_transfer(benchmark::State& state) {
  setup s(state.range(0), "cpu");
  std::int64_t mb = state.range(1);
  graph_builder b("remote-transfer");
  op_spec x;
  x.id = "x";
  x.kind = op_kind::input;
  x.shape = {mb * 1024 * 1024 / 4};
  b.push(std::move(x));
  b.push(synthetic("y", {"x"}));  // reads x on device 1; a 4-byte output
  auto g = std::make_shared<const graph>(std::move(b).build());
  placement p;
  p.device = {0, 1};
  s.e->run(g, p);  // warm-up
  double seconds = 0, bytes = 0;
  for (auto _ : state) {
    auto r = s.e->run(g, p);
    double produced = 0, copied = 0;
    for (const auto& ev : r.runs[0].events) {
      if (ev.what == trace_event::kind::op && ev.id == 0) produced = ev.end;
      if (ev.what == trace_event::kind::transfer) copied = ev.end;
    }
    seconds += copied - produced;
    bytes += static_cast<double>(r.bytes_moved[0]);
  }
  state.counters["MB"] = static_cast<double>(mb);
  state.counters["ms_per_transfer"] = seconds / static_cast<double>(state.iterations()) * 1e3;
  state.counters["MB_per_s"] = bytes / seconds / 1e6;
}

/// CAF's binary serializer alone: a tensor_ref of MB megabytes out and back in (no network).
void bm_serialize(benchmark::State& state) {
  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::doppler_actors>();
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  std::int64_t mb = state.range(0);
  std::vector<float> values(static_cast<std::size_t>(mb * 1024 * 1024 / 4), 1.5f);
  actors::tensor_ref t{std::make_shared<const tensor>(shape_t{static_cast<std::int64_t>(values.size())}, values), nullptr};
  double ser = 0, de = 0;
  for (auto _ : state) {
    std::vector<char> buf;
    auto t0 = std::chrono::steady_clock::now();
    caf::binary_serializer sink{sys, buf};
    if (auto err = sink(t)) state.SkipWithError("serialize failed");
    auto t1 = std::chrono::steady_clock::now();
    actors::tensor_ref back;
    caf::binary_deserializer source{sys, buf};
    if (auto err = source(back)) state.SkipWithError("deserialize failed");
    auto t2 = std::chrono::steady_clock::now();
    ser += std::chrono::duration<double>(t1 - t0).count();
    de += std::chrono::duration<double>(t2 - t1).count();
  }
  double n = static_cast<double>(state.iterations()), bytes = static_cast<double>(mb) * 1024 * 1024;
  state.counters["MB"] = static_cast<double>(mb);
  state.counters["serialize_MB_per_s"] = bytes * n / ser / 1e6;
  state.counters["deserialize_MB_per_s"] = bytes * n / de / 1e6;
}

}  // namespace

BENCHMARK(bm_serialize)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_ops)->ArgsProduct({{0, 1, 2}, {0, 1}})->ArgNames({"remote", "dag"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(bm_transfer)->ArgsProduct({{0, 1, 2}, {1, 16}})->ArgNames({"remote", "MB"})->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
