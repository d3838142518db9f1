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

TEST_CASE("network: chains of switches are refused, naming the link") {
  // gpu0 -> sw1 -> sw2 -> gpu1: a switch forwards in the epoch a chunk enters it, and its out-link
  // counts the α into it, so the first hop's α would be lost (planned 21 epochs for 40 of latency).
  cluster chain("chain", gpus(2), {"sw1", "sw2"},
                {{"gpu0", "sw1", 1e10, 1e-5, true}, {"sw1", "sw2", 1e10, 1e-5, true}, {"sw2", "gpu1", 1e10, 1e-5, true}});
  expect_path([&] { network(chain, mb); }, errc::bad_argument, "links", "link sw1 -> sw2 joins two switches");
  expect_path([&] { plan(chain, make_collective(chain, collective::broadcast, mb), plan_options{}.with_method("direct")); },
              errc::bad_argument, "links", "joins two switches");
  CHECK(network(star(3), mb).links().size() == 6);  // one switch between devices: fine
}

TEST_CASE("demands and plans: job weights of any size, output sizes, ring's shape, the epoch cap, warm starts") {
  cluster c = ring(4);
  // A job weight of 1e30 went into CLP's objective as is and aborted the process (CLP asserts
  // |coefficient| < 1e25): weights count relative to the largest.
  demand weighted = merge_jobs({make_collective(c, collective::broadcast, mb), make_collective(c, collective::broadcast, mb, 1, 2)},
                               {1e30, 1e-30});
  plan_result milp = plan(c, weighted, plan_options{}.with_method("milp"));
  CHECK(milp.sched.epochs == milp.bound.epochs);
  demand plain = merge_jobs({make_collective(c, collective::broadcast, mb), make_collective(c, collective::broadcast, mb, 1, 2)},
                            {1, 1});
  CHECK(plan(c, plain, plan_options{}.with_method("milp")).sched.epochs == milp.sched.epochs);
  // output_bytes: absent, or 1 byte to 2^72 (1e300 printed a 290-digit algbw).
  for (const char* bad : {"1e300", "1e-300", "-5"}) {
    CAPTURE(bad);
    expect_path([&] {
      parse_demand(std::string(R"({"format":"doppler-demand/1","chunk_bytes":1000000,"output_bytes":)") + bad +
                       R"(,"chunks":[{"id":0,"source":"gpu0","destinations":["gpu1"]}]})",
                   c, "d.json");
    }, errc::bad_value, "output_bytes", "d.json: output_bytes");
  }
  CHECK(parse_demand(R"({"format":"doppler-demand/1","chunk_bytes":1000000,"output_bytes":4e6,)"
                     R"("chunks":[{"id":0,"source":"gpu0","destinations":["gpu1"]}]})", c, "d.json")
            .output_size(4) == 4e6);
  // ring/rings: N − 1 destinations that are not the other sources is no allgather (it failed
  // validation with an internal error).
  demand pairs = parse_demand(R"({"format":"doppler-demand/1","chunk_bytes":1000000,"chunks":[)"
                              R"({"id":0,"source":"gpu0","destinations":["gpu1"]},)"
                              R"({"id":1,"source":"gpu2","destinations":["gpu3"]}]})", c, "d.json");
  for (const char* m : {"ring", "rings"}) expect_error([&] { plan(c, pairs, plan_options{}.with_method(m)); }, errc::bad_argument, "allgather demands only");
  // --max-epochs: a method that plans without a horizon may not return a longer plan.
  demand ag = make_collective(c, collective::allgather, mb, 2);
  const std::int32_t ring_epochs = plan(c, ag, plan_options{}.with_method("ring")).sched.epochs;
  const std::int32_t bound = plan(c, ag, plan_options{}.with_method("greedy")).bound.epochs;
  REQUIRE(ring_epochs > bound);
  expect_error([&] { plan(c, ag, plan_options{}.with_method("ring").with_max_epochs(ring_epochs - 1)); }, errc::infeasible,
               "more than the cap of " + std::to_string(ring_epochs - 1));
  CHECK(plan(c, ag, plan_options{}.with_method("ring").with_max_epochs(ring_epochs)).sched.epochs == ring_epochs);
  // A warm start of another chunk size names both sizes.
  schedule old = plan(c, ag, plan_options{}.with_method("greedy")).sched;
  demand bigger = make_collective(c, collective::allgather, 2 * mb, 2);
  plan_options warm;
  warm.with_method("greedy").warm_start = &old;
  expect_path([&] { plan(c, bigger, warm); }, errc::bad_argument, "warm_start", "1000000-byte chunks");
}
