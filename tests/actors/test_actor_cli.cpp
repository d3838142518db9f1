// `doppler run` and `doppler calibrate` end to end through the built command.
#include <doctest/doctest.h>

#include "../temp_dir.hpp"
#include "shell.hpp"
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

using shell::cli;
using shell::check_refused;
using shell::sh;

/// Starts `doppler worker ARGS` (default `--devices cpu:2`) in the background (its output in t/w.log,
/// so that sh() does not wait for it; `timeout` bounds its life; its pid in t/w.pid) and returns its
/// HOST:PORT.
std::string start_worker(const temp_dir& t, const std::string& args = "--devices cpu:2") {
  REQUIRE(sh("(timeout 300 " + cli + " worker " + args + " > " + (t / "w.log") + " 2>&1 & echo $! > " +
             (t / "w.pid") + ")").code == 0);
  std::string at;
  for (int k = 0; k < 100 && at.empty(); ++k) {
    std::ifstream log(t / "w.log");
    std::string word;
    while (log >> word)
      if (word == "on" && log >> word) at = word;
    if (at.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(!at.empty());
  return at;
}

}  // namespace

TEST_CASE("doppler run --json: measured and simulated makespans, trace written") {
  temp_dir t;
  REQUIRE(sh(cli + " workload llama-block --dim 64 --heads 4 --seq 16 --shards 2 -o " + (t / "g.json")).code == 0);
  for (std::string mode : {"wc", "bsp"}) {
    auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:3 --mode " + mode +
                " --repeat 2 --json --trace " + (t / "trace.json"));
    CAPTURE(r.out);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["makespan_s"].get<double>() > 0);
    CHECK(j["simulated_s"].get<double>() > 0);
    CHECK(j["makespans_s"].size() == 2);
    CHECK(j["mode"] == mode);
    CHECK(j["trace"] == t / "trace.json");
    std::ifstream in(t / "trace.json");
    auto trace = nlohmann::json::parse(in);
    CHECK(trace["otherData"]["source"] == "cpu");
    CHECK(trace["otherData"]["backend"] == "cpu");
    CHECK(j["backend"] == "cpu");
  }
  // An emulated run's op times are modelled: its trace and its JSON say so.
  auto em = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:3 --backend emulate --repeat 1 --json --trace " +
               (t / "em.json"));
  REQUIRE_MESSAGE(em.code == 0, em.out);
  CHECK(nlohmann::json::parse(em.out)["backend"] == "emulate");
  std::ifstream in(t / "em.json");
  auto trace = nlohmann::json::parse(in);
  CHECK(trace["otherData"]["source"] == "cpu");  // FORMATS.md: "simulator", "cpu" or "cuda"
  CHECK(trace["otherData"]["backend"] == "emulate");
  auto bogus = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:3 --backend bogus");
  CHECK(bogus.code == 2);
  CHECK(bogus.out.find("backends: cpu, null, emulate, cuda") != std::string::npos);
}

TEST_CASE("doppler run without --graph runs the generated Llama block on cpu:4") {
  temp_dir t;
  auto r = sh("cd '" + t.path.string() + "' && " + cli + " run --repeat 1 --json");
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("no --graph given") != std::string::npos);
  // stdout's one JSON line is the last line (the notes on stderr come first).
  const auto start = r.out.rfind('\n', r.out.size() - 2);
  auto j = nlohmann::json::parse(r.out.substr(start == std::string::npos ? 0 : start + 1));
  CHECK(j["graph"] == "generated:llama-block");
  CHECK(j["cluster"] == "cpu:4");
  CHECK(j["makespan_s"].get<double>() > 0);
}

TEST_CASE("doppler run reports the host buffer cache and DOPPLER_HOST_CACHE_MB=0 turns it off") {
  temp_dir t;
  // dim 256 x seq 128 floats = 128 KiB per activation: above the cache's 64 KiB floor.
  REQUIRE(sh(cli + " workload llama-block --dim 256 --heads 4 --seq 128 --shards 2 -o " + (t / "g.json")).code == 0);
  const std::string run = " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 2 --json";
  auto on = sh(cli + run);
  CAPTURE(on.out);
  REQUIRE(on.code == 0);
  auto j = nlohmann::json::parse(on.out);
  const auto hits = j["host_cache"]["hits"].get<std::size_t>(), misses = j["host_cache"]["misses"].get<std::size_t>();
  CHECK(hits > 0);
  CHECK(misses < hits);  // after the warm-up run the measured runs reuse its buffers
  CHECK(j["host_cache"]["cached_bytes"].get<std::size_t>() > 0);
  auto off = sh("DOPPLER_HOST_CACHE_MB=0 " + cli + run);
  CAPTURE(off.out);
  REQUIRE(off.code == 0);
  j = nlohmann::json::parse(off.out);
  CHECK(j["host_cache"]["hits"] == 0);
  CHECK(j["host_cache"]["limit_bytes"] == 0);
  auto text = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 2");
  CHECK(text.out.find("large buffers reused") != std::string::npos);
}

