// The comm commands end to end on bad input (plan-comm, compare-comm, check-schedule): every
// refusal is one line naming the option or the file and field, with exit code 2 — never a hang,
// a crash, or exit 0 with nonsense.
#include <doctest/doctest.h>

#include "../cli_run.hpp"
#include "../temp_dir.hpp"
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using cli_run::result;
using cli_run::run;
using cli_run::slurp;

/// `doppler ARGS` must fail with exit code 2 and one line of stderr mentioning every needle.
void refused(const temp_dir& dir, const std::string& args, std::initializer_list<std::string> needles) {
  result r = run(dir, args);
  INFO("doppler " << args << "\nstdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.find('\n') == r.err.size() - 1);  // exactly one line
  for (const std::string& n : needles) CHECK_MESSAGE(r.err.find(n) != std::string::npos, "missing: " << n);
}

void write(const std::string& f, const std::string& text) { std::ofstream(f) << text; }

}  // namespace

TEST_CASE("comm cli: --root defaults to the cluster's first device and applies only to rooted collectives") {
  temp_dir d;
  // cpu:4 has no gpu0: allgather/alltoall have no root and must plan.
  for (const char* k : {"allgather", "alltoall"}) {
    result r = run(d, std::string("plan-comm --cluster cpu:4 --method greedy --collective ") + k);
    CHECK_MESSAGE(r.rc == 0, r.err);
  }
  result r = run(d, "compare-comm --cluster cpu:4 --methods greedy,direct");
  CHECK_MESSAGE(r.rc == 0, r.err);
  // broadcast: the first device (cpu0) by default, or the one named.
  r = run(d, "plan-comm --cluster cpu:4 --method greedy --collective broadcast -o b.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto s = nlohmann::json::parse(slurp(d / "b.json"));
  for (const auto& x : s["sends"]) CHECK(x["dst"] != "cpu0");
  r = run(d, "plan-comm --cluster cpu:4 --method greedy --collective scatter --root cpu2 -o s.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run(d, "check-schedule s.json --cluster cpu:4 --collective scatter --root cpu2");
  CHECK_MESSAGE(r.rc == 0, r.err);
  refused(d, "check-schedule s.json --cluster cpu:4 --collective scatter", {"s.json", "sends"});
  refused(d, "plan-comm --cluster cpu:4 --collective broadcast --root gpu0", {"--root", "\"gpu0\"", "cpu:4"});
  refused(d, "plan-comm --cluster cpu:4 --collective allgather --root cpu1", {"--root", "allgather"});
  refused(d, "compare-comm --cluster cpu:4 --collective alltoall --root cpu1", {"--root"});
}

TEST_CASE("comm cli: --chunk-bytes and --chunks-per-gpu are for collectives, not demand files") {
  temp_dir d;
  write(d / "d.json", R"({"format":"doppler-demand/1","chunk_bytes":1000000,)"
                      R"("chunks":[{"id":0,"source":"cpu0","destinations":["cpu1"]}]})");
  result r = run(d, "plan-comm --cluster cpu:2 --method greedy --demand d.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  // Both were ignored without a word (and --chunk-bytes nan passed).
  refused(d, "plan-comm --cluster cpu:2 --method greedy --demand d.json --chunk-bytes nan", {"--chunk-bytes", "demand file"});
  refused(d, "plan-comm --cluster cpu:2 --method greedy --demand d.json --chunk-bytes 2000000", {"--chunk-bytes"});
  refused(d, "compare-comm --cluster cpu:2 --demand d.json --chunks-per-gpu 9", {"--chunks-per-gpu", "demand file"});
}

TEST_CASE("comm cli: compare-comm shows a method that does not apply as a row, and fails when none applies") {
  temp_dir d;
  // ring plans allgather only: with direct next to it the alltoall table has both rows and exits 0.
  result r = run(d, "compare-comm --cluster p100x4 --collective alltoall --methods ring,direct --csv some.csv");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("ring     bad argument") != std::string::npos);
  std::string csv = slurp(d / "some.csv");
  CHECK(csv.find("\nring,,") != std::string::npos);
  CHECK(csv.find("\ndirect,1,") != std::string::npos);
  // ring alone: nothing was planned, so the command fails, naming the methods; the CSV still says why.
  refused(d, "compare-comm --cluster p100x4 --collective alltoall --methods ring --csv none.csv",
          {"--methods", "none of ring", "alltoall"});
  CHECK(slurp(d / "none.csv").find("ring,,,,,,,,,,,bad argument: the ring method plans allgather") != std::string::npos);
}

TEST_CASE("comm cli: --tau and --chunk-bytes that would make an unbounded problem are refused") {
  temp_dir d;
  refused(d, "plan-comm --cluster p100x4 --tau 1e-300 --method greedy", {"--tau", "too short", "16384"});
  refused(d, "compare-comm --cluster p100x4 --tau 1e-300 --time-limit 2 --methods greedy,ring,direct",
          {"--tau", "too short"});
  refused(d, "plan-comm --cluster p100x4 --tau 1e6 --method greedy", {"--tau", "too long"});
  refused(d, "plan-comm --cluster p100x4 --tau inf", {"--tau"});
  refused(d, "plan-comm --cluster p100x4 --chunk-bytes 1e-300", {"--chunk-bytes", "not a chunk size"});
  refused(d, "compare-comm --cluster p100x4 --chunk-bytes 1e-300 --methods greedy", {"--chunk-bytes"});
  refused(d, "plan-comm --cluster p100x4 --chunk-bytes 1e300", {"--chunk-bytes"});
  refused(d, "plan-comm --cluster p100x4 --chunks-per-gpu 0", {"--chunks-per-gpu"});
  refused(d, "plan-comm --cluster p100x4 --chunks-per-gpu 100000000", {"--chunks-per-gpu"});
  write(d / "tiny.json", R"({"format": "doppler-demand/1", "name": "d", "chunk_bytes": 1e-300,
    "chunks": [{"id": 0, "source": "gpu0", "destinations": ["gpu1"]}]})");
  refused(d, "plan-comm --cluster p100x4 --collective tiny.json --method greedy", {"tiny.json", "chunk_bytes"});
  refused(d, "plan-comm --cluster p100x4 --collective tiny.json --root gpu1", {"--root"});
  result r = run(d, "plan-comm --cluster p100x4 --tau 1e-6 --method greedy");
  CHECK_MESSAGE(r.rc == 0, r.err);
}

TEST_CASE("comm cli: unknown or missing methods and out-of-range solver options are refused") {
  temp_dir d;
  refused(d, "compare-comm --cluster p100x4 --methods nosuch", {"--methods", "\"nosuch\"", "greedy"});
  refused(d, "compare-comm --cluster p100x4 --methods greedy,nosuch", {"--methods", "nosuch"});
  refused(d, "compare-comm --cluster p100x4 --methods ''", {"--methods"});
  refused(d, "compare-comm --cluster p100x4 --methods greedy,,ring", {"--methods", "empty"});
  refused(d, "compare-comm --cluster p100x4 --methods greedy --time-limit -1", {"--time-limit"});
  refused(d, "plan-comm --cluster p100x4 --method nosuch", {"--method", "greedy"});
  refused(d, "plan-comm --cluster p100x4 --method greedy --time-limit -1", {"--time-limit"});
  refused(d, "plan-comm --cluster p100x4 --method greedy --time-limit nan", {"--time-limit"});
  refused(d, "plan-comm --cluster p100x4 --method greedy --max-epochs -1", {"--max-epochs"});
  refused(d, "plan-comm --cluster p100x4 --method greedy --round-epochs 0", {"--round-epochs"});
  result r = run(d, "compare-comm --cluster p100x4 --methods ' greedy, ring'");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("ring") != std::string::npos);
}

