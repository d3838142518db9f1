// `doppler train`, `place-learned` and `compare --policy` end to end through the built command.
#include <doctest/doctest.h>

#include "../temp_dir.hpp"
#include "shell.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using shell::cli;
using shell::check_refused;
using shell::sh;

}  // namespace

TEST_CASE("doppler train: --phases and --episodes, --teacher, several graphs") {
  if (!shell::have_learner()) return;
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 4 --shards 2 -q -o " + (t / "g.json")).code == 0);
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 3 --shards 2 -q -o " + (t / "g2.json")).code == 0);
  const std::string base = cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --model wc --hidden 16 --steps 2 ";
  auto rows = [](const fs::path& csv, const std::string& phase) {
    std::ifstream in(csv);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find("," + phase + ",") != std::string::npos;
    return n;
  };
  // --phases picks the phases, --episodes sets each listed one whose own flag is not given.
  auto il = sh(base + "--phases il --episodes 6 -o " + (t / "a.pt") + " --csv " + (t / "a.csv"));
  CAPTURE(il.out);
  REQUIRE(il.code == 0);
  CHECK(rows(t / "a.csv", "il") == 6);
  CHECK(rows(t / "a.csv", "rl") == 0);
  auto sim = sh(base + "--phases sim --episodes 9 --rl-episodes 5 -o " + (t / "b.pt") + " --csv " + (t / "b.csv"));
  CAPTURE(sim.out);
  REQUIRE(sim.code == 0);
  CHECK(rows(t / "b.csv", "il") == 0);
  CHECK(rows(t / "b.csv", "rl") == 5);
  CHECK(sim.out.find("no phase I") != std::string::npos);
  auto both = sh(base + "--episodes 3 -o " + (t / "c.pt") + " --csv " + (t / "c.csv"));  // default: il,sim
  REQUIRE(both.code == 0);
  CHECK(rows(t / "c.csv", "il") == 3);
  CHECK(rows(t / "c.csv", "rl") == 3);
  check_refused(base + "--phases il --rl-episodes 4 -o " + (t / "d.pt"), "--rl-episodes");
  check_refused(base + "--phases il,bogus -o " + (t / "d.pt"), "bogus");
  // --teacher: a placer's placement or a placement file; phase I's agreement is against it.
  auto heft = sh(base + "--teacher heft --il-episodes 4 --rl-episodes 0 -o " + (t / "e.pt"));
  CAPTURE(heft.out);
  REQUIRE(heft.code == 0);
  CHECK(heft.out.find("teacher heft (simulated") != std::string::npos);
  REQUIRE(sh(cli + " place --graph " + (t / "g.json") + " --cluster cpu:2 --method metis -o " + (t / "m.json")).code == 0);
  auto file = sh(base + "--teacher " + (t / "m.json") + " --il-episodes 4 --rl-episodes 0 -o " + (t / "f.pt"));
  CAPTURE(file.out);
  CHECK(file.code == 0);
  auto wrong_graph = sh(cli + " train --graph " + (t / "g2.json") + " --cluster cpu:2 --teacher " + (t / "m.json") +
                        " --il-episodes 1 --rl-episodes 0 -o " + (t / "f.pt"));
  CHECK(wrong_graph.code != 0);
  CHECK(wrong_graph.out.find("m.json") != std::string::npos);
  // auto (the default): single where it simulates faster than cp (the small Llama block on p100x4:
  // 13.7 against 28 µs), else cp.
  REQUIRE(sh(cli + " workload llama-block -q -o " + (t / "lb.json")).code == 0);
  auto small = sh(cli + " train --graph " + (t / "lb.json") + " --cluster p100x4 --model wc --hidden 16 --steps 2 "
                  "--il-episodes 2 --rl-episodes 0 -o " + (t / "s.pt"));
  CAPTURE(small.out);
  REQUIRE(small.code == 0);
  CHECK(small.out.find("teacher auto (single simulated") != std::string::npos);
  // --teacher-symmetry: a placement teacher relabels the block's four identical attention shards;
  // cp's rule has nothing to relabel.
  auto sym = sh(cli + " train --graph " + (t / "lb.json") + " --cluster p100x4 --model wc --hidden 16 --steps 2 "
                "--teacher heft --teacher-symmetry --il-episodes 2 --rl-episodes 0 -o " + (t / "y.pt"));
  CAPTURE(sym.out);
  REQUIRE(sym.code == 0);
  CHECK(sym.out.find("relabelling 4 interchangeable parts (1 kind)") != std::string::npos);
  check_refused(base + "--teacher cp --teacher-symmetry -o " + (t / "y2.pt"), "--teacher-symmetry");
  // --il-teacher-forcing: the header says so; a policy without SEL and PLC heads, or a fraction
  // outside [0, 1], is refused.
  auto forced = sh(base + "--teacher heft --il-teacher-forcing 0.5 --il-episodes 2 --rl-episodes 0 -o " + (t / "z.pt"));
  CAPTURE(forced.out);
  REQUIRE(forced.code == 0);
  CHECK(forced.out.find("50% teacher-forced") != std::string::npos);
  check_refused(base + "--policy-kind joint --il-teacher-forcing 0.5 -o " + (t / "z2.pt"), "--il-teacher-forcing");
  check_refused(base + "--il-teacher-forcing 1.5 -o " + (t / "z2.pt"), "--il-teacher-forcing");
  // --dynamic-sel: SEL reads per-step features; a head without SEL, or a static checkpoint, is refused.
  auto dyn = sh(base + "--dynamic-sel --il-episodes 2 --rl-episodes 2 --batch 2 -o " + (t / "ds.pt"));
  CAPTURE(dyn.out);
  REQUIRE(dyn.code == 0);
  CHECK(dyn.out.find(", dynamic SEL") != std::string::npos);  // the header names the policy's inputs
  CHECK(sh(base + "--init " + (t / "ds.pt") + " --dynamic-sel --il-episodes 0 --rl-episodes 2 --batch 2 -o " +
           (t / "ds2.pt")).code == 0);
  check_refused(base + "--init " + (t / "e.pt") + " --dynamic-sel -o " + (t / "ds3.pt"), "--dynamic-sel");
  check_refused(base + "--policy-kind joint --dynamic-sel -o " + (t / "ds3.pt"), "--dynamic-sel");
  check_refused(base + "--ablation plc-only --dynamic-sel -o " + (t / "ds3.pt"), "--dynamic-sel");
  // A network read from a file keeps its sizes: --hidden or --steps that differ are refused.
  const std::string unsized = cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --model wc --init " + (t / "ds.pt");
  check_refused(unsized + " --hidden 32 -o " + (t / "ds3.pt"), "has hidden 16");
  check_refused(unsized + " --steps 3 -o " + (t / "ds3.pt"), "has steps 2");
  // So is another policy kind, by flag or in --config's file, and any size the file gives (proj, mlp
  // have no flags): the policy comes from --init's checkpoint and would silently keep its own.
  check_refused(unsized + " --policy-kind gdp -o " + (t / "ds3.pt"), "--policy-kind");
  for (const char* policy : {R"("kind": "gdp")", R"("mlp": 8)", R"("proj": 8)", R"("dynamic_sel": false)"}) {
    {
      std::ofstream cfg(t / "pol.json");
      cfg << R"({"format": "doppler-curriculum/1", "policy": {)" << policy << "}}";
    }
    auto r = check_refused(unsized + " --config " + (t / "pol.json") + " -o " + (t / "ds3.pt"), "pol.json");
    CHECK(r.out.find("policy." + std::string(policy).substr(1, std::string(policy).find('"', 1) - 1)) != std::string::npos);
  }
  {  // the curriculum's imitation.teacher_symmetry does the same
    std::ofstream cfg(t / "sym.json");
    cfg << R"({"format": "doppler-curriculum/1", "imitation": {"teacher": "heft", "teacher_symmetry": true}})";
  }
  auto sym_cfg = sh(cli + " train --graph " + (t / "lb.json") + " --cluster p100x4 --model wc --hidden 16 --steps 2 "
                    "--config " + (t / "sym.json") + " --il-episodes 2 --rl-episodes 0 -o " + (t / "y3.pt"));
  CAPTURE(sym_cfg.out);
  REQUIRE(sym_cfg.code == 0);
  CHECK(sym_cfg.out.find("teacher heft (simulated") != std::string::npos);
  CHECK(sym_cfg.out.find("relabelling 4 interchangeable parts (1 kind)") != std::string::npos);
  auto paper = sh(cli + " train --graph " + DOPPLER_PAPER_DIR + "/ffnn_192nodes.txt --cluster doppler-paper:4 --hidden 16 "
                  "--steps 2 --il-episodes 2 --rl-episodes 0 -o " + (t / "s.pt"));
  CAPTURE(paper.out);
  REQUIRE(paper.code == 0);
  CHECK(paper.out.find("teacher auto (cp)") != std::string::npos);
  // auto choosing cp has no placement to relabel: the log says the flag went unused.
  auto paper_sym = sh(cli + " train --graph " + DOPPLER_PAPER_DIR + "/ffnn_192nodes.txt --cluster doppler-paper:4 --hidden 16 "
                      "--steps 2 --il-episodes 2 --rl-episodes 0 --teacher-symmetry -o " + (t / "s2.pt"));
  CAPTURE(paper_sym.out);
  REQUIRE(paper_sym.code == 0);
  CHECK(paper_sym.out.find("teacher auto (cp, --teacher-symmetry unused") != std::string::npos);
  check_refused(base + "--teacher nosuch -o " + (t / "f.pt"), "--teacher");
  // Several graphs: one policy, batches taking turns, the CSV names each row's graph.
  auto many = sh(cli + " train --graph " + (t / "g.json") + " " + (t / "g2.json") + " --cluster cpu:2 --model wc " +
                 "--hidden 16 --steps 2 --il-episodes 4 --rl-episodes 4 --batch 2 -o " + (t / "h.pt") + " --csv " +
                 (t / "h.csv") + " --svg " + (t / "h.svg"));
  CAPTURE(many.out);
  REQUIRE(many.code == 0);
  CHECK(many.out.find("graph 1 (") != std::string::npos);
  std::ifstream csv(t / "h.csv");
  std::string header;
  std::getline(csv, header);
  CHECK(header == "episode,phase,makespan,best,loss,agreement,graph");
  int second = 0;
  for (std::string line; std::getline(csv, line);) second += line.ends_with(",1");
  CHECK(second == 4);
  CHECK(fs::exists(t / "h.svg"));
  auto file_for_two = sh(cli + " train --graph " + (t / "g.json") + " " + (t / "g2.json") + " --cluster cpu:2 --teacher " +
                         (t / "m.json") + " -o " + (t / "h.pt"));
  CHECK(file_for_two.code == 2);
  CHECK(file_for_two.out.find("--teacher") != std::string::npos);
  CHECK(sh(base + "--teacher-budget 0 -o " + (t / "h.pt")).code == 2);
  // A cluster per graph: one policy for 2 and 4 devices.
  const std::string two = cli + " train --graph " + (t / "g.json") + " " + (t / "g2.json") + " --model wc --hidden 16 --steps 2 "
                          "--il-episodes 4 --rl-episodes 4 --batch 2 -o " + (t / "k.pt") + " --cluster ";
  auto per_graph = sh(two + "cpu:2 cpu:4");
  CAPTURE(per_graph.out);
  REQUIRE(per_graph.code == 0);
  CHECK(per_graph.out.find("g.json on cpu:2)") != std::string::npos);
  CHECK(per_graph.out.find("g2.json on cpu:4)") != std::string::npos);
  check_refused(two + "cpu:2 cpu:4 cpu:8", "--cluster");
  check_refused(two + "cpu:2 cpu:4 --transfers planned", "--transfers");
  // Phase III on several graphs, each measured on its cluster's engine: batches of --real-batch
  // episodes take turns (episodes 9-10 graph 0, 11-12 graph 1, 13-14 graph 0), every evaluation
  // measures both graphs' greedy placements (initial + one per update: 4 x 2 rows), the rows are in
  // units of each graph's measured cp placement.
  auto real = sh(two + "cpu:2 cpu:4 --real-episodes 6 --real-batch 2 --csv " + (t / "r.csv"));
  CAPTURE(real.out);
  REQUIRE(real.code == 0);
  CHECK(real.out.find("3 updates of 2 episodes, 4 greedy evaluations") != std::string::npos);
  CHECK(real.out.find("g.json on cpu:2)") != std::string::npos);
  CHECK(real.out.find("g2.json on cpu:4)") != std::string::npos);
  CHECK(real.out.find("; measured: cp ") != std::string::npos);
  std::ifstream rcsv(t / "r.csv");
  std::string rline;
  std::getline(rcsv, rline);
  int real_rows = 0, greedy_rows[2] = {0, 0};
  std::string turns;
  for (; std::getline(rcsv, rline);) {
    const bool is_real = rline.find(",real,") != std::string::npos, is_greedy = rline.find(",real-greedy,") != std::string::npos;
    if (!is_real && !is_greedy) continue;
    const int graph = rline.back() - '0';
    REQUIRE((graph == 0 || graph == 1));
    const auto c1 = rline.find(','), c2 = rline.find(',', c1 + 1);
    const double ratio = std::stod(rline.substr(c2 + 1));  // makespan / the graph's measured cp
    CHECK(ratio > 0);
    CHECK(ratio < 50);
    if (is_real) {
      ++real_rows;
      turns += static_cast<char>('0' + graph);
    } else {
      ++greedy_rows[graph];
    }
  }
  CHECK(real_rows == 6);
  CHECK(turns == "001100");
  CHECK(greedy_rows[0] == 4);
  CHECK(greedy_rows[1] == 4);
  CHECK(fs::exists(t / "k.pt"));
  auto slow_third = sh(two + "cpu:2 cpu:4 --real-episodes 2 --real-straggler cpu3:2");  // cpu:2 has no cpu3
  CHECK(slow_third.code == 2);
  CHECK(slow_third.out.find("--real-straggler") != std::string::npos);
  std::string seventeen;  // more graphs than the learner keeps the state of
  for (int k = 0; k < 17; ++k) seventeen += " " + (t / "g.json");
  check_refused(cli + " train --graph" + seventeen + " --cluster cpu:2 --real-episodes 2 -o " + (t / "k.pt"), "at most 16 graphs");
}