TEST_CASE("doppler run: a placement file is used as given and bad input fails naming it") {
  temp_dir t;
  REQUIRE(sh(cli + " workload ffnn --dim 32 --ffn 64 --shards 2 -o " + (t / "g.json")).code == 0);
  auto place = sh(cli + " place --graph " + (t / "g.json") + " --cluster cpu:2 --method round-robin -o " + (t / "p.json"));
  CAPTURE(place.out);
  REQUIRE(place.code == 0);
  auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --placement " + (t / "p.json"));
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("measured makespan") != std::string::npos);
  CHECK(r.out.find("simulated makespan") != std::string::npos);
  CHECK(sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --mode nope").code == 2);
  auto missing = sh(cli + " run --graph " + (t / "missing.json") + " --cluster cpu:2");
  CHECK(missing.code != 0);
  CHECK(missing.out.find("missing.json") != std::string::npos);
  CHECK(sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 0").code == 2);
  // Values the engine checks are named by their flag; planned transfers' options without them are said.
  for (const auto& [args, flag] : {std::pair<const char*, const char*>{"--scheduler foo", "--scheduler"},
                                   {"--transfers planned --plan-method foo", "--plan-method"},
                                   {"--transfers planned --refine foo", "--refine"},
                                   {"--tls-cert x.pem", "--tls-cert"}}) {
    auto s = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 1 " + args);
    CAPTURE(s.out);
    CHECK(s.code == 2);
    CHECK(s.out.find(std::string(flag) + ": bad argument") != std::string::npos);
  }
  auto noted = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 1 --refine milp");
  CHECK(noted.code == 0);
  CHECK(noted.out.find("note: --refine has no effect without --transfers planned") != std::string::npos);
  // --straggler: a slowed device runs; an unknown device or a factor below 1 names the flag.
  CHECK(sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 1 --straggler cpu1:2").code == 0);
  for (const char* bad : {"cpu7:2", "cpu0:0.5", "cpu0"}) {
    auto s = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --straggler " + bad);
    CAPTURE(s.out);
    CHECK(s.code == 2);
    CHECK(s.out.find("--straggler") != std::string::npos);
  }
}

TEST_CASE("doppler run --timeout: the run fails naming the op, and the process does not wait for the kernel") {
  temp_dir t;
  // Three chained 3072^3 matmuls on one device: seconds of kernels, each uninterruptible.
  REQUIRE(sh(cli + " workload chainmm --dim 3072 --shards 1 --matrices 4 -q -o " + (t / "g.json")).code == 0);
  auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:1 --warmup 0 --timeout 0.05");
  CAPTURE(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("timed out after 50 ms") != std::string::npos);
  CHECK(r.out.find("op '") != std::string::npos);
  // The engine was not destroyed (its destructor would wait for the running kernel): main's
  // exit path was not taken, this one was.
  CHECK(r.out.find("exiting without waiting for kernels still running") != std::string::npos);
  CHECK(r.out.find("measured makespan") == std::string::npos);
}

TEST_CASE("doppler run: an op that fails while another device runs a kernel ends the process at once") {
  temp_dir t;
  // gpu0 multiplies 6144^2 matrices (4.6e11 FLOPs: several seconds on one core). gpu1 first runs a
  // synthetic op of about a second, so the matmul is under way, then one whose output (1.5x this
  // host's memory) the host cannot give: it fails. The failure is reported without unwinding to the
  // engine's destructor, which would wait for the matmul.
  const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  REQUIRE(ram > 0);
  std::ofstream(t / "c.json") << R"({"format": "doppler-cluster/1", "name": "two", "devices": [
    {"id": "gpu0", "kind": "gpu", "flops": 1e13, "memory": 1e14}, {"id": "gpu1", "kind": "gpu", "flops": 1e13, "memory": 1e14}],
    "links": [{"src": "gpu0", "dst": "gpu1", "bandwidth": 1e10, "duplex": true}]})";
  std::ofstream(t / "g.json") << R"({"format": "doppler-graph/1", "name": "mix", "ops": [
    {"id": "a", "kind": "input", "shape": [6144, 6144]}, {"id": "b", "kind": "input", "shape": [6144, 6144]},
    {"id": "p", "kind": "matmul", "inputs": ["a", "b"], "shape": [6144, 6144]},
    {"id": "c", "kind": "input", "shape": [32, 32]},
    {"id": "w", "kind": "synthetic", "inputs": ["c"], "flops": 3e10, "bytes": 64},
    {"id": "s", "kind": "synthetic", "inputs": ["w"], "flops": 1e6, "bytes": )"
                           << std::to_string(static_cast<long long>(1.5 * ram)) << "}]}";
  std::ofstream(t / "p.json") << R"({"format": "doppler-placement/1",
    "assignment": {"a": "gpu0", "b": "gpu0", "p": "gpu0", "c": "gpu1", "w": "gpu1", "s": "gpu1"}})";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster " + (t / "c.json") + " --placement " +
              (t / "p.json") + " --warmup 0 --repeat 1");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CAPTURE(r.out);
  CHECK(r.code == 1);
  CHECK(r.out.find("op 's'") != std::string::npos);
  CHECK(r.out.find("does not fit in this host's memory") != std::string::npos);
  CHECK(r.out.find("exiting without waiting for kernels still running") != std::string::npos);
  // about 1 s (the synthetic op); waiting for the matmul would take 5-10 s more
  CHECK(took < 4.0);
}

