// Bad input to the planner library: τ and chunk sizes outside the time-expanded network's limits,
// option ranges, and schedules that do not fit their cluster or demand. Each error names the field.
#include "comm_fixtures.hpp"

#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/comm/validate.hpp>

#include <chrono>
#include <cmath>
#include <limits>

using namespace doppler;
using namespace doppler::comm;
using namespace comm_fixtures;

namespace {

/// Runs `f`, which must throw doppler::error of class `code` at JSON path / field `path`.
void expect_path(const std::function<void()>& f, errc code, const std::string& path, const std::string& needle) {
  try {
    f();
    FAIL("no error thrown; expected one at " << path);
  } catch (const error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(e.path() == path, e.what());
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos,
                  "'" << e.what() << "' does not mention '" << needle << "'");
  }
}

/// gpu0 <-> gpu1 at 1 GB/s with 1 ms latency.
cluster slow_pair() {
  return cluster("pair", gpus(2), {}, {{"gpu0", "gpu1", 1e9, 1e-3, true}});
}

}  // namespace

TEST_CASE("network: τ and chunk sizes that would make an unbounded time-expanded network") {
  cluster c = ring(4);  // 1 MB/s links, no latency: 1 MB chunks take τ = 1 s
  CHECK(network(c, mb, epoch_mode::given, 1).links().front().window == 1);
  // τ far too short: one chunk would occupy a link for 1e300 epochs.
  expect_path([&] { network(c, mb, epoch_mode::given, 1e-300); }, errc::bad_argument, "tau", "too short");
  expect_path([&] { network(c, mb, epoch_mode::given, 1e-300); }, errc::bad_argument, "tau",
              std::to_string(max_hop_epochs));
  // Just inside and just outside the limit.
  CHECK(network(c, mb, epoch_mode::given, 1.0 / max_hop_epochs).links().front().window == max_hop_epochs);
  expect_path([&] { network(c, mb, epoch_mode::given, 0.5 / max_hop_epochs); }, errc::bad_argument, "tau", "too short");
  // τ far too long: a link would carry a million chunks per epoch.
  expect_path([&] { network(c, mb, epoch_mode::given, 1e6); }, errc::bad_argument, "tau", "too long");
  CHECK(network(c, mb, epoch_mode::given, max_epoch_chunks).links().front().cap == max_epoch_chunks);
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
    expect_path([&] { network(c, mb, epoch_mode::given, bad); }, errc::bad_argument, "tau", "positive");
  // Chunk sizes: at least one byte, at most 1 TiB.
  for (double bad : {1e-300, 0.5, 0.0, -1.0, 2 * max_chunk_bytes, std::nan("")})
    expect_path([&] { network(c, bad); }, errc::bad_argument, "chunk_bytes", "not a chunk size");
  // Fast τ follows the chunk: 1-byte chunks make a 1 ms latency 1e6 epochs; the chunk size is to blame.
  cluster p = slow_pair();
  expect_path([&] { network(p, 1); }, errc::bad_argument, "chunk_bytes", "latency of link gpu0 -> gpu1");
  CHECK(network(p, mb).links().front().offset == 2);  // τ = 1 ms: δ = 1, β = 0
  // A given τ too short for the latency alone.
  expect_path([&] { network(p, mb, epoch_mode::given, 1e-9); }, errc::bad_argument, "tau", "too short");
}

TEST_CASE("demands: chunk sizes and empty demands") {
  cluster c = ring(4);
  expect_path([&] { make_collective(c, collective::allgather, 1e-300); }, errc::bad_argument, "chunk_bytes",
              "not a chunk size");
  expect_path([&] { make_collective(c, collective::allgather, 1e300); }, errc::bad_argument, "chunk_bytes",
              "not a chunk size");
  expect_path([&] {
    parse_demand(R"({"format":"doppler-demand/1","chunk_bytes":1e-300,)"
                 R"("chunks":[{"id":0,"source":"gpu0","destinations":["gpu1"]}]})", c, "d.json");
  }, errc::bad_value, "chunk_bytes", "d.json: chunk_bytes");
  expect_path([&] { parse_demand(R"({"format":"doppler-demand/1","chunk_bytes":1,"chunks":[]})", c, "d.json"); },
              errc::bad_value, "chunks", "at least one chunk");
}