TEST_CASE("doppler train without --graph --cluster or -o trains on the generated Llama block on cpu:4") {
  if (!shell::have_learner()) return;
  temp_dir t;
  const std::string in_t = "cd '" + t.path.string() + "' && " + cli;
  const std::string bare = in_t + " train --il-episodes 4 --rl-episodes 4 --hidden 16 --steps 2";
  auto r = sh(bare);
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("no --graph given") != std::string::npos);
  CHECK(r.out.find("no --cluster given: using cpu:4") != std::string::npos);
  CHECK(r.out.find("train: graph generated:llama-block (113 ops") != std::string::npos);
  CHECK(r.out.find("cluster cpu:4 (4 devices)") != std::string::npos);
  REQUIRE(fs::exists(t / "policy.pt"));
  // Again: the default output is not overwritten; named, it is.
  const auto before = fs::last_write_time(t / "policy.pt");
  check_refused(bare, "policy.pt exists: name it with -o to overwrite it");
  CHECK(fs::last_write_time(t / "policy.pt") == before);
  r = sh(bare + " -o policy.pt");
  CHECK(r.code == 0);
  // The policy places the same default graph with nothing else given.
  r = sh(in_t + " place --method doppler --policy policy.pt -o p.json");
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  std::ifstream in(t / "p.json");
  CHECK(nlohmann::json::parse(in)["assignment"].size() == 113);
}