TEST_CASE("doppler run --workers and doppler worker reject bad arguments") {
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 32 -o " + (t / "g.json")).code == 0);
  std::string run = cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --workers ";
  CHECK(sh(run + "127.0.0.1").code == 2);            // no port
  CHECK(sh(run + "127.0.0.1:0").code == 2);          // port 0
  CHECK(sh(run + "127.0.0.1:70000").code == 2);      // out of range
  CHECK(sh(run + "127.0.0.1:12ab").code == 2);       // not a number
  auto unreachable = sh(run + "127.0.0.1:1");        // nobody listens there
  CHECK(unreachable.code == 1);
  CHECK(unreachable.out.find("worker 127.0.0.1:1") != std::string::npos);
  auto twice = sh(run + "127.0.0.1:1 --workers 127.0.0.1:1");  // refused before connecting to either
  CHECK(twice.code == 2);
  CHECK(twice.out.find("127.0.0.1:1 is listed twice") != std::string::npos);
  CHECK(sh(cli + " worker --cluster cpu:2 --devices cpu7").code == 2);
  CHECK(sh(cli + " worker --devices cpu:2 --listen nonsense").code == 2);
  CHECK(sh(cli + " worker --devices cpu:2 --listen 127.0.0.1:99999").code == 2);
  CHECK(sh(cli + " worker --listen 127.0.0.1:0").code == 2);  // nothing to serve
  auto bad_host = sh(cli + " worker --devices cpu:2 --listen 203.0.113.7:0");  // not an address of this host
  CHECK(bad_host.code != 0);
  CHECK(bad_host.out.find("203.0.113.7") != std::string::npos);
  auto help = sh(cli + " worker --help");
  CHECK(help.out.find("--listen") != std::string::npos);
  CHECK(help.out.find("--token") != std::string::npos);
}

TEST_CASE("doppler worker --backend emulate times with its own cluster: a run on another cluster is refused") {
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 32 -o " + (t / "g.json")).code == 0);
  std::string at = start_worker(t, "--cluster p100x4 --devices gpu0 gpu1 gpu2 gpu3 --backend emulate");
  std::string run = cli + " run --graph " + (t / "g.json") + " --json --warmup 0 --workers " + at;
  auto same = sh(run + " --cluster p100x4");
  CHECK_MESSAGE(same.code == 0, same.out);
  // the ids gpu0..gpu3 exist on the DGX-1 too: once the run went ahead, timed with P100 rates
  auto other = sh(run + " --cluster dgx1-v100");
  CHECK(other.code == 2);
  CHECK(other.out.find("emulates its kernels with the rates of its own cluster 'p100x4'") != std::string::npos);
  CHECK(other.out.find("'dgx1-v100'") != std::string::npos);
  CHECK(sh("kill $(cat " + (t / "w.pid") + ")").code == 0);
}

