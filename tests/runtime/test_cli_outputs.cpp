// Every command's outputs are checked before its work (cli/output_path.cpp, check_outputs): not one of
// its inputs, not another of its outputs, not empty, not stdout where stdout carries the report.
#include <doctest/doctest.h>

#include "../cli_run.hpp"
#include "../temp_dir.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

using cli_run::run;
using cli_run::slurp;

bool has_run_command(const temp_dir& d) { return run(d, "run --help").rc == 0; }

}  // namespace

TEST_CASE("cli: outputs are checked before the work: not an input, not another output, not empty") {
  temp_dir d;
  REQUIRE(run(d, "workload ffnn -q -o g.json").rc == 0);
  const std::string graph = slurp(d / "g.json");
  // Each: the command, the text its one-line error must contain. Exit 2 and nothing written.
  std::vector<std::pair<const char*, const char*>> cases = {
      {"place --graph g.json -o g.json", "--output: bad argument: is the --graph input"},
      {"simulate --graph g.json --trace g.json", "--trace: bad argument: is the --graph input"},
      {"compare --graph g.json --methods cp --seeds 1 --csv out.x --svg out.x", "--csv: bad argument: is also --svg's file"},
      {"compare --graph g.json --methods cp --seeds 1 --csv ok.csv --svg missing/c.svg", "directory 'missing' does not exist"},
      {"cluster dgx1-v100 -o ''", "--output: bad argument: is empty"},
      {"plan-comm --method greedy -o out.json --trace missing/t.json", "directory 'missing' does not exist"},
      {"plan-comm --method greedy -o out.x --msccl out.x", "is also --msccl's file"},
      {"compare-comm --methods greedy --csv ok.csv --svg ok.csv", "is also --svg's file"},
      // stdout carries these commands' reports: an output there would be mixed into them
      {"simulate --graph g.json --trace -", "--trace: bad argument: '-' (stdout) is not an output here"},
      {"compare --graph g.json --methods cp --seeds 1 --csv -", "--csv: bad argument: '-' (stdout)"},
      {"plan-comm --method greedy -o -", "--output: bad argument: '-' (stdout)"},
  };
  if (has_run_command(d))  // calibrate comes with the actor runtime
    cases.insert(cases.end(), {{"calibrate --rounds 1 --graph g.json -o g.json", "is the --graph input"},
                               {"calibrate --rounds 1 -o out.x --cluster-out out.x", "is also --cluster-out's file"},
                               {"calibrate --rounds 1 -o ''", "--output: bad argument: is empty"}});
  for (const auto& [args, expected] : cases) {
    CAPTURE(args);
    auto r = run(d, args);
    CAPTURE(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(expected) != std::string::npos);
    CHECK_FALSE(fs::exists(d / "out.x"));
    CHECK_FALSE(fs::exists(d / "out.json"));
    CHECK_FALSE(fs::exists(d / "ok.csv"));  // the first output of a failing pair is not left behind
  }
  CHECK(slurp(d / "g.json") == graph);  // the input survived every attempt
  // A schedule replayed into its own file.
  REQUIRE(run(d, "plan-comm --method greedy -o s.json").rc == 0);
  auto r = run(d, "check-schedule s.json --trace s.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("is the schedule input") != std::string::npos);
  // check-schedule's --chunk-bytes defaults to the schedule's chunk size, and its help says so.
  r = run(d, "check-schedule --help");
  CHECK(r.out.find("default: the schedule's own chunk size") != std::string::npos);
  CHECK(r.out.find("--chunk-bytes FLOAT=") == std::string::npos);
  // The same paths written through different spellings are one file.
  r = run(d, "place --graph g.json -o ./g.json");
  CHECK(r.rc == 2);
  CHECK(slurp(d / "g.json") == graph);
  // Refining in place stays allowed: the start placement and the warm-start schedule are read before
  // the result replaces them (atomically).
  REQUIRE(run(d, "place --graph g.json --method heft -o pl.json").rc == 0);
  r = run(d, "place --graph g.json --method search --budget 50 --start pl.json -o pl.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  r = run(d, "plan-comm --method greedy --warm-start s.json -o s.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
}