TEST_CASE("doppler train pins the CPU kernels where the CPU has AVX2 so every such machine trains the same policy") {
  if (!shell::have_learner()) return;
  temp_dir t;
  // The caller's own kernel choice (this machine's environment may set OPENBLAS_CORETYPE) is removed:
  // the defaults are what this case tests; `with(VARS)` runs train with only VARS set.
  const std::string clean = "env -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY -u DOPPLER_NATIVE_KERNELS ";
  const std::string args = " train --cluster cpu:2 --il-episodes 4 --rl-episodes 24 --batch 4 --hidden 16 --steps 2 --seed 3 -o ";
  auto with = [&](const std::string& vars) { return clean + vars + " " + cli + args; };
  const std::string train = with("");
  auto plain = sh(train + (t / "a.pt"));
  CAPTURE(plain.out);
  REQUIRE(plain.code == 0);
#if defined(__x86_64__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  const bool avx2 = false;
#endif
  // The kernels OpenBLAS picks by itself here, as `doppler --version` reports them: "OpenBLAS NAME)".
  auto version = sh(clean + "DOPPLER_NATIVE_KERNELS=1 " + cli + " --version");
  REQUIRE(version.code == 0);
  const auto at = version.out.find("OpenBLAS ");
  REQUIRE(at != std::string::npos);
  const std::string own = version.out.substr(at + 9, version.out.find(')', at) - at - 9);
  CHECK(plain.out.find(avx2 ? "kernels: OpenBLAS Haswell, ATen avx2" : "kernels: OpenBLAS " + own + ", ATen native") !=
        std::string::npos);
  // The same training with the kernels named explicitly: the same numbers, line for line.
  auto named = sh(with("OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2") + (t / "a.pt"));
  REQUIRE(named.code == 0);
  if (avx2) {
    auto numbers = [](const std::string& out) {  // stdout's result lines, without timings and the path
      std::string keep;
      std::istringstream in(out);
      for (std::string line; std::getline(in, line);)
        if (line.starts_with("cp ") || line.starts_with("initial greedy")) keep += line + "\n";
      return keep;
    };
    CHECK(!numbers(plain.out).empty());
    CHECK(numbers(plain.out) == numbers(named.out));
  }
  // A kernel the user names is kept (Prescott: OpenBLAS's SSE3 kernels, on every x86-64); the
  // opt-out keeps the CPU's own.
  auto user = sh(with("OPENBLAS_CORETYPE=Prescott") + (t / "b.pt"));
  CAPTURE(user.out);
  REQUIRE(user.code == 0);
  CHECK(user.out.find(avx2 ? "kernels: OpenBLAS Prescott, ATen avx2" : "kernels: OpenBLAS Prescott, ATen native") !=
        std::string::npos);
  auto native = sh(with("DOPPLER_NATIVE_KERNELS=1") + (t / "c.pt"));
  REQUIRE(native.code == 0);
  CHECK(native.out.find("kernels: OpenBLAS " + own + ", ATen native") != std::string::npos);
}