TEST_CASE("doppler run --workers: two runs at once on one worker both finish and the later one waits its turn") {
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 32 -o " + (t / "g.json")).code == 0);
  std::string at = start_worker(t);
  std::string run = cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --json --warmup 0 --workers " + at;
  check_refused(run + " --busy-wait -1", "--busy-wait");
  check_refused(run + " --busy-wait nan", "--busy-wait");
  // 1e10 s once overflowed the milliseconds and failed as a request timeout at once
  for (const char* v : {"1e10", "inf", "nan", "0"}) check_refused(run + " --timeout " + v, "--timeout");
  check_refused(run + " --straggler cpu0:1e308", "--straggler");
  check_refused(run + " --straggler cpu0:2x", "factor '2x' is not a number");  // stod read "2" and ran
  CHECK(sh(run + " --help").out.find("--busy-wait") != std::string::npos);
  // the first keeps the worker busy for seconds; the second starts while it runs
  auto both = sh("(" + run + " --repeat 2000 > " + (t / "first.json") + " 2> " + (t / "first.err") + "; echo $? > " +
                 (t / "first.rc") + ") & sleep 0.3; " + run + " --repeat 3 > " + (t / "second.json") + "; rc=$?; wait; exit $rc");
  CAPTURE(both.out);
  REQUIRE(both.code == 0);
  std::ifstream rc(t / "first.rc");
  int first_rc = -1;
  rc >> first_rc;
  CHECK(first_rc == 0);
  std::ifstream f1(t / "first.json"), f2(t / "second.json");
  auto j1 = nlohmann::json::parse(f1), j2 = nlohmann::json::parse(f2);
  CHECK(j1["makespans_s"].size() == 2000);
  CHECK(j2["makespans_s"].size() == 3);
  // one of the two waited for the other's run at least once
  CHECK(j1["busy_waited_s"].get<double>() + j2["busy_waited_s"].get<double>() > 0);
  CHECK(sh("kill $(cat " + (t / "w.pid") + ")").code == 0);
}

TEST_CASE("doppler run --backend cuda: runs on a GPU, or says clearly why not") {
  temp_dir t;
  REQUIRE(sh(cli + " workload llama-block --dim 64 --heads 4 --ffn 96 --seq 16 --shards 2 -o " + (t / "g.json")).code == 0);
  auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --backend cuda --repeat 1 --warmup 0");
  if (r.code == 0) {  // a machine with a GPU
    CHECK(r.out.find("measured makespan") != std::string::npos);
  } else {
    CAPTURE(r.out);
    CHECK(r.code >= 1);
    CHECK(r.code <= 2);  // an error exit, not a crash
    CHECK(r.out.find("--backend") != std::string::npos);
    CHECK(r.out.find("cuda:") != std::string::npos);
  }
}

