// The `doppler` command end to end: runs the built binary in a temporary directory and checks exit
// codes, outputs and error messages.
#include <doctest/doctest.h>

#include "../temp_dir.hpp"
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string cli = DOPPLER_CLI_PATH;
const std::string paper_dir = DOPPLER_PAPER_DIR;


struct result {
  int rc = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

std::string slurp(const std::string& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `doppler ARGS` in `dir`, capturing stdout and stderr separately.
result run(const temp_dir& dir, const std::string& args) {
  std::string cmd = "cd '" + dir.path.string() + "' && '" + cli + "' " + args + " >" + (dir / "_out") + " 2>" + (dir / "_err");
  int status = std::system(cmd.c_str());
  result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "_out");
  r.err = slurp(dir / "_err");
  return r;
}

void write(const std::string& f, const std::string& text) { std::ofstream(f) << text; }

}  // namespace

TEST_CASE("cli: workload, validate, info --json, convert, cluster") {
  temp_dir d;
  auto r = run(d, "workload llama-block -o g.json -q");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(fs::exists(d / "g.json"));
  r = run(d, "validate g.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("ok") != std::string::npos);
  r = run(d, "info --json g.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["ops"].get<int>() > 10);
  CHECK(j["edges"].get<int>() >= j["ops"].get<int>() - 1);
  CHECK(j["flops"].get<double>() > 0);
  r = run(d, "convert '" + paper_dir + "/chain_mm_112nodes.txt' -o chain.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run(d, "info --json chain.json");
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["ops"].get<int>() == 76);
  r = run(d, "cluster dgx1-v100 -o c.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run(d, "validate c.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("8 devices") != std::string::npos);
}

TEST_CASE("cli: place, simulate --json, simulate --runs, trace") {
  temp_dir d;
  REQUIRE(run(d, "workload llama-block -o g.json -q").rc == 0);
  REQUIRE(run(d, "cluster dgx1-v100 -o c.json").rc == 0);
  auto r = run(d, "place --graph g.json --cluster c.json --method heft -o p.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("makespan") != std::string::npos);
  auto p = nlohmann::json::parse(slurp(d / "p.json"));
  CHECK(p["format"] == "doppler-placement/1");
  CHECK(p["method"] == "heft");

  r = run(d, "simulate --graph g.json --cluster c.json --placement p.json --json --trace t.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  double makespan = j["makespan_s"].get<double>(), lb = j["lower_bound_s"].get<double>();
  CHECK(lb > 0);
  CHECK(makespan >= lb * (1 - 1e-9));
  CHECK(j["devices"].size() == 8);
  auto t = nlohmann::json::parse(slurp(d / "t.json"));
  CHECK(t["traceEvents"].size() > 0);

  r = run(d, "simulate --graph g.json --cluster dgx1-v100 --placement p.json --runs 8 --jitter 0.2 --json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  j = nlohmann::json::parse(r.out);
  CHECK(j["std_s"].get<double>() > 0);
  CHECK(j["p95_s"].get<double>() >= j["p50_s"].get<double>());
  CHECK(j["mean_s"].get<double>() > 0);

  // Without --placement simulate places with cp; the paper's .txt is accepted directly.
  r = run(d, "simulate --graph '" + paper_dir + "/ffnn_192nodes.txt' --cluster doppler-paper:4 --model simple --json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  j = nlohmann::json::parse(r.out);
  CHECK(j["method"] == "cp");
  CHECK(j["lower_bound_s"].get<double>() == doctest::Approx(56.6958).epsilon(1e-4));

  r = run(d, "simulate --graph g.json --cluster c.json --placement p.json --straggler gpu3:2");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("utilization") != std::string::npos);
}

TEST_CASE("cli: simulate --transfers planned moves shared tensors by plan on dgx1-v100") {
  temp_dir d;
  REQUIRE(run(d, "workload llama-layer --dim 1024 --heads 8 --ffn 2752 --seq 512 --shards 8 -o g.json -q").rc == 0);
  REQUIRE(run(d, "place --graph g.json --cluster dgx1-v100 --method heft -o p.json").rc == 0);
  auto direct = run(d, "simulate --graph g.json --cluster dgx1-v100 --placement p.json --json");
  auto planned = run(d, "simulate --graph g.json --cluster dgx1-v100 --placement p.json --transfers planned --json");
  REQUIRE_MESSAGE(direct.rc == 0, direct.err);
  REQUIRE_MESSAGE(planned.rc == 0, planned.err);
  auto jd = nlohmann::json::parse(direct.out), jp = nlohmann::json::parse(planned.out);
  CHECK(jd["transfers"] == "direct");
  CHECK(jp["transfers"] == "planned");
  double bd = 0, bp = 0;
  for (auto& l : jd["links"]) bd += l["bytes"].get<double>();
  for (auto& l : jp["links"]) bp += l["bytes"].get<double>();
  CHECK(bp < bd);  // multicast: shared first hops carry a tensor once
  CHECK(jp["makespan_s"].get<double>() < jd["makespan_s"].get<double>());
  auto bad = run(d, "simulate --graph g.json --cluster dgx1-v100 --transfers sometimes");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--transfers") != std::string::npos);
  bad = run(d, "simulate --graph g.json --cluster dgx1-v100 --transfers planned --model simple");
  CHECK(bad.rc == 2);
  bad = run(d, "simulate --graph g.json --cluster dgx1-v100 --transfers planned --plan-method nope");
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--plan-method") != std::string::npos);
}

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

TEST_CASE("cli: bad input exits 2 naming the file and the path") {
  temp_dir d;
  write(d / "bad.json", R"({"format": "doppler-graph/1", "ops": [{"id": "x", "kind": "silu", "inputs": ["nope"]}]})");
  auto r = run(d, "place --graph bad.json --cluster p100x4");
  CHECK(r.rc == 2);
  CHECK(r.err.find("bad.json") != std::string::npos);
  CHECK(r.err.find("ops[0].inputs[0]") != std::string::npos);

  REQUIRE(run(d, "workload llama-block -o g.json -q").rc == 0);
  r = run(d, "place --graph g.json --cluster no-such-cluster");
  CHECK(r.rc == 2);
  CHECK(r.err.find("no-such-cluster") != std::string::npos);

  r = run(d, "place --graph g.json --cluster p100x4 --method no-such-method");
  CHECK(r.rc == 2);
  CHECK(r.err.find("no-such-method") != std::string::npos);

  write(d / "badp.json", R"({"format": "doppler-placement/1", "assignment": {"zz-not-an-op": "gpu0"}})");
  r = run(d, "simulate --graph g.json --cluster p100x4 --placement badp.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("badp.json") != std::string::npos);
  CHECK(r.err.find("assignment") != std::string::npos);

  r = run(d, "simulate --graph g.json --cluster p100x4 --model quantum");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--model") != std::string::npos);

  r = run(d, "simulate --graph missing.json --cluster p100x4");
  CHECK(r.rc != 0);
  CHECK(r.err.find("missing.json") != std::string::npos);
}

TEST_CASE("cli: --help of every command exits 0") {
  temp_dir d;
  for (const char* c : {"", "workload", "validate", "info", "convert", "cluster", "place", "simulate", "compare"}) {
    auto r = run(d, std::string(c) + " --help");
    CAPTURE(c);
    CHECK(r.rc == 0);
    CHECK(r.out.find("--help") != std::string::npos);
  }
}