TEST_CASE("doppler train / place-learned: bad numbers, sizes and output paths are refused before any work") {
  if (!shell::have_learner()) return;
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 4 --shards 2 -q -o " + (t / "g.json")).code == 0);
  const std::string base = cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --hidden 16 --steps 2 --episodes 2 ";
  const std::string ok = " -o " + (t / "p.pt");
  // Each: the flags, the text the one-line error must contain. Exit 2, no checkpoint, no backtrace.
  const std::pair<std::string, std::string> cases[] = {
      {"--il-lr nan" + ok, "--il-lr"},
      {"--rl-lr inf" + ok, "--rl-lr"},
      {"--il-lr -1" + ok, "--il-lr"},
      {"--entropy -1" + ok, "--entropy"},
      {"--baseline-decay 2" + ok, "--baseline-decay"},
      {"--advantage-floor -1" + ok, "--advantage-floor"},
      {"--temperature 0" + ok, "--temperature"},
      {"--real-repeat 0" + ok, "--real-repeat"},
      {"--hidden 0" + ok, "--hidden"},
      {"--hidden 1000000" + ok, "--hidden"},
      {"--steps 1000" + ok, "--steps"},
      {"--seed -1" + ok, "--seed"},
      {"--active-search -1" + ok, "--active-search"},
      {"--active-search 0.1 --policy-kind gdp" + ok, "--active-search"},
      {"--self-imitation-gate" + ok, "--self-imitation-gate"},
      {"--il-episodes 2000000000" + ok, "--il-episodes: Value 2000000000 not in range 0 to 1000000000"},
      {"--episodes 2000000000" + ok, "--episodes"},
      {"--il-episodes 600000000 --rl-episodes 600000000" + ok, "is more than 1000000000"},
      {"--graph ''" + ok, "--graph: an empty path"},
      {"-o " + (t / "missing/p.pt"), "does not exist"},
      {"--csv " + (t / "missing/c.csv") + ok, "--csv"},
      {"--best " + (t / "missing/b.json") + ok, "--best"},
      {"-o " + t.path.string(), "is a directory"},
      {"-o -", "not to stdout"},
      // Two outputs on one file, or an output on an input: the later write would destroy the other.
      {"--csv " + (t / "p.pt") + ok, "--output: bad argument: is also --csv's file"},
      {"--best " + (t / "p.pt") + ok, "is also --best's file"},
      {"--csv " + (t / "p.pt.resume") + ok, "(OUTPUT.resume): bad argument: is also --csv's file"},
      {"--svg " + (t / "g.json") + ok, "--svg: bad argument: is the --graph input"},
      {"--csv ''" + ok, "--csv: bad argument: is empty"},
      {"--policy-kind placeto --algorithm ppo" + ok, "--algorithm: bad argument: PPO updates the dual and joint"},
      {"--policy-kind foo" + ok, "--policy-kind: bad argument"},
      {"--entropy 1e-400" + ok, "1e-400 is too small for a double (give 0)"},
      {"--ablation foo" + ok, "--ablation: bad argument"},
      {"--hint foo" + ok, "--hint: bad argument: unknown placer 'foo'"},
  };
  for (const auto& [flags, expected] : cases) {
    CAPTURE(flags);
    auto r = sh(base + flags);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(expected) != std::string::npos);
    CHECK(r.out.find("frame #") == std::string::npos);
    CHECK(r.out.find(" avg ") == std::string::npos);  // refused before training (no progress line)
    CHECK_FALSE(fs::exists(t / "p.pt"));
  }
  // A curriculum with an oversized network: the file and field named.
  {
    std::ofstream(t / "c.json") << R"({"format": "doppler-curriculum/1", "policy": {"hidden": 1000000}})";
  }
  check_refused(base + "--config " + (t / "c.json") + ok, "policy.hidden");
  // A teacher in the file that is no teacher: the file's field named, not a --teacher never given.
  {
    std::ofstream(t / "teach.json") << R"({"format": "doppler-curriculum/1", "imitation": {"teacher": "nonexist"}})";
  }
  // A setting from the file that clashes with a flag: the file's field is named, not a flag never given.
  {
    std::ofstream(t / "abl.json") << R"({"format": "doppler-curriculum/1", "policy": {"ablation": "sel-only"}})";
  }
  auto abl = check_refused(base + "--config " + (t / "abl.json") + " --policy-kind joint" + ok, "policy.ablation");
  {
    std::ofstream(t / "ppo.json") << R"({"format": "doppler-curriculum/1", "reinforce": {"algorithm": "ppo"},
                                         "policy": {"kind": "placeto"}})";
  }
  check_refused(base + "--config " + (t / "ppo.json") + ok, "reinforce.algorithm: bad argument: PPO updates");
  CHECK(abl.out.find("abl.json") != std::string::npos);
  CHECK(abl.out.find("--ablation") == std::string::npos);
  auto teach = check_refused(base + "--config " + (t / "teach.json") + ok, "imitation.teacher");
  CHECK(teach.out.find("teach.json") != std::string::npos);
  CHECK(teach.out.find("--teacher") == std::string::npos);
  // A graph without ops: nothing to train on.
  {
    std::ofstream(t / "empty.json") << R"({"format": "doppler-graph/1", "name": "empty", "dtype": "f32", "ops": []})";
  }
  REQUIRE(sh(cli + " validate " + (t / "empty.json")).code == 0);  // a valid graph ...
  check_refused(cli + " train --graph " + (t / "empty.json") + " --cluster cpu:2" + ok, "no ops");  // ... to train on
  // Nor does a graph whose ops cost nothing (cp's makespan 0: every report would be NaN), alone or
  // beside another graph.
  {
    std::ofstream(t / "free.json") << R"({"format": "doppler-graph/1", "name": "free", "ops": [
        {"id": "x", "kind": "input", "shape": [4]}]})";
  }
  for (const std::string& graphs : {" --graph " + (t / "free.json"), " --graph " + (t / "g.json") + " --graph " + (t / "free.json")})
    check_refused(cli + " train" + graphs + " --cluster cpu:2 --hidden 16 --steps 2 --episodes 2" + ok, "takes no time");
  // A flag that cannot act in this run is said (PPO's epochs without PPO), and the run goes on.
  auto note = sh(base + "--ppo-epochs 3 --real-batch 2" + ok);
  CAPTURE(note.out);
  CHECK(note.code == 0);
  CHECK(note.out.find("note: --ppo-epochs has no effect without --algorithm ppo") != std::string::npos);
  CHECK(note.out.find("note: --real-batch has no effect without --real-episodes") != std::string::npos);
  fs::remove(t / "p.pt");
  // place-learned checks its output path before loading anything.
  auto pl = sh(cli + " place-learned --graph " + (t / "g.json") + " --cluster cpu:2 --policy " +
               (t / "none.pt") + " -o " + (t / "missing/x.json"));
  CHECK(pl.code == 2);
  CHECK(pl.out.find("does not exist") != std::string::npos);
  // ... and its --model before writing: a refused run leaves no placement behind.
  REQUIRE(sh(base + "-o " + (t / "q.pt")).code == 0);
  pl = sh(cli + " place-learned --graph " + (t / "g.json") + " --cluster cpu:2 --policy " + (t / "q.pt") + " -o " +
          (t / "x.json") + " --model foo");
  CHECK(pl.code == 2);
  CHECK_FALSE(fs::exists(t / "x.json"));
  // -o - : the placement alone is stdout (the summary goes to stderr).
  auto piped = sh("(" + cli + " place-learned --graph " + (t / "g.json") + " --cluster cpu:2 --policy " + (t / "q.pt") +
                  " -o - 2>/dev/null)");
  REQUIRE(piped.code == 0);
  CHECK(nlohmann::json::parse(piped.out)["format"] == "doppler-placement/1");
}