TEST_CASE("doppler calibrate --workers writes the deployment's cluster with its links between processes") {
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 32 -o " + (t / "g.json")).code == 0);
  const std::string cal = cli + " calibrate --cluster cpu:4 --rounds 1 --graph " + (t / "g.json") + " -o " + (t / "cost.json");
  check_refused(cal + " --workers 127.0.0.1:1", "--cluster-out");
  check_refused(cal + " --workers nohost --cluster-out " + (t / "d.json"), "--workers");
  check_refused(cal + " --workers 127.0.0.1:1 --busy-wait nan --cluster-out " + (t / "d.json"), "--busy-wait");
  const std::string at = start_worker(t);  // serves cpu0 cpu1; cpu2 cpu3 stay in calibrate's process
  auto r = sh(cal + " --workers " + at + " --cluster-out " + (t / "d.json"));
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("between processes (" + at + " and engine)") != std::string::npos);
  std::ifstream in(t / "d.json");
  auto j = nlohmann::json::parse(in);
  CHECK(j["name"] == "cpu:4 over 2 processes (calibrated)");
  REQUIRE(j["devices"].size() == 4);
  CHECK(j["devices"][0]["host"] == at);
  CHECK(j["devices"][1]["host"] == at);
  CHECK(j["devices"][2]["host"] == "engine");
  CHECK(j["devices"][3]["host"] == "engine");
  std::map<std::string, nlohmann::json> link;  // "cpu0-cpu2" -> its link
  for (const auto& l : j["links"]) link[l["src"].get<std::string>() + "-" + l["dst"].get<std::string>()] = l;
  REQUIRE(link.size() == 6);  // every pair, duplex
  // within a process the in-process numbers (the same in both), between processes the measured ones
  CHECK(link["cpu0-cpu1"]["latency"] == link["cpu2-cpu3"]["latency"]);
  CHECK(link["cpu0-cpu1"]["bandwidth"] == link["cpu2-cpu3"]["bandwidth"]);
  for (const char* apart : {"cpu0-cpu2", "cpu0-cpu3", "cpu1-cpu2", "cpu1-cpu3"}) {
    CAPTURE(apart);
    CHECK(link[apart]["latency"] == link["cpu0-cpu2"]["latency"]);
    // serialized and sent over TCP: slower to start than a pointer handed over inside one process
    CHECK(link[apart]["latency"].get<double>() > link["cpu2-cpu3"]["latency"].get<double>());
  }
  auto sim = sh(cli + " simulate --graph " + (t / "g.json") + " --cluster " + (t / "d.json") + " --costs " +
                (t / "cost.json"));
  CAPTURE(sim.out);
  CHECK(sim.code == 0);
  CHECK(sh("kill $(cat " + (t / "w.pid") + ")").code == 0);
}

TEST_CASE("doppler calibrate writes a cost table the simulator loads") {
  temp_dir t;
  auto r = sh(cli + " calibrate --cluster cpu:2 --rounds 1 -o " + (t / "cost.json") + " --cluster-out " + (t / "c.json"));
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  std::ifstream in(t / "cost.json");
  auto j = nlohmann::json::parse(in);
  CHECK(j["format"] == "doppler-costs/1");
  CHECK(j["efficiency"]["matmul"].get<double>() == doctest::Approx(1.0));
  REQUIRE(sh(cli + " workload chainmm --dim 32 -o " + (t / "g.json")).code == 0);
  auto run = sh(cli + " run --graph " + (t / "g.json") + " --cluster " + (t / "c.json") + " --costs " + (t / "cost.json") + " --json");
  CAPTURE(run.out);
  CHECK(run.code == 0);
  // Graphs it cannot learn from are refused before any timing: no matmul (was an internal error),
  // and a synthetic op that would run for hours (was a hang).
  const std::string paper = std::string(DOPPLER_PAPER_DIR) + "/ffnn_192nodes.txt";  // synthetic ops only
  check_refused(cli + " calibrate --cluster cpu:1 --rounds 1 --graph " + paper + " -o " + (t / "x.json"), "no matmul");
  {
    std::ofstream(t / "syn.json") << R"({"format": "doppler-graph/1", "ops": [{"id": "s", "kind": "synthetic", "flops": 1e15, "bytes": 8}]})";
  }
  auto syn = check_refused(cli + " calibrate --cluster cpu:1 --rounds 1 --graph " + (t / "syn.json") + " -o " + (t / "x.json"),
                           "synthetic op 's'");
  CHECK(syn.out.find("syn.json") != std::string::npos);
}

