// Placers at their limits: graphs that fit only spread or not at all (each placer's refusal says
// which), search's start when greedy packings fail (metis as the last resort), and op times that are
// not finite on some device.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placer.hpp>

#include <doctest/doctest.h>

#include "placer_fixtures.hpp"

#include <string>
#include <string_view>
#include <vector>

using namespace doppler;
using namespace doppler::placer_test;

namespace {

/// A synthetic op of `work` seconds on doppler-paper:N whose output takes `bytes` bytes (not 1e10s).
op_spec sized(std::string id, double work, double bytes, std::vector<std::string> inputs = {}) {
  op_spec s = syn(std::move(id), work, 0, std::move(inputs));
  s.bytes = bytes;
  return s;
}

/// The error placer `name` throws placing `g` on `c`; a failed check (and an internal error) when it
/// places it.
error refusal(std::string_view name, const graph& g, const cluster& c, const placer_options& o = quick()) {
  try {
    make_placer(name)->place(g, c, cost_model{}, o);
  } catch (const error& e) {
    return e;
  }
  FAIL_CHECK(name << " placed graph '" << g.name() << "', which it was expected to refuse");
  return error(errc::internal, "placed");
}

/// The output bytes placement `p` puts on each of `c`'s devices.
std::vector<double> bytes_per_device(const placement& p, const graph& g, const cluster& c) {
  std::vector<double> used(c.device_count(), 0.0);
  for (op_index v = 0; v < g.size(); ++v) used[p.device[v]] += g[v].bytes;
  return used;
}

}  // namespace

TEST_CASE("memory: placers spread a graph that fits only spread, and say when it cannot fit") {
  // Two devices of 1000 bytes; four 400-byte outputs fit two per device.
  std::vector<device> devs = {{"g0", device_kind::gpu, 1e10, 1000, "h"}, {"g1", device_kind::gpu, 1e10, 1000, "h"}};
  cluster c("small", devs, {}, {{"g0", "g1", 1e10, 0.0, true}});
  auto op400 = [](std::string id, std::vector<std::string> in) { return sized(std::move(id), 1, 400, std::move(in)); };
  graph g = build("fits", {op400("a", {}), op400("b", {"a"}), op400("c", {"b"}), op400("d", {"c"})});
  cost_model cm;
  for (auto& name : placer_names()) {
    CAPTURE(name);
    if (name == "single") {  // 1600 bytes on one 1000-byte device
      const error e = refusal(name, g, c);
      CHECK(e.code() == errc::infeasible);
      CHECK(std::string(e.what()).find("does not fit") != std::string::npos);
      continue;
    }
    placement p = make_placer(name)->place(g, c, cm, quick());
    for (double used : bytes_per_device(p, g, c)) CHECK(used <= 1000);
  }
  // Five 400-byte outputs (2000 ≤ 2000 total, but never more than two per device) cannot fit.
  graph big = build("big", {op400("a", {}), op400("b", {"a"}), op400("c", {"b"}), op400("d", {"c"}), op400("e", {"d"})});
  for (auto& name : placer_names()) {
    CAPTURE(name);
    const error e = refusal(name, big, c);
    CHECK(e.code() == errc::infeasible);
    CHECK(std::string(e.what()).find("big") != std::string::npos);
  }
  // Without respect_memory the simple placers ignore the limit.
  placer_options loose = quick();
  loose.respect_memory = false;
  CHECK_NOTHROW(make_placer("single")->place(big, c, cm, loose));
}