TEST_CASE("comm cli: check-schedule refuses schedules that do not fit the cluster or demand") {
  temp_dir d;
  result r = run(d, "plan-comm --cluster p100x4 --method greedy -o s.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run(d, "check-schedule s.json --cluster p100x4");
  CHECK_MESSAGE(r.rc == 0, r.err);
  auto s = nlohmann::json::parse(slurp(d / "s.json"));
  auto variant = [&](const std::string& f, const char* key, const nlohmann::json& v) {
    auto t = s;
    t[key] = v;
    write(d / f, t.dump());
  };
  variant("tiny.json", "epoch_seconds", 1e-300);
  refused(d, "check-schedule tiny.json --cluster p100x4", {"tiny.json", "epoch_seconds", "too short"});
  variant("two.json", "chunk_bytes", 2);
  refused(d, "check-schedule two.json --cluster p100x4", {"two.json", "epoch_seconds", "too long"});
  refused(d, "check-schedule two.json --cluster p100x4 --chunk-bytes 1048576", {"two.json", "chunk_bytes"});
  variant("topo.json", "topology", "dgx1-v100");
  refused(d, "check-schedule topo.json --cluster p100x4", {"topo.json", "topology", "dgx1-v100"});
  refused(d, "check-schedule s.json --cluster p100x4 --chunk-bytes 2", {"s.json", "chunk_bytes"});
  // Planned with 2 chunks per GPU, checked with the default 1: the error names both demands.
  r = run(d, "plan-comm --cluster p100x4 --method greedy --chunks-per-gpu 2 -o s2.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  refused(d, "check-schedule s2.json --cluster p100x4", {"s2.json", "allgather-4x2", "allgather-4x1", "--chunks-per-gpu"});
  r = run(d, "check-schedule s2.json --cluster p100x4 --chunks-per-gpu 2");
  CHECK_MESSAGE(r.rc == 0, r.err);
}

TEST_CASE("comm cli: plan-comm --trace and check-schedule --trace write the same Chrome trace") {
  temp_dir d;
  result r = run(d, "plan-comm --cluster dgx1-v100 --method greedy -o s.json --trace plan.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run(d, "check-schedule s.json --cluster dgx1-v100 --trace check.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("trace: check.json") != std::string::npos);
  const std::string plan = slurp(d / "plan.json");
  CHECK(plan == slurp(d / "check.json"));
  auto t = nlohmann::json::parse(plan);
  auto s = nlohmann::json::parse(slurp(d / "s.json"));
  std::size_t events = 0;
  for (const auto& e : t["traceEvents"]) events += e["ph"] == "X";
  CHECK(events == s["sends"].size());
  CHECK(t["otherData"]["schedule"]["method"] == "greedy");
  CHECK(t["otherData"]["makespan_s"].get<double>() > 0);
  // Through switches (two DGX-H100-like nodes): every send has its event, switch links are tracks.
  r = run(d, "plan-comm --cluster h100-pod:2 --method greedy -o pod.json --trace pod-trace.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("trace: pod-trace.json") != std::string::npos);
  t = nlohmann::json::parse(slurp(d / "pod-trace.json"));
  s = nlohmann::json::parse(slurp(d / "pod.json"));
  events = 0;
  bool switch_track = false;
  for (const auto& e : t["traceEvents"]) {
    events += e["ph"] == "X";
    if (e["ph"] == "M" && e["name"] == "process_name")
      switch_track = switch_track || e["args"]["name"].get<std::string>().find("switch") != std::string::npos;
  }
  CHECK(events == s["sends"].size());
  CHECK(switch_track);
}