TEST_CASE("doppler calibrate: a kind faster per FLOP than matmul is byte-rated, absurd declared costs and bad outputs refused") {
  temp_dir t;
  // A 1x1 matmul sets a tiny FLOP rate; gelu's FLOPs then run faster than matmul's. Its efficiency
  // was clamped to 1 (the table printed 24292) and the simulator said 16 s for a 0.7 ms op.
  std::ofstream(t / "g.json") << R"({"format": "doppler-graph/1", "ops": [{"id": "x", "kind": "input", "shape": [1, 1]},)"
                                 R"({"id": "w", "kind": "input", "shape": [1, 1]}, {"id": "h", "kind": "matmul", "inputs": ["x", "w"], "shape": [1, 1]},)"
                                 R"({"id": "a", "kind": "input", "shape": [256, 1024]}, {"id": "g", "kind": "gelu", "inputs": ["a"], "shape": [256, 1024]}]})";
  auto r = sh(cli + " calibrate --cluster cpu:1 --rounds 1 --graph " + (t / "g.json") + " -o " + (t / "cost.json"));
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(std::ifstream(t / "cost.json"));
  CHECK(j["bandwidth"].contains("gelu"));
  CHECK(j["efficiency"].value("gelu", 1.0) == 1.0);
  // A declared matmul cost past any device (the rate was inf, every efficiency NaN): refused by kind.
  std::ofstream(t / "huge.json") << R"({"format": "doppler-graph/1", "ops": [{"id": "x", "kind": "input", "shape": [4, 4]},)"
                                    R"({"id": "m", "kind": "matmul", "inputs": ["x", "x"], "shape": [4, 4], "flops": 1.7e308}]})";
  check_refused(cli + " calibrate --cluster cpu:1 --rounds 1 --graph " + (t / "huge.json") + " -o " + (t / "x.json"),
                "the matmul ops' declared FLOPs");
  CHECK_FALSE(std::filesystem::exists(t / "x.json"));
  // Output paths are checked before the measuring (a bad one failed after it).
  check_refused(cli + " calibrate --cluster cpu:1 --rounds 1 --graph " + (t / "g.json") + " -o " + (t / "no/such/dir/c.json"),
                "--output");
  check_refused(cli + " calibrate --cluster cpu:1 --rounds 1 --graph " + (t / "g.json") + " -o " + (t / "c.json") +
                    " --cluster-out " + (t / "no/such/dir/h.json"),
                "--cluster-out");
  CHECK_FALSE(std::filesystem::exists(t / "c.json"));
  check_refused(cli + " run --graph " + (t / "g.json") + " --cluster cpu:1 --trace " + (t / "no/such/dir/t.json"), "--trace");
  // run takes --max-chunks as simulate does (the docs said so; run refused the flag)
  check_refused(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --transfers planned --max-chunks 0", "--max-chunks");
  CHECK(sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --repeat 1 --transfers planned --max-chunks 4").code == 0);
}

TEST_CASE("doppler run --learner --online: per-run lines, the exploration budget, state saved, bad input exits 2") {
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 4 --shards 2 -q -o " + (t / "g.json")).code == 0);
  auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:4 --learner cp --online --explore 0.1 " +
              "--repeat 20 --json --save-policy " + (t / "cp.json"));
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["learner"] == "cp");
  CHECK(j["runs"].size() == 20);
  CHECK(j["explored"] == 2);
  int explored = 0;
  for (const auto& run : j["runs"]) explored += run["explored"].get<bool>();
  CHECK(explored == 2);
  CHECK(j["runs"][0]["explored"] == false);
  CHECK(fs::exists(t / "cp.json"));

  auto text = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:2 --learner heft --online --repeat 3");
  CAPTURE(text.out);
  CHECK(text.code == 0);
  CHECK(text.out.find("online learning: learner heft") != std::string::npos);
  CHECK(text.out.find("3 runs, 1 explored") != std::string::npos);  // ceil(0.1 x 3) = 1

  check_refused(cli + " run --graph " + (t / "g.json") + " --learner no-such --online", "unknown learner 'no-such'");
  check_refused(cli + " run --graph " + (t / "g.json") + " --learner cp --online --explore 1.5", "--explore");
  // a trace records one placement's run; --online runs one per run (it was dropped without a word)
  check_refused(cli + " run --graph " + (t / "g.json") + " --learner cp --online --trace " + (t / "tr.json"), "--trace");
  auto lonely = sh(cli + " run --graph " + (t / "g.json") + " --online");
  CHECK(lonely.code == 2);
  check_refused(cli + " run --graph " + (t / "g.json") + " --learner cp --explore 0.2", "needs --online");
  // a state file into a missing directory: refused before the runs (it was found after them)
  auto nodir = check_refused(cli + " run --graph " + (t / "g.json") + " --learner cp --online --repeat 3 --save-policy " +
                                 (t / "no/such/s.json"),
                             "--save-policy");
  CHECK(nodir.out.find("runs,") == std::string::npos);
  auto help = sh(cli + " run --help");
  CHECK(help.out.find("--online") != std::string::npos);
  CHECK(help.out.find("--explore") != std::string::npos);
}

