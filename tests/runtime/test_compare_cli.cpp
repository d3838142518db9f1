// `doppler compare` end to end: rows, ratios, CSV and SVG outputs, and methods left out. Runs the
// built binary in a temporary directory (the other commands: test_cli.cpp, test_cli_outputs.cpp).
#include <doctest/doctest.h>

#include "../cli_run.hpp"
#include "../temp_dir.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace {

const std::string paper_dir = DOPPLER_PAPER_DIR;

using cli_run::run;
using cli_run::slurp;

void write(const std::string& f, const std::string& text) { std::ofstream(f) << text; }

}  // namespace

TEST_CASE("cli: compare --json, csv and svg") {
  temp_dir d;
  auto r = run(d, "compare --graph '" + paper_dir + "/chain_mm_112nodes.txt' --cluster doppler-paper:4 --model simple "
                  "--methods cp,heft,round-robin,search --seeds 2 --budget 100 --csv r.csv --svg r.svg --json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 4);
  CHECK(j["rows"][0]["method"] == "cp");
  double best = 1e300;
  for (auto& row : j["rows"]) {
    CHECK(row["makespan_s"].get<double>() >= j["lower_bound_s"].get<double>() * (1 - 1e-9));
    best = std::min(best, row["makespan_s"].get<double>());
  }
  for (auto& row : j["rows"]) CHECK(row["ratio_best"].get<double>() == doctest::Approx(row["makespan_s"].get<double>() / best));
  std::string csv = slurp(d / "r.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
  CHECK(csv.rfind("method,", 0) == 0);
  std::string svg = slurp(d / "r.svg");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("heft") != std::string::npos);
  r = run(d, "compare --graph '" + paper_dir + "/chain_mm_112nodes.txt' --cluster doppler-paper:4 --methods cp,bogus");
  CHECK(r.rc == 2);
  CHECK(r.err.find("bogus") != std::string::npos);
}

TEST_CASE("cli: compare leaves out a method that cannot fit the graph in memory, with a note") {
  temp_dir d;
  // Three 10-byte devices and four ops: single cannot hold 25 bytes on g0, and cp, heft and m-etf
  // fill every device before the 10-byte op; round-robin, random, metis and search fit.
  write(d / "mem3.json", R"({"format":"doppler-cluster/1","name":"mem3","devices":[
    {"id":"g0","kind":"gpu","flops":1e10,"memory":10},{"id":"g1","kind":"gpu","flops":1e10,"memory":10},
    {"id":"g2","kind":"gpu","flops":1e10,"memory":10}],"links":[
    {"src":"g0","dst":"g1","bandwidth":1e10,"duplex":true},{"src":"g0","dst":"g2","bandwidth":1e10,"duplex":true},
    {"src":"g1","dst":"g2","bandwidth":1e10,"duplex":true}]})");
  write(d / "pack.json", R"({"format":"doppler-graph/1","name":"pack","ops":[
    {"id":"d","kind":"synthetic","flops":0,"bytes":10},{"id":"a","kind":"synthetic","flops":1e9,"bytes":5},
    {"id":"b","kind":"synthetic","flops":1e9,"bytes":5},{"id":"c","kind":"synthetic","flops":1e9,"bytes":5}]})");
  auto r = run(d, "compare --graph pack.json --cluster mem3.json --seeds 2 --budget 10 --json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> rows, left_out;
  for (auto& row : j["rows"]) rows.push_back(row["method"]);
  for (auto& x : j["infeasible"]) left_out.push_back(x["method"]);
  CHECK(rows == std::vector<std::string>{"round-robin", "random", "metis", "search"});
  CHECK(left_out == std::vector<std::string>{"single", "cp", "heft", "m-etf"});
  CHECK(r.err.find("note: single left out (seed 0)") != std::string::npos);
  // When no method fits, compare fails naming it.
  r = run(d, "compare --graph pack.json --cluster mem3.json --methods single,cp");
  CHECK(r.rc == 2);
  CHECK(r.err.find("no method placed the graph") != std::string::npos);
}

TEST_CASE("cli: compare's ratios when makespans or the bound are zero") {
  temp_dir d;
  // Ops that cost nothing: cp keeps c with its input a and finishes at 0 s; round-robin puts c on
  // another device and pays the 8-byte transfer. The bound is 0. A ratio of equal makespans is 1 (cp
  // to the best and to the bound), one over a zero reference infinite (null in --json), and the best
  // non-learned method is cp, the zero (the comparison took the first positive makespan for none).
  write(d / "zero.json", R"({"format":"doppler-graph/1","name":"zero","ops":[
    {"id":"a","kind":"synthetic","flops":0,"bytes":8},{"id":"b","kind":"synthetic","flops":0,"bytes":8},
    {"id":"c","kind":"synthetic","flops":0,"bytes":8,"inputs":["a"]}]})");
  auto r = run(d, "compare --graph zero.json --cluster p100x4 --methods cp,round-robin --seeds 1 --json --csv z.csv");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["lower_bound_s"].get<double>() == 0);
  auto& cp = j["rows"][0];
  auto& rr = j["rows"][1];
  REQUIRE(cp["method"] == "cp");
  CHECK(cp["makespan_s"].get<double>() == 0);
  CHECK(rr["makespan_s"].get<double>() > 0);
  CHECK(j["best_heuristic"] == "cp");
  CHECK(cp["ratio_best"].get<double>() == 1);
  CHECK(cp["ratio_best_heuristic"].get<double>() == 1);
  CHECK(cp["ratio_lower_bound"].get<double>() == 1);
  CHECK(rr["ratio_best"].is_null());
  CHECK(rr["ratio_best_heuristic"].is_null());
  CHECK(rr["ratio_lower_bound"].is_null());
  std::string csv = slurp(d / "z.csv");
  CHECK(csv.find("\nround-robin,") != std::string::npos);
  CHECK(csv.find(",inf,inf,") != std::string::npos);
}