TEST_CASE("memory: a greedy packing that fails is told from a graph that cannot fit, and search starts from a placer that fits") {
  // Three 10-byte devices; a, b and c (5 bytes, one unit of work each) outrank d (10 bytes, no work).
  // cp, heft and m-etf spread a, b, c over the three devices and then have no room for d, though
  // round-robin and metis fit all four: their error must not say the graph does not fit, and search
  // (whose first start candidate is cp) must still place it.
  std::vector<device> devs;
  for (const char* id : {"g0", "g1", "g2"}) devs.push_back({id, device_kind::gpu, 1e10, 10, "h"});
  cluster c("mem3", devs, {},
            {{"g0", "g1", 1e10, 0.0, true}, {"g0", "g2", 1e10, 0.0, true}, {"g1", "g2", 1e10, 0.0, true}});
  graph g = build("pack", {sized("d", 0, 10), sized("a", 1, 5), sized("b", 1, 5), sized("c", 1, 5)});
  cost_model cm;
  for (const char* greedy : {"cp", "heft", "m-etf"}) {
    CAPTURE(greedy);
    const error e = refusal(greedy, g, c);  // the greedy packing fills every device before d
    CHECK(e.code() == errc::infeasible);
    const std::string what = e.what();
    CHECK(what.find("could not place graph 'pack'") != std::string::npos);
    CHECK(what.find("op 'd'") != std::string::npos);
    CHECK(what.find("does not fit") == std::string::npos);
  }
  for (const char* fits : {"round-robin", "metis", "search"}) {
    CAPTURE(fits);
    placement p = make_placer(fits)->place(g, c, cm, quick());
    for (double used : bytes_per_device(p, g, c)) CHECK(used <= 10);
  }
  // An op larger than every device: no placement can hold it, and the error says so.
  graph huge = build("huge", {sized("x", 1, 11)});
  CHECK(std::string(refusal("cp", huge, c).what()).find("largest device holds 10 bytes") != std::string::npos);
}

TEST_CASE("memory: search falls back to metis when every other start placer fails") {
  // Two 10-byte devices; x and y (5 bytes, one unit of work each) feed z (10 bytes, two units).
  // single holds 20 bytes on g0; round-robin, cp, heft and m-etf put x and y on different devices
  // and have no room left for z. metis balances the work as {x, y} | {z}, which fits: search's start
  // of last resort, without which search would fail.
  std::vector<device> devs;
  for (const char* id : {"g0", "g1"}) devs.push_back({id, device_kind::gpu, 1e10, 10, "h"});
  cluster c("mem2", devs, {}, {{"g0", "g1", 1e10, 0.0, true}});
  graph g = build("pack2", {sized("x", 1, 5), sized("y", 1, 5), sized("z", 2, 10, {"x", "y"})});
  cost_model cm;
  for (const char* fails : {"single", "round-robin", "cp", "heft", "m-etf"}) {
    CAPTURE(fails);
    CHECK_THROWS_AS(make_placer(fails)->place(g, c, cm, quick()), error);
  }
  placement m = make_placer("metis")->place(g, c, cm, quick());
  placement s = make_placer("search")->place(g, c, cm, quick());
  for (const placement* p : {&m, &s}) {
    CHECK(p->device[idx(g, "x")] == p->device[idx(g, "y")]);
    CHECK(p->device[idx(g, "z")] != p->device[idx(g, "x")]);
  }
  CHECK(s.method == "search");
}

TEST_CASE("an op whose time on some device is not finite is refused by every placer, naming op and device") {
  // cp and m-etf choose devices by start time alone: they put y on the 1 FLOP/s device, where its
  // 1e308 FLOPs at a reduction's efficiency take longer than a double holds (cp then blamed memory,
  // m-etf reported an internal error).
  std::vector<device> devs = {{"slow", device_kind::gpu, 1, 1e9, "h"}, {"fast", device_kind::gpu, 1e21, 1e9, "h"}};
  cluster c("het", devs, {}, {{"slow", "fast", 1e10, 0.0, true}});
  graph g = parse_graph(R"({"format":"doppler-graph/1","name":"huge","ops":[
    {"id":"x","kind":"input","shape":[2]},
    {"id":"y","kind":"reduce_sum","inputs":["x"],"shape":[2],"flops":1e308},
    {"id":"z","kind":"synthetic","inputs":["y"],"flops":1,"bytes":8}]})");
  for (auto& name : placer_names()) {
    CAPTURE(name);
    for (std::uint64_t seed : {0, 1, 2, 3}) {
      const error e = refusal(name, g, c, quick(seed));  // y takes forever on the slow device
      CHECK(e.code() == errc::bad_value);
      const std::string what = e.what();
      CHECK(what.find("op 'y'") != std::string::npos);
      CHECK(what.find("device 'slow'") != std::string::npos);
    }
  }
}