TEST_CASE("doppler train --config: a file without a model trains with train's default model and --model wins over the file") {
  if (!shell::have_learner()) return;
  temp_dir t;
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 3 --shards 2 -q -o " + (t / "g.json")).code == 0);
  std::ofstream(t / "none.json") << R"({"format": "doppler-curriculum/1", "phases": {"il_episodes": 1, "rl_episodes": 1}})";
  std::ofstream(t / "wc.json") << R"({"format": "doppler-curriculum/1", "model": "wc"})";
  const std::string base = cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --hidden 8 --steps 1 "
                           "--il-episodes 1 --rl-episodes 1 ";
  int run = 0;
  auto model_of = [&](const std::string& flags) {
    auto r = sh(base + flags + " -o " + (t / ("p" + std::to_string(++run) + ".pt")));
    CAPTURE(r.out);
    REQUIRE(r.code == 0);
    const auto at = r.out.find(", model ");
    REQUIRE(at != std::string::npos);
    return r.out.substr(at + 8, r.out.find('\n', at) - at - 8);
  };
  CHECK(model_of("") == "simple");  // train's default
  CHECK(model_of("--config " + (t / "none.json")) == "simple");  // before: the library's wc
  CHECK(model_of("--config " + (t / "wc.json")) == "wc");
  CHECK(model_of("--config " + (t / "wc.json") + " --model simple") == "simple");
  CHECK(model_of("--config " + (t / "none.json") + " --model wc") == "wc");
}

