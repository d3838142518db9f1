// The `doppler` command end to end: runs the built binary in a temporary directory and checks exit
// codes, outputs and error messages.
#include <doctest/doctest.h>

#include "../cli_run.hpp"
#include "../temp_dir.hpp"
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string cli = DOPPLER_CLI_PATH;
const std::string paper_dir = DOPPLER_PAPER_DIR;


using cli_run::result;
using cli_run::run;
using cli_run::slurp;

void write(const std::string& f, const std::string& text) { std::ofstream(f) << text; }

}  // namespace

TEST_CASE("cli: workload, validate, info --json, convert, cluster") {
  temp_dir d;
  auto r = run(d, "workload");  // bare: lists the generators
  CHECK_MESSAGE(r.rc == 0, r.err);
  for (const char* name : {"chainmm:", "ffnn:", "llama-block:", "llama-layer:", "moe-layer:"})
    CHECK(r.out.find(name) != std::string::npos);
  // Options without a generator (or an empty name) are an error, not the list.
  for (const char* args : {"workload --dim 64 -o x.json", "workload ''"}) {
    r = run(d, args);
    CAPTURE(args);
    CHECK(r.rc == 2);
    CHECK(r.err.find("which generator? (chainmm, ffnn, llama-block, llama-layer, moe-layer)") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(d / "x.json"));
  r = run(d, "workload llama-block -o g.json -q");
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
  // convert never overwrites its input; an empty -o is an error, not the default name
  const auto before = slurp(d / "chain.json");
  r = run(d, "convert chain.json -o ./chain.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("is the input file") != std::string::npos);
  CHECK(slurp(d / "chain.json") == before);
  r = run(d, "workload ffnn -q -o ''");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--output") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(d / "ffnn.json"));
  r = run(d, "cluster dgx1-v100 -o c.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run(d, "validate c.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("8 devices") != std::string::npos);
}

TEST_CASE("cli: place --method search --start refines a given placement") {
  temp_dir d;
  const std::string g = "--graph '" + paper_dir + "/transformer_block_215nodes.txt' --cluster doppler-paper:4 --model simple";
  REQUIRE(run(d, "place " + g + " --method round-robin -o rr.json").rc == 0);
  auto makespan = [&](const std::string& file) {
    auto r = run(d, "simulate " + g + " --placement " + file + " --json");
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    return nlohmann::json::parse(r.out)["makespan_s"].get<double>();
  };
  auto r = run(d, "place " + g + " --method search --budget 300 --start rr.json -o s.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(makespan("s.json") < makespan("rr.json"));
  // Only search takes a start; a missing or foreign start file is a clean error naming it.
  r = run(d, "place " + g + " --method cp --start rr.json -o x.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--start") != std::string::npos);
  r = run(d, "place " + g + " --method search --start missing.json -o x.json");
  CHECK(r.rc != 0);
  CHECK(r.err.find("missing.json") != std::string::npos);
  REQUIRE(run(d, "workload llama-block -o other.json -q").rc == 0);
  REQUIRE(run(d, "place --graph other.json --cluster doppler-paper:4 --method cp -o other-p.json").rc == 0);
  r = run(d, "place " + g + " --method search --start other-p.json -o x.json");
  CHECK(r.rc != 0);
  CHECK(r.err.find("other-p.json") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "x.json"));
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

TEST_CASE("cli: bare place and simulate and compare work on the generated Llama block on cpu:4") {
  temp_dir d;
  // No --graph, --cluster or -o: the generated Llama block on 4 virtual CPU devices, placement.json.
  auto r = run(d, "place");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("no --graph given: using the generated Llama block (113 ops") != std::string::npos);
  CHECK(r.err.find("no --cluster given: using cpu:4") != std::string::npos);
  auto p = nlohmann::json::parse(slurp(d / "placement.json"));
  CHECK(p["format"] == "doppler-placement/1");
  CHECK(p["method"] == "cp");
  CHECK(p["assignment"].size() == 113);
  // The same graph as `workload llama-block` writes, and the same cluster as cpu:4: equal reports.
  REQUIRE(run(d, "workload llama-block -q -o g.json").rc == 0);
  auto bare = run(d, "simulate --json");
  auto given = run(d, "simulate --graph g.json --cluster cpu:4 --json");
  REQUIRE_MESSAGE(bare.rc == 0, bare.err);
  REQUIRE_MESSAGE(given.rc == 0, given.err);
  auto jb = nlohmann::json::parse(bare.out), jg = nlohmann::json::parse(given.out);
  CHECK(jb["devices"].size() == 4);
  CHECK(jb["makespan_s"].get<double>() == jg["makespan_s"].get<double>());
  CHECK(jb["lower_bound_s"].get<double>() == jg["lower_bound_s"].get<double>());
  CHECK(given.err.find("no --cluster given") == std::string::npos);
  r = run(d, "compare --methods cp,heft --seeds 1 --json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto jc = nlohmann::json::parse(r.out);
  CHECK(jc["cluster"] == "cpu:4");
  REQUIRE(jc["rows"].size() == 2);
  CHECK(jc["rows"][0]["method"] == "cp");
  CHECK(jc["rows"][1]["method"] == "heft");
  // A forgotten --cluster with a given graph is said out loud.
  r = run(d, "simulate --graph g.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("no --cluster given: using cpu:4") != std::string::npos);
  CHECK(r.err.find("no --graph given") == std::string::npos);
  // A file that is not there is still an error, not the default; so is an empty path (an unset
  // shell variable), which names the flag.
  r = run(d, "place --graph missing.json");
  CHECK(r.rc != 0);
  CHECK(r.err.find("no --graph given") == std::string::npos);
  CHECK(r.err.find("missing.json") != std::string::npos);
  r = run(d, "place --graph '' -o e.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--graph: an empty path") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "e.json"));
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
  for (const char* size : {"inf", "0.5", "1e-300", "2e12"}) {  // the comm planner's range, 1 B to 1 TiB
    bad = run(d, std::string("simulate --graph g.json --cluster dgx1-v100 --transfers planned --chunk-bytes ") + size);
    CHECK_MESSAGE(bad.rc == 2, size);
    CHECK(bad.err.find("--chunk-bytes") != std::string::npos);
    CHECK(bad.err.find("not a chunk size") != std::string::npos);
  }
  // The ring method plans allgathers only: the planner falls back to direct copies and warns, on
  // stderr, so --json's stdout stays one JSON object.
  auto ring = run(d, "simulate --graph g.json --cluster dgx1-v100 --placement p.json --transfers planned "
                     "--plan-method ring --json");
  REQUIRE_MESSAGE(ring.rc == 0, ring.err);
  CHECK(ring.err.find("copying directly") != std::string::npos);
  CHECK(nlohmann::json::parse(ring.out)["transfers"] == "planned");
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

namespace {

/// tiny.json of the bad-input audit: two inputs, a matmul, a silu and a synthetic op.
const char* tiny_graph =
    R"({"format": "doppler-graph/1", "name": "tiny", "ops": [{"id": "x", "kind": "input", "shape": [64, 128]},)"
    R"( {"id": "w1", "kind": "input", "shape": [128, 256]}, {"id": "h", "kind": "matmul", "inputs": ["x", "w1"],)"
    R"( "shape": [64, 256]}, {"id": "a", "kind": "silu", "inputs": ["h"], "shape": [64, 256]},)"
    R"( {"id": "s", "kind": "synthetic", "inputs": ["a"], "flops": 1e9, "bytes": 65536}]})";

/// True when the message is one printable line without C++ library internals.
bool clean_one_line(const std::string& err) {
  if (err.empty() || err.back() != '\n' || err.find('\n') != err.size() - 1) return false;
  for (char ch : err.substr(0, err.size() - 1))
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return false;
  for (const char* bad : {"std::", "bad_alloc", "vector::", "max_size()", "terminate"})
    if (err.find(bad) != std::string::npos) return false;
  return true;
}

bool has_run_command(const temp_dir& d) { return run(d, "run --help").rc == 0; }

}  // namespace

TEST_CASE("cli: -o writes through a symlink and into a FIFO instead of replacing them") {
  temp_dir d;
  fs::create_directories(d.path / "real");
  fs::create_directories(d.path / "lnk");
  write(d / "real/c.json", "old");
  fs::create_symlink("../real/c.json", d.path / "lnk/link.json");
  auto r = run(d, "cluster p100x4 -o lnk/link.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(fs::is_symlink(fs::symlink_status(d.path / "lnk/link.json")));
  CHECK(nlohmann::json::parse(slurp(d / "real/c.json"))["format"] == "doppler-cluster/1");

  REQUIRE(::mkfifo((d / "pipe").c_str(), 0600) == 0);
  std::string cmd = "cd '" + d.path.string() + "' && { cat pipe > got & '" + cli +
                    "' cluster p100x4 -o pipe > _out 2> _err; rc=$?; wait; exit $rc; }";
  int status = std::system(cmd.c_str());
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), slurp(d / "_err"));
  struct stat st {};
  REQUIRE(::lstat((d / "pipe").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(nlohmann::json::parse(slurp(d / "got"))["format"] == "doppler-cluster/1");

  fs::create_directories(d.path / "adir");
  r = run(d, "cluster p100x4 -o adir");
  CHECK(r.rc == 2);  // refused before anything is written (check_outputs)
  CHECK(r.err.find("adir: --output: bad argument: is a directory") != std::string::npos);
  CHECK(fs::is_directory(d.path / "adir"));
}

TEST_CASE("cli: --streams, --jitter, --budget and --seed are range-checked") {
  temp_dir d;
  write(d / "tiny.json", tiny_graph);
  // A workload dimension past 64 bits is named as typed (CLI11 clamped it to 2^63 - 1, which the
  // generator's range check then printed).
  auto big = run(d, "workload ffnn --dim 99999999999999999999 -o w.json");
  CHECK(big.rc == 2);
  CHECK(big.err.find("--dim: must be within 64 bits") != std::string::npos);
  CHECK(big.err.find("got 99999999999999999999") != std::string::npos);
  CHECK(big.err.find("got 9223372036854775807") == std::string::npos);
  // A leading zero is decimal, as the check said (CLI11 alone reads 010 as octal 8).
  REQUIRE(run(d, "workload ffnn --dim 010 --ffn 20 --heads 2 -o w010.json").rc == 0);
  REQUIRE(run(d, "workload ffnn --dim 10 --ffn 20 --heads 2 -o w10.json").rc == 0);
  CHECK(slurp(d / "w010.json") == slurp(d / "w10.json"));
  for (std::string args : {"simulate --graph tiny.json --cluster p100x4 --streams 1000000000",
                           "simulate --graph tiny.json --cluster p100x4 --streams 0",
                           "place --graph tiny.json --cluster p100x4 --streams 2000000000",
                           "compare --graph tiny.json --cluster p100x4 --streams 257"}) {
    CAPTURE(args);
    auto r = run(d, args);
    CHECK(r.rc == 2);
    CHECK(r.err.find("--streams") != std::string::npos);
    CHECK(r.err.find("256") != std::string::npos);
    CHECK(clean_one_line(r.err));
  }
  if (has_run_command(d)) {
    auto r = run(d, "run --graph tiny.json --streams 20000 --repeat 1 --warmup 0");
    CHECK(r.rc == 2);
    CHECK(r.err.find("--streams") != std::string::npos);
  }
  for (std::string j : {"1e300", "30", "-1", "nan"}) {
    CAPTURE(j);
    auto r = run(d, "simulate --graph tiny.json --cluster p100x4 --json --runs 3 --jitter " + j);
    CHECK(r.rc == 2);
    CHECK(r.err.find("--jitter") != std::string::npos);
    CHECK(r.out.empty());
  }
  auto r = run(d, "simulate --graph tiny.json --cluster p100x4 --json --runs 3 --jitter 2");
  CHECK_MESSAGE(r.rc == 0, r.err);
  r = run(d, "place --graph tiny.json --cluster p100x4 --method search --budget -1");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--budget") != std::string::npos);
  r = run(d, "place --graph tiny.json --cluster p100x4 --seed -1");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--seed") != std::string::npos);
  r = run(d, "simulate --graph tiny.json --cluster p100x4 --seed -1 --json");
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  // 2^64 - 1 is a seed; one more is refused, not clamped to it
  r = run(d, "place --graph tiny.json --cluster p100x4 --seed 18446744073709551615 -o p.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  r = run(d, "place --graph tiny.json --cluster p100x4 --seed 18446744073709551616 -o p.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--seed") != std::string::npos);
  CHECK(r.err.find("at most 18446744073709551615") != std::string::npos);
  for (const char* seed : {"+18446744073709551616", "' 18446744073709551616'", "0x10000000000000000", "' -1'", "+5"}) {
    CAPTURE(seed);
    r = run(d, std::string("place --graph tiny.json --cluster p100x4 -o p.json --seed ") + seed);
    CHECK(r.rc == 2);
    CHECK(r.err.find("--seed") != std::string::npos);
  }
}

TEST_CASE("cli: metis keeps stdout clean for -o - and compare --json") {
  temp_dir d;
  write(d / "tiny.json", tiny_graph);
  auto r = run(d, "place --graph tiny.json --cluster p100x4 --method metis -o -");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("***") == std::string::npos);
  CHECK(nlohmann::json::parse(r.out)["format"] == "doppler-placement/1");
  r = run(d, "compare --graph tiny.json --cluster p100x4 --json --methods metis,cp");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(nlohmann::json::parse(r.out)["rows"].size() == 2);
}

TEST_CASE("cli: bad graph files get one clean line naming the file") {
  temp_dir d;
  write(d / "bigN.txt", "2000000000\n0\n0\n1\n1,4\n");
  write(d / "hugeN.txt", "4000000000000000000\n0\n0\n1\n1,4\n");
  write(d / "array.json", "[1,2,3]");
  write(d / "null.json", "null");
  write(d / "bin.dat", std::string("\x7f" "ELF\x02\x01\x01\0\0\xff\xfe\x01", 12));
  write(d / "fmtnum.json", R"({"format": 1, "name": "x", "ops": []})");
  write(d / "long.txt", "3\n0\n0\n1\n1,4\n" + std::string(200000, '9') + "x\n");
  for (std::string f : {"bigN.txt", "hugeN.txt", "array.json", "null.json", "bin.dat", "fmtnum.json", "long.txt"}) {
    for (std::string cmd : {"validate", "info"}) {
      CAPTURE(f);
      CAPTURE(cmd);
      auto r = run(d, cmd + " " + f);
      CHECK(r.rc == 2);
      CHECK(r.err.find(f) != std::string::npos);
      CHECK(r.err.size() < 400);
      CHECK(clean_one_line(r.err));
      if (f.ends_with(".txt")) CHECK(r.err.find("line ") != std::string::npos);
      else CHECK(r.err.find("non-negative integer") == std::string::npos);
    }
  }
  // Several files: each bad one on its own line, then the count naming the first.
  {
    auto many = run(d, "validate array.json null.json");
    CHECK(many.rc == 2);
    CHECK(many.err.find("bad array.json") != std::string::npos);
    CHECK(many.err.find("bad null.json") != std::string::npos);
    CHECK(many.err.find("2 of 2 files are invalid (the first: array.json)") != std::string::npos);
  }
  CHECK(run(d, "validate fmtnum.json").err.find("must be a string") != std::string::npos);
  CHECK(run(d, "validate fmtnum.json").err.find("\"name\"") == std::string::npos);
  write(d / "bom.json", "\xEF\xBB\xBF" + std::string(tiny_graph));
  auto r = run(d, "validate bom.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
}

TEST_CASE("cli: validate checks placements, costs, demands and schedules, and says which formats it takes") {
  temp_dir d;
  write(d / "tiny.json", tiny_graph);
  REQUIRE(run(d, "place --graph tiny.json --cluster p100x4 -o p.json").rc == 0);
  auto r = run(d, "validate --graph tiny.json --cluster p100x4 p.json tiny.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("ok  p.json: doppler-placement/1") != std::string::npos);
  r = run(d, "validate p.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("--graph") != std::string::npos);
  write(d / "badp.json", R"({"format": "doppler-placement/1", "assignment": {"nope": "gpu0"}})");
  r = run(d, "validate --graph tiny.json --cluster p100x4 badp.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("assignment") != std::string::npos);
  write(d / "costs.json", R"({"format": "doppler-costs/1", "efficiency": {"matmul": 0.5}})");
  r = run(d, "validate costs.json");
  CHECK_MESSAGE(r.rc == 0, r.err);
  write(d / "other.json", R"({"format": "doppler-curriculum/1"})");
  r = run(d, "validate other.json");
  CHECK(r.rc == 2);
  CHECK(r.err.find("doppler-curriculum/1") != std::string::npos);
  CHECK(r.err.find("doppler-placement/1") != std::string::npos);  // the accepted formats are listed
  r = run(d, "validate --help");
  CHECK(r.out.find("doppler-schedule/1") != std::string::npos);
  r = run(d, "plan-comm --help");
  if (r.rc == 0) {
    r = run(d, "plan-comm --cluster p100x4 --demand allgather --method greedy -o s.json");
    if (r.rc == 0) {
      r = run(d, "validate --cluster p100x4 s.json");
      CHECK_MESSAGE(r.rc == 0, r.err);
      CHECK(r.out.find("doppler-schedule/1") != std::string::npos);
      CHECK(run(d, "validate s.json").rc == 2);
    }
  }
}

TEST_CASE("cli: non-finite times, unknown commands, compare --methods none, calibrate on a gpu cluster, info overflow") {
  temp_dir d;
  write(d / "tiny.json", tiny_graph);
  // An absurd device speed (1e-300 FLOP/s) is refused when the cluster is read (cluster_limits).
  write(d / "tinyflops.json",
        R"({"format": "doppler-cluster/1", "name": "tf", "devices": [{"id": "d0", "kind": "gpu", "flops": 1e-300,)"
        R"( "memory": 1e10, "host": "h"}, {"id": "d1", "kind": "gpu", "flops": 1e-300, "memory": 1e10, "host": "h"}],)"
        R"( "links": [{"src": "d0", "dst": "d1", "bandwidth": 1e10, "latency": 1e-6, "duplex": true}]})");
  for (std::string cmd : {"place --method cp -o -", "simulate --json"}) {
    auto r = run(d, cmd + " --graph tiny.json --cluster tinyflops.json");
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("tinyflops.json") != std::string::npos);
    CHECK(r.err.find("devices[0].flops") != std::string::npos);
    CHECK(clean_one_line(r.err));
  }
  // The slowest accepted device (1 FLOP/s), the least efficiency (1e-6) and ops of 1e302 FLOPs: each
  // op's time (1e308 s) is finite, their chain is not (while the graph's total FLOPs are). Every
  // placer says so, naming the op, and nothing is written.
  write(d / "slow.json",
        R"({"format": "doppler-cluster/1", "name": "slow", "devices": [{"id": "d0", "kind": "gpu", "flops": 1,)"
        R"( "memory": 1e10, "host": "h"}, {"id": "d1", "kind": "gpu", "flops": 1, "memory": 1e10, "host": "h"}],)"
        R"( "links": [{"src": "d0", "dst": "d1", "bandwidth": 1e10, "latency": 1e-6, "duplex": true}]})");
  write(d / "chain.json", R"({"format": "doppler-graph/1", "name": "h", "ops": [{"id": "a", "kind": "synthetic",)"
                          R"( "flops": 1e302, "bytes": 8}, {"id": "b", "kind": "synthetic", "inputs": ["a"],)"
                          R"( "flops": 1e302, "bytes": 8}]})");
  write(d / "slowest.json", R"({"format": "doppler-costs/1", "efficiency": {"synthetic": 1e-6}})");
  for (std::string m : {"cp", "heft", "m-etf", "metis", "search", "single", "round-robin", "random"}) {
    CAPTURE(m);
    auto r = run(d, "place --graph chain.json --cluster slow.json --costs slowest.json -o - --method " + m);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("takes longer than a double can hold") != std::string::npos);
    CHECK(r.err.find("'a'") != std::string::npos);
    CHECK(clean_one_line(r.err));
  }
  // A placement given as a file: the simulator's own checks. a on d0, b on d1.
  write(d / "ab.json", R"({"format": "doppler-placement/1", "graph": "h", "cluster": "slow", "method": "file",)"
                       R"( "assignment": {"a": "d0", "b": "d1"}})");
  auto r = run(d, "simulate --graph chain.json --cluster slow.json --costs slowest.json --placement ab.json --json");
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("makespan is not finite") != std::string::npos);
  CHECK(clean_one_line(r.err));
  // A straggler factor makes one op's own time infinite: named with its device.
  r = run(d, "simulate --graph chain.json --cluster slow.json --costs slowest.json --placement ab.json --straggler d0:10 --json");
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("op 'a' would take inf s on device 'd0'") != std::string::npos);
  CHECK(r.err.find("not a finite time") != std::string::npos);
  if (has_run_command(d)) {
    r = run(d, "run --graph chain.json --cluster slow.json --costs slowest.json --backend emulate --placement ab.json "
               "--timeout 5 --repeat 1 --warmup 0");
    CHECK(r.rc == 2);
    CHECK(r.out.find("inf") == std::string::npos);
    CHECK(r.err.find("not finite") != std::string::npos);
    r = run(d, "calibrate --cluster p100x4");
    CHECK(r.rc == 2);
    CHECK(r.err.find("cpu:N") != std::string::npos);
  }
  r = run(d, "nosuch");
  CHECK(r.rc == 2);
  CHECK(r.err.find("'nosuch'") != std::string::npos);
  r = run(d, "--foo");  // an option before the command is named, not "a subcommand is required"
  CHECK(r.rc == 2);
  CHECK(r.err.find("unknown option '--foo'") != std::string::npos);
  CHECK(run(d, "--version").rc == 0);
  r = run(d, "");  // a bare doppler lists the commands (it said only "A subcommand is required")
  CHECK(r.rc == 2);
  CHECK(r.err.find("Subcommands:") != std::string::npos);
  CHECK(r.err.find("plan-comm") != std::string::npos);
  r = run(d, "compare --graph tiny.json --cluster p100x4 --methods none");
  CHECK(r.rc == 2);
  CHECK(r.err.find("unknown") == std::string::npos);
  CHECK(r.err.find("--policy") != std::string::npos);
  write(d / "huge.json", R"({"format": "doppler-graph/1", "name": "h", "ops": [{"id": "a", "kind": "synthetic",)"
                         R"( "flops": 1e308, "bytes": 8}, {"id": "b", "kind": "synthetic", "inputs": ["a"],)"
                         R"( "flops": 1e308, "bytes": 8}]})");
  r = run(d, "info huge.json");  // total FLOPs past a double: refused at load, naming the op
  CHECK(r.rc == 2);
  CHECK(r.err.find("ops[1].flops") != std::string::npos);
  CHECK(r.err.find("op 'b'") != std::string::npos);
  CHECK(clean_one_line(r.err));
}

TEST_CASE("cli: run --timeout ends an emulated run whose op would take far longer") {
  temp_dir d;
  if (!has_run_command(d)) return;
  std::string slow = tiny_graph;
  slow.replace(slow.find("1e9"), 3, "2e15");  // the synthetic op: hours on a cpu:2 device
  write(d / "slow.json", slow);
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(d, "run --graph slow.json --cluster cpu:2 --backend emulate --timeout 2 --repeat 1 --warmup 0");
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.rc != 0);
  CHECK(r.err.find("timed out") != std::string::npos);
  CHECK(r.err.find("'s'") != std::string::npos);
  CHECK(took < 20);
}

TEST_CASE("cli: every command runs OpenBLAS's AVX2 kernels where the CPU has them and a user's choice wins") {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  temp_dir d;
  // Unpinned, OpenBLAS picks from the CPU (on VMs that hide the CPU's model: its generic Prescott).
  const std::string clean = "-u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY -u DOPPLER_NATIVE_KERNELS";
  auto r = run(d, "--version", clean);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) CHECK_MESSAGE(r.out.find("(CPU kernels: OpenBLAS Haswell)") != std::string::npos, r.out);
  r = run(d, "--version", clean + " OPENBLAS_CORETYPE=Zen");
  CHECK_MESSAGE(r.out.find("(CPU kernels: OpenBLAS Zen)") != std::string::npos, r.out);
  if (!has_run_command(d)) return;
  // What `run` reports is what its matmuls ran: the same kernels, in the restarted process.
  write(d / "g.json", tiny_graph);
  r = run(d, "run --graph g.json --cluster cpu:2 --repeat 1 --warmup 0 --json", clean);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  auto j = nlohmann::json::parse(r.out);
  if (avx2) CHECK(j.at("blas_core") == "Haswell");
  r = run(d, "run --graph g.json --cluster cpu:2 --repeat 1 --warmup 0 --json", clean + " OPENBLAS_CORETYPE=Zen");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(nlohmann::json::parse(r.out).at("blas_core") == "Zen");
#endif
}