TEST_CASE("plan: options out of range are refused before planning, naming the field") {
  cluster c = ring(4);
  demand d = make_collective(c, collective::allgather, mb, 1);
  auto with = [&](auto set) {
    plan_options o;
    o.with_method("greedy");
    set(o);
    return [=] { plan(c, d, o); };
  };
  const auto t0 = std::chrono::steady_clock::now();
  expect_path(with([](plan_options& o) { o.with_tau(epoch_mode::given, 1e-300); }), errc::bad_argument, "tau",
              "too short");
  expect_path(with([](plan_options& o) { o.with_method("milp").with_tau(epoch_mode::given, 1e-300); }),
              errc::bad_argument, "tau", "too short");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);  // refused, not planned
  expect_path(with([](plan_options& o) { o.with_method("nosuch"); }), errc::bad_argument, "method", "greedy");
  expect_path(with([](plan_options& o) { o.with_method(""); }), errc::bad_argument, "method", "unknown");
  expect_path(with([](plan_options& o) { o.with_time_limit(-1); }), errc::bad_argument, "time_limit", "-1");
  expect_path(with([](plan_options& o) { o.with_time_limit(std::nan("")); }), errc::bad_argument, "time_limit", "nan");
  expect_path(with([](plan_options& o) { o.with_max_epochs(-1); }), errc::bad_argument, "max_epochs", "negative");
  expect_path(with([](plan_options& o) { o.round_epochs = 0; }), errc::bad_argument, "round_epochs", "less than 2");
  expect_path(with([](plan_options& o) { o.replan_epoch = -2; }), errc::bad_argument, "replan_epoch", "-2");
  // In range: plans.
  plan_options ok;
  ok.with_method("greedy").with_tau(epoch_mode::given, 0.5);
  CHECK(plan(c, d, ok).sched.epochs > 0);
}

TEST_CASE("schedules: topology, chunk size and epoch length must fit the cluster and demand") {
  cluster c = ring(4);
  demand d = make_collective(c, collective::allgather, mb, 1);
  plan_result r = plan(c, d, plan_options{}.with_method("greedy"));
  const std::string text = to_json_text(r.sched, c);
  CHECK(parse_schedule(text, c, "s.json").topology == "ring4");
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  // Another cluster's schedule.
  expect_path([&] { parse_schedule(edit("\"ring4\"", "\"dgx1-v100\""), c, "s.json"); }, errc::bad_value, "topology",
              "s.json: topology");
  // Chunk sizes outside the limits.
  expect_path([&] { parse_schedule(edit("\"chunk_bytes\":1000000.0", "\"chunk_bytes\":1e-300"), c, "s.json"); },
              errc::bad_value, "chunk_bytes", "not a chunk size");
  // An epoch of 1e-300 s: far too short, reported at epoch_seconds (not "valid, 0 s").
  schedule tiny = parse_schedule(edit("\"epoch_seconds\":1.0", "\"epoch_seconds\":1e-300"), c, "s.json");
  expect_path([&] { validate_schedule(c, d, tiny); }, errc::bad_value, "epoch_seconds", "too short");
  // 2-byte chunks against the demand's 1 MB ones.
  schedule other = parse_schedule(edit("\"chunk_bytes\":1000000.0", "\"chunk_bytes\":2"), c, "s.json");
  expect_path([&] { validate_schedule(c, d, other); }, errc::bad_value, "chunk_bytes", "is 2 but the demand's chunks are 1000000 bytes");
  // 2-byte chunks in 1 s epochs on 1 MB/s links: half a million chunks per epoch, nonsense.
  demand d2 = make_collective(c, collective::allgather, 2, 1);
  expect_path([&] { validate_schedule(c, d2, other); }, errc::bad_value, "epoch_seconds", "too long");
  CHECK(validate_schedule(c, d, parse_schedule(text, c, "s.json")).epochs_used == r.sched.epochs);
}