TEST_CASE("doppler train --active-search: the checkpoint places its graph as training left it, in another process") {
  if (!shell::have_learner()) return;
  temp_dir t;
  const std::string g = std::string(DOPPLER_PAPER_DIR) + "/chain_mm_112nodes.txt";
  auto tr = sh(cli + " train --graph " + g + " --cluster doppler-paper:4 --model simple --hidden 16 --steps 2 "
               "--il-episodes 10 --rl-episodes 40 --batch 4 --algorithm ppo --self-imitation 2 --self-imitation-gate "
               "--temperature 1.5 --active-search 0.1 -o " + (t / "a.pt"));
  CAPTURE(tr.out);
  REQUIRE(tr.code == 0);
  CHECK(tr.out.find("active search lr 0.1") != std::string::npos);
  CHECK(tr.out.find("self-imitation 2 (gated)") != std::string::npos);
  CHECK(tr.out.find(" of 10 updates") != std::string::npos);  // "self-imitation after N of 10 updates"
  const auto at = tr.out.find("after training: greedy ");
  REQUIRE(at != std::string::npos);
  const std::string greedy = tr.out.substr(at + 23, tr.out.find(' ', at + 23) - (at + 23));
  auto pl = sh(cli + " place --graph " + g + " --cluster doppler-paper:4 --model simple --method doppler --policy " +
               (t / "a.pt") + " -o " + (t / "p.json"));
  CAPTURE(pl.out);
  REQUIRE(pl.code == 0);
  CHECK(pl.out.find("makespan     " + greedy + " s") != std::string::npos);
}

