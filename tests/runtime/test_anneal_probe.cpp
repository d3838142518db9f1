// tests/tools/anneal_probe: the experiment tool behind tests/data/placements (docs/learner-experiments.md,
// "Does a placement below the bar exist?") — never worse than its start, the same walk for a seed,
// bad arguments refused.
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include "../cli_run.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace doppler;

namespace {

cli_run::result probe(const temp_dir& d, const std::string& args) {
  return cli_run::run_program(DOPPLER_ANNEAL_PROBE_PATH, d, args);
}

/// The generated Llama block and cp's placement of it on p100x4 in `d` (lb.json, start.json).
void block_and_start(const temp_dir& d) {
  REQUIRE(cli_run::run(d, "workload llama-block -q -o lb.json").rc == 0);
  REQUIRE(cli_run::run(d, "place --graph lb.json --cluster p100x4 --method cp -o start.json").rc == 0);
}

/// `anneal_probe ARGS` must exit with `rc` and say `expected` on stderr.
void check_refused(const temp_dir& d, const std::string& args, int rc, const std::string& expected) {
  CAPTURE(args);
  const auto r = probe(d, args);
  CHECK(r.rc == rc);
  CHECK(r.err.find(expected) != std::string::npos);
}

}  // namespace

TEST_CASE("anneal_probe: never worse than its start and the same walk for a seed") {
  temp_dir d;
  block_and_start(d);
  auto r = probe(d, "lb.json p100x4 start.json 3 3000 a.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find(", 20 shard pieces") != std::string::npos);  // 4 shards x 5 pieces of the generated block
  r = probe(d, "lb.json p100x4 start.json 3 3000 b.json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(cli_run::slurp(d / "a.json") == cli_run::slurp(d / "b.json"));

  const graph g = load_graph(d / "lb.json");
  const cluster c = make_preset("p100x4");
  const cost_model cm;
  const double start = simulate(g, c, load_placement(d / "start.json", g, c), cm).makespan;
  const double found = simulate(g, c, load_placement(d / "a.json", g, c), cm).makespan;
  CHECK(found <= start);
  CHECK(found < 0.9 * start);  // cp's placement of the block leaves a lot to anneal away (28 us vs 13)
  // One proposal: the walk's first state (weights moved to their consumers) is 25.87 us against cp's
  // 25.43 us, and the result must still be the start's.
  for (const char* seed : {"1", "2", "3"}) {
    r = probe(d, std::string("lb.json p100x4 start.json ") + seed + " 1 one.json");
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    CHECK(simulate(g, c, load_placement(d / "one.json", g, c), cm).makespan <= start);
  }

  // the paper's text format and the simple model: no shard pieces, order moves are harmless
  REQUIRE(cli_run::run(d, "place --graph " + std::string(DOPPLER_PAPER_DIR) +
                              "/chain_mm_112nodes.txt --cluster doppler-paper:4 --model simple --method cp -o cm.json")
              .rc == 0);
  r = probe(d, std::string(DOPPLER_PAPER_DIR) + "/chain_mm_112nodes.txt doppler-paper:4 cm.json 1 500 cm2.json simple no-order");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find(", 0 shard pieces") != std::string::npos);
}

TEST_CASE("anneal_probe: bad arguments are refused with a message") {
  temp_dir d;
  block_and_start(d);
  check_refused(d, "lb.json p100x4", 2, "usage");
  check_refused(d, "lb.json p100x4 start.json 1 10 out.json fast", 1, "model must be wc or simple");
  check_refused(d, "lb.json p100x4 start.json 1 10 out.json wc sideways", 1, "moves must be");
  for (const char* n : {"0", "4e6", "-1", "+5", " 7", "0x10", "1000000000001"})
    check_refused(d, std::string("lb.json p100x4 start.json 1 '") + n + "' out.json", 1, "ITERATIONS");
  check_refused(d, "lb.json p100x4 start.json 18446744073709551616 10 out.json", 1, "SEED must be a decimal integer");
  check_refused(d, "lb.json p100x4 start.json 1 10 out.json wc all extra", 2, "usage");
  // a start placement of another graph (the placement's own graph and cluster names are not checked:
  // docs/formats.md; its op ids are)
  check_refused(d, std::string(DOPPLER_PAPER_DIR) + "/chain_mm_112nodes.txt doppler-paper:4 start.json 1 10 out.json", 1,
                "start.json");
}