TEST_CASE("doppler run --learner doppler: forwarded to doppler-learn, online runs update a trained policy") {
  if (!shell::have_learner()) return;
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 4 --shards 2 -q -o " + (t / "g.json")).code == 0);
  REQUIRE(sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:4 --model wc --il-episodes 8 " +
             "--rl-episodes 8 --hidden 16 --steps 2 -o " + (t / "p.pt")).code == 0);
  auto r = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:4 --learner doppler --policy " + (t / "p.pt") +
              " --online --explore 0.5 --repeat 6 --json --save-policy " + (t / "p2.pt"));
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["learner"] == "doppler");
  CHECK(j["explored"] == 3);
  CHECK(j["updates"] == 3);  // each explored run's observation made one REINFORCE step (online batch 1)
  int updated_rows = 0;
  for (const auto& row : j["runs"]) updated_rows += row["updated"].get<bool>() ? 1 : 0;
  CHECK(updated_rows == 3);
  CHECK(fs::exists(t / "p2.pt"));
  // `place --method doppler --policy` places with the policy, as place-learned does.
  REQUIRE(sh(cli + " place-learned --graph " + (t / "g.json") + " --cluster cpu:4 --policy " + (t / "p.pt") +
             " -o " + (t / "learned.json")).code == 0);
  auto placed = sh(cli + " place --graph " + (t / "g.json") + " --cluster cpu:4 --method doppler --policy " +
                   (t / "p.pt") + " -o " + (t / "placed.json"));
  CAPTURE(placed.out);
  REQUIRE(placed.code == 0);
  auto read_json = [](const fs::path& f) { return nlohmann::json::parse(std::ifstream(f)); };
  auto learned = read_json(t / "learned.json"), via_place = read_json(t / "placed.json");
  CHECK(via_place["assignment"] == learned["assignment"]);
  CHECK(via_place["order"] == learned["order"]);
  check_refused(cli + " place --graph " + (t / "g.json") + " --cluster cpu:4 --method doppler", "--policy");
  CHECK(sh(cli + " place --graph " + (t / "g.json") + " --cluster cpu:4 --method cp --policy " + (t / "p.pt")).code == 2);
  auto again = sh(cli + " run --graph " + (t / "g.json") + " --cluster cpu:4 --learner doppler --policy " + (t / "p2.pt") +
                  " --repeat 1 --json");
  CAPTURE(again.out);
  CHECK(again.code == 0);
  // Phase III of `doppler train` runs through the learner actor: 5 measured episodes in the curve,
  // a REINFORCE step per 2 (their loss in the CSV), the greedy placement measured before phase III
  // and after each step (real-greedy rows), the last parameters measured once more (5 = 2 + 2 + 1).
  auto p3 = sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --model wc --il-episodes 4 --rl-episodes 4 " +
               "--real-episodes 5 --real-batch 2 --real-check 3 --hidden 16 --steps 2 -o " + (t / "p3.pt") + " --csv " +
               (t / "p3.csv") + " --svg " + (t / "p3.svg"));
  CAPTURE(p3.out);
  REQUIRE(p3.code == 0);
  CHECK(p3.out.find("phase III (learner actor)") != std::string::npos);
  // The report compares fresh measurements (--real-check of each placement), not the ones that chose.
  CHECK(p3.out.find("3 fresh measurements of 1 run each, interleaved, mean ± standard error") != std::string::npos);
  {  // "makespan A ± a s -> B ± b s": both positive; the same numbers when phase II's parameters were kept
    const auto at = p3.out.find("measured greedy makespan ");
    REQUIRE(at != std::string::npos);
    std::istringstream line(p3.out.substr(at + 25));
    double a = 0, se_a = -1, b = 0, se_b = -1;
    std::string pm1, s1, arrow, pm2;
    line >> a >> pm1 >> se_a >> s1 >> arrow >> b >> pm2 >> se_b;
    CHECK(pm1 == "±");
    CHECK(arrow == "->");
    CHECK(a > 0);
    CHECK(b > 0);
    CHECK(se_a >= 0);
    CHECK(se_b >= 0);
    if (p3.out.find("wrote phase II's parameters") != std::string::npos) CHECK(a == b);
  }
  CHECK(p3.out.find("2 updates of 2 episodes, 3 greedy evaluations") != std::string::npos);
  std::ifstream csv(t / "p3.csv");
  int real_rows = 0, greedy_rows = 0, losses = 0;
  for (std::string line; std::getline(csv, line);) {
    const bool real = line.find(",real,") != std::string::npos;
    real_rows += real;
    greedy_rows += line.find(",real-greedy,") != std::string::npos;
    // episode,phase,makespan,best,loss,agreement: episodes 2 and 4 completed a batch.
    if (real && (line.starts_with("10,") || line.starts_with("12,"))) {
      auto f = line.find(',', line.find(',', line.find(',', line.find(',') + 1) + 1) + 1);
      losses += std::stod(line.substr(f + 1)) != 0;
    }
  }
  CHECK(real_rows == 5);
  CHECK(greedy_rows == 3);
  CHECK(losses == 2);
  CHECK(fs::exists(t / "p3.pt"));
  std::ifstream svg(t / "p3.svg");
  std::string svg_text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  CHECK(svg_text.find("<circle") != std::string::npos);  // the greedy evaluations
  CHECK(sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --il-episodes 1 --rl-episodes 1 --real-episodes 2 "
           "--real-batch 0 -o " + (t / "s.pt")).out.find("--real-batch") != std::string::npos);
  check_refused(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --real-episodes 2 --real-check 0 -o " +
                    (t / "s.pt"), "--real-check");
  // --real-straggler slows phase III's runtime only: it needs phase III, and a device of the cluster.
  auto lone = sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --il-episodes 1 --rl-episodes 1 "
                 "--real-straggler cpu0:2 -o " + (t / "s.pt"));
  CHECK(lone.code == 2);
  CHECK(lone.out.find("--real-episodes") != std::string::npos);
  auto slow = sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --model wc --il-episodes 2 --rl-episodes 2 "
                 "--real-episodes 2 --real-straggler cpu0:3 --hidden 16 --steps 2 -o " + (t / "s.pt"));
  CAPTURE(slow.out);
  CHECK(slow.code == 0);
  CHECK(sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --real-episodes 2 --real-straggler cpu5:3 -o " +
           (t / "s.pt")).code == 2);
  auto missing = sh(cli + " run --graph " + (t / "g.json") + " --learner doppler --policy " + (t / "none.pt") + " --online");
  CHECK(missing.code != 0);
  CHECK(missing.out.find("none.pt") != std::string::npos);
}