TEST_CASE("doppler train --resume: stopped by SIGTERM, resumed, the same training as one run straight through") {
  if (!shell::have_learner()) return;
  temp_dir t;
  const std::string g = std::string(DOPPLER_PAPER_DIR) + "/chain_mm_112nodes.txt";
  const std::string base = cli + " train --graph " + g + " --cluster doppler-paper:4 --model simple --hidden 16 --steps 2 "
                           "--il-episodes 20 --rl-episodes 400 --batch 4 --self-imitation 1 --seed 3 ";
  auto straight = sh(base + "-o " + (t / "s.pt") + " --csv " + (t / "s.csv"));
  CAPTURE(straight.out);
  REQUIRE(straight.code == 0);
  CHECK_FALSE(fs::exists(t / "s.pt.resume"));  // removed when the training ends
  // The same command in the background, stopped by SIGTERM once it has written a state.
  const std::string run = base + "--checkpoint-every 4 -o " + (t / "r.pt") + " --csv " + (t / "r.csv");
  auto stopped = sh("(" + run + " & pid=$!; i=0; while [ ! -e " + (t / "r.pt.resume") +
                    " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; kill -TERM $pid; wait $pid; echo rc=$?)");
  CAPTURE(stopped.out);
  CHECK(stopped.out.find("rc=130") != std::string::npos);
  CHECK(stopped.out.find("with --resume continues it") != std::string::npos);
  CHECK_FALSE(fs::exists(t / "r.pt"));
  REQUIRE(fs::exists(t / "r.pt.resume"));
  // --resume must repeat the command: another seed is refused, naming it.
  check_refused(base + "--seed 4 --resume -o " + (t / "r.pt"), "--seed");
  check_refused(base + "--resume -o " + (t / "none.pt"), "no training state to continue");
  {  // A state written before the later flags existed (its settings lack them) resumes with them off ...
    auto text = [](const fs::path& f) {
      std::ifstream in(f, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    const std::string raw = text(t / "r.pt.resume");
    auto doc = nlohmann::json::from_cbor(std::vector<std::uint8_t>(raw.begin(), raw.end()));
    for (const char* key : {"--sibling-feature", "--teacher-symmetry", "--il-teacher-forcing", "--dynamic-sel"}) {
      REQUIRE(doc["settings"].contains(key));
      doc["settings"].erase(key);
    }
    const auto bytes = nlohmann::json::to_cbor(doc);
    for (const char* name : {"r.pt.resume", "old.pt.resume"}) {
      std::ofstream out(t / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    // ... and not with one of them on: the state does not say how it was trained with it.
    check_refused(base + "--dynamic-sel --resume -o " + (t / "old.pt"), "--dynamic-sel");
    std::string wider = base;
    wider.replace(wider.find("--hidden 16"), 11, "--hidden 32");
    check_refused(wider + "--resume -o " + (t / "old.pt"), "state has hidden 16");
    check_refused(base + "--hint-budget 5 --resume -o " + (t / "old.pt"), "state has hint_budget 20000");
    // --init names the policy the training started from: another one is refused, not ignored.
    check_refused(base + "--init " + (t / "other.pt") + " --resume -o " + (t / "old.pt"), "--init");
    // A teacher placement file that changed since the state was written is refused, not imitated.
    REQUIRE(sh(cli + " place --graph " + g + " --cluster doppler-paper:4 --method heft -o " + (t / "tp.json")).code == 0);
    doc["settings"]["--teacher"] = t / "tp.json";
    doc["settings"]["--teacher (the file's content, FNV-1a)"] = "0123456789abcdef";  // another file's
    const auto teacher_state = nlohmann::json::to_cbor(doc);
    {
      std::ofstream out(t / "tf.pt.resume", std::ios::binary);
      out.write(reinterpret_cast<const char*>(teacher_state.data()), static_cast<std::streamsize>(teacher_state.size()));
    }
    check_refused(base + "--teacher " + (t / "tp.json") + " --resume -o " + (t / "tf.pt"), "the file's content");
  }
  auto resumed = sh(run + " --resume");
  CAPTURE(resumed.out);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.out.find("resuming from") != std::string::npos);
  CHECK_FALSE(fs::exists(t / "r.pt.resume"));
  // Every row of the curve (makespans, losses) and the final policy are the uninterrupted run's.
  auto text = [](const fs::path& f) {
    std::ifstream in(f);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string curve = text(t / "r.csv");
  CHECK(curve == text(t / "s.csv"));
  CHECK(std::count(curve.begin(), curve.end(), '\n') == 421);
  for (const char* name : {"s", "r"})
    REQUIRE(sh(cli + " place --graph " + g + " --cluster doppler-paper:4 --method doppler --policy " + (t / (std::string(name) + ".pt")) +
               " -o " + (t / (std::string(name) + ".json"))).code == 0);
  CHECK(text(t / "r.json") == text(t / "s.json"));
}

TEST_CASE("doppler train --hint: PLC sees a placer's partition, the checkpoint keeps it, bad hints refused") {
  if (!shell::have_learner()) return;
  temp_dir t;
  const std::string P = std::string(DOPPLER_PAPER_DIR) + "/";
  const std::string base = cli + " train --graph " + P + "ffnn_192nodes.txt --cluster doppler-paper:4 --hidden 16 --steps 2 ";
  // FFNN's towers are isomorphic: only the hint tells the policy which source ops belong together.
  auto metis = sh(base + "--hint metis --il-episodes 40 --rl-episodes 0 -o " + (t / "m.pt"));
  CAPTURE(metis.out);
  REQUIRE(metis.code == 0);
  CHECK(metis.out.find("hint metis (simulated 56.6958 s)") != std::string::npos);
  CHECK(metis.out.find("teacher auto (metis simulated 56.6958 s)") != std::string::npos);
  CHECK(metis.out.find("greedy 56.6958 s") != std::string::npos);
  auto pick = sh(base + "--hint auto --hint-budget 200 --il-episodes 2 --rl-episodes 0 -o " + (t / "a.pt"));
  CAPTURE(pick.out);
  REQUIRE(pick.code == 0);
  CHECK(pick.out.find("hint auto -> metis") != std::string::npos);
  // Placing another graph on another cluster computes that graph's hint.
  auto place = sh(cli + " place --graph " + P + "8gpu_transformer_block.txt --cluster doppler-paper:8 --model simple "
                  "--method doppler --policy " + (t / "m.pt") + " -o " + (t / "p.json"));
  CAPTURE(place.out);
  CHECK(place.code == 0);
  CHECK(fs::exists(t / "p.json"));
  // Fine-tuning keeps the checkpoint's hint; another one is refused (the network is sized for it).
  auto tuned = sh(base + "--init " + (t / "m.pt") + " --il-episodes 0 --rl-episodes 2 --batch 2 -o " + (t / "n.pt"));
  CAPTURE(tuned.out);
  CHECK(tuned.code == 0);
  CHECK(tuned.out.find("hint metis (simulated 56.6958 s)") != std::string::npos);
  check_refused(base + "--init " + (t / "m.pt") + " --hint search --rl-episodes 2 -o " + (t / "n.pt"), "--hint");
  check_refused(base + "--init " + (t / "m.pt") + " --hint-budget 5 --rl-episodes 2 -o " + (t / "n.pt"), "--hint-budget");
  CHECK(sh(base + "--hint-budget 0 -o " + (t / "x.pt")).code == 2);
  // Phase III through the learner actor with a hinted policy (the actor computes the hint itself).
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 4 --shards 2 -q -o " + (t / "g.json")).code == 0);
  auto real = sh(cli + " train --graph " + (t / "g.json") + " --cluster cpu:2 --model wc --hint metis --hidden 16 "
                 "--steps 2 --il-episodes 4 --rl-episodes 4 --real-episodes 4 --real-batch 2 -o " + (t / "r.pt"));
  CAPTURE(real.out);
  REQUIRE(real.code == 0);
  CHECK(real.out.find("hint metis") != std::string::npos);
  CHECK(real.out.find("2 updates of 2 episodes") != std::string::npos);
  CHECK(sh(cli + " place --graph " + (t / "g.json") + " --cluster cpu:2 --method doppler --policy " + (t / "r.pt") +
           " -o " + (t / "rp.json")).code == 0);
  auto unknown = sh(base + "--hint nosuch -o " + (t / "x.pt"));
  CHECK(unknown.code != 0);
  CHECK(unknown.out.find("nosuch") != std::string::npos);
  auto baseline = sh(base + "--hint metis --policy-kind gdp -o " + (t / "x.pt"));
  CHECK(baseline.code != 0);
  CHECK(baseline.out.find("hint") != std::string::npos);
  CHECK(!fs::exists(t / "x.pt"));
}

TEST_CASE("doppler compare --policy: learned rows next to the placers, ratio to the best non-learned one") {
  if (!shell::have_learner()) return;
  temp_dir t;
  const std::string g = " --graph " + (t / "g.json") + " --cluster cpu:4";
  REQUIRE(sh(cli + " workload chainmm --dim 64 --matrices 4 --shards 2 -q -o " + (t / "g.json")).code == 0);
  for (int s : {0, 1})
    REQUIRE(sh(cli + " train" + g + " --model wc --il-episodes 8 --rl-episodes 8 --hidden 16 --steps 2 --seed " +
               std::to_string(s) + " -o " + (t / ("d" + std::to_string(s) + ".pt"))).code == 0);
  REQUIRE(sh(cli + " train" + g + " --model wc --il-episodes 4 --rl-episodes 4 --hidden 16 --steps 2 --policy-kind gdp -o " +
             (t / "gdp.pt")).code == 0);
  auto r = sh(cli + " compare" + g + " --methods cp,heft --seeds 2 --policy " + (t / "d0.pt") + "," + (t / "d1.pt") +
              " --policy base=" + (t / "gdp.pt") + " --json --csv " + (t / "c.csv"));
  CAPTURE(r.out);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  auto& rows = j["rows"];
  REQUIRE(rows.size() == 4);
  CHECK(rows[0]["method"] == "cp");
  CHECK(rows[0]["learned"] == false);
  CHECK(rows[2]["method"] == "doppler");  // named by the checkpoints' policy kind
  CHECK(rows[2]["learned"] == true);
  CHECK(rows[2]["runs"] == 2);
  CHECK(rows[3]["method"] == "base");
  const double best_placer = std::min(rows[0]["makespan_s"].get<double>(), rows[1]["makespan_s"].get<double>());
  CHECK(j["best_heuristic"] == (rows[0]["makespan_s"].get<double>() <= rows[1]["makespan_s"].get<double>() ? "cp" : "heft"));
  CHECK(rows[2]["ratio_best_heuristic"].get<double>() ==
        doctest::Approx(rows[2]["makespan_s"].get<double>() / best_placer));
  // The learned row is the mean of the checkpoints' greedy placements, as `place --method doppler` gives them.
  double sum = 0;
  for (int s : {0, 1}) {
    auto p = t / ("p" + std::to_string(s) + ".json");
    REQUIRE(sh(cli + " place" + g + " --method doppler --policy " + (t / ("d" + std::to_string(s) + ".pt")) + " -o " + p)
                .code == 0);
    auto sim = sh(cli + " simulate" + g + " --placement " + p + " --json");
    REQUIRE(sim.code == 0);
    sum += nlohmann::json::parse(sim.out)["makespan_s"].get<double>();
  }
  CHECK(rows[2]["makespan_s"].get<double>() == doctest::Approx(sum / 2).epsilon(1e-9));
  std::ifstream csv(t / "c.csv");
  std::string header;
  std::getline(csv, header);
  CHECK(header.find(",learned") != std::string::npos);
  // Bad input: a missing checkpoint names itself; an empty row name or list is refused.
  auto missing = sh(cli + " compare" + g + " --methods cp --policy " + (t / "none.pt"));
  CHECK(missing.code != 0);
  CHECK(missing.out.find("none.pt") != std::string::npos);
  CHECK(sh(cli + " compare" + g + " --methods cp --policy =" + (t / "d0.pt")).code == 2);
  CHECK(sh(cli + " compare" + g + " --methods cp --policy name=").code == 2);
  // Only learned rows: --methods may be empty.
  auto only = sh(cli + " compare" + g + " --methods '' --policy " + (t / "d0.pt") + " --json");
  CAPTURE(only.out);
  REQUIRE(only.code == 0);
  CHECK(nlohmann::json::parse(only.out)["rows"].size() == 1);
}