TEST_CASE("doppler train --real-workers: phase III measures on a doppler worker process") {
  if (!shell::have_learner()) return;
  temp_dir t;
  REQUIRE(sh(cli + " workload llama-block --dim 32 --heads 4 --seq 8 --shards 2 -o " + (t / "g.json")).code == 0);
  const std::string train = cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --model wc --il-episodes 2 " +
                            "--rl-episodes 2 --hidden 16 --steps 2 --real-batch 2 --real-check 2 -o " + (t / "p.pt");
  // bad settings are refused before any work
  check_refused(train + " --real-episodes 2 --real-backend bogus", "--real-backend");
  check_refused(train + " --real-backend null", "--real-episodes");
  check_refused(train + " --real-workers 127.0.0.1:1", "--real-episodes");
  check_refused(train + " --real-episodes 2 --real-workers nohost", "--real-workers");
  check_refused(train + " --real-episodes 2 --real-workers 127.0.0.1:1 --busy-wait -1", "--busy-wait");
  const std::string at = start_worker(t);
  auto r = sh(train + " --real-episodes 4 --real-workers " + at);
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("phase III: worker " + at + " serves cpu0 cpu1") != std::string::npos);
  CHECK(r.out.find("phase III (learner actor): measured greedy makespan") != std::string::npos);
  // a worker that is gone: phase III fails naming it (exit 1)
  REQUIRE(sh("kill $(cat " + (t / "w.pid") + ")").code == 0);
  auto gone = sh(train + " --real-episodes 4 --real-workers " + at);
  CHECK(gone.code == 1);
  CHECK(gone.out.find("worker " + at) != std::string::npos);
  // another backend for phase III's local runtime
  auto null = sh(train + " --real-episodes 2 --real-backend null");
  CAPTURE(null.out);
  CHECK(null.code == 0);
  // cuda: phase III on this machine's GPU, or a refusal naming the flag before phase I runs
  auto gpu = sh(train + " --real-episodes 2 --real-backend cuda");
  CAPTURE(gpu.out);
  if (gpu.code != 0) {
    CHECK(gpu.code == 2);
    CHECK(gpu.out.find("--real-backend") != std::string::npos);
    CHECK(gpu.out.find("teacher agreement after phase I") == std::string::npos);  // phases I and II did not run
  }
}
