// anneal_probe: a long simulated-annealing walk over placements *and* priority orders, used to ask
// whether a placement below a goal's bar exists at all (docs/learner-experiments.md, "Does a
// placement below the bar exist?"). It is an experiment tool, not a placer: it knows the shard
// structure of the generated Llama blocks (ops named <prefix>.q, .k, .v, .scores, ... per shard) and
// moves whole pieces of a shard at once, which no placer of doppler does.
//
//   anneal_probe GRAPH CLUSTER START.json SEED ITERATIONS OUT.json [wc|simple [all|no-pieces|no-order]]
//
// The last argument leaves out one kind of move, to see which ones a result needs.
//
// Moves per proposal (one or two of them):
//   - one op to a random device, dragging its zero-work consumers (slices, concats) along;
//   - a shard piece to a random device: its q side (q, its head slices and concat, q.rope), its k
//     side (... k.rope, kt), its v side, its middle (everything from the head slices to ctx.cat) or
//     its attention (scores to ctx.cat) — only on graphs that have such shards;
//   - one op of the priority order re-inserted at a random position between its producers and its
//     consumers (the order stays topological).
// Weight-like inputs (0-FLOP ops with no producers and one consumer) always sit on their consumer's
// device (a one-op move that picks one is undone by that rule: a wasted proposal, kept so that the
// seeds the docs cite still reproduce their placements). Move kinds are drawn 1:1:2 (one op, a
// piece, the order); leaving one kind out draws the other two equally. Acceptance: m <= m0, else with probability exp(-(m - m0) / T), T decaying geometrically
// from 0.04 m_start to 4e-5 m_start over the iterations. Deterministic for a seed; prints the best
// makespan every 10% and writes the best placement seen. tests/runtime/test_anneal_probe.cpp runs it.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace doppler;

// Pieces of every attention shard (an op "<p>.scores" whose siblings all exist).
std::vector<std::vector<op_index>> shard_pieces(const graph& g) {
  static const std::vector<std::vector<std::string>> pieces = {
      {".q", ".q.h0", ".q.h1", ".qg", ".q.rope"},
      {".k", ".k.h0", ".k.h1", ".kg", ".k.rope", ".kt"},
      {".v", ".v.h0", ".v.h1", ".vg"},
      {".q.h0", ".q.h1", ".qg", ".q.rope", ".k.h0", ".k.h1", ".kg", ".k.rope", ".kt", ".scores", ".scaled",
       ".probs", ".ctx", ".v.h0", ".v.h1", ".vg", ".ctx.h0", ".ctx.h1", ".ctx.cat"},
      {".scores", ".scaled", ".probs", ".ctx", ".ctx.h0", ".ctx.h1", ".ctx.cat"}};
  std::vector<std::vector<op_index>> out;
  for (const op& o : g.ops()) {
    if (!o.id.ends_with(".scores")) continue;
    const std::string prefix = o.id.substr(0, o.id.size() - 7);
    for (const auto& piece : pieces) {
      std::vector<op_index> ops;
      for (const auto& suffix : piece)
        if (auto i = g.find(prefix + suffix)) ops.push_back(*i);
      if (ops.size() == piece.size()) out.push_back(std::move(ops));
    }
  }
  return out;
}

// A decimal count (digits only: no sign, space, exponent or hex), at most `max`.
std::uint64_t decimal(const char* text, const char* what, std::uint64_t max) {
  const std::string_view s(text);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos || ec != std::errc() || v > max)
    throw error(errc::bad_argument, std::string(what) + " must be a decimal integer in [0, " +
                                        std::to_string(max) + "], got '" + std::string(s) + "'");
  return v;
}

int run(int argc, char** argv) {
  if (argc < 7 || argc > 9) {
    std::fprintf(stderr, "usage: anneal_probe GRAPH CLUSTER START.json SEED ITERATIONS OUT.json [wc|simple [all|no-pieces|no-order]]\n");
    return 2;
  }
  const graph g = load_graph(argv[1]);
  const cluster c = load_cluster_or_preset(argv[2]);
  placement cur = load_placement(argv[3], g, c);
  const std::uint64_t seed = decimal(argv[4], "SEED", std::numeric_limits<std::uint64_t>::max());
  const auto iterations = static_cast<long>(decimal(argv[5], "ITERATIONS", 1'000'000'000'000));
  const std::string out = argv[6];
  sim_options so;
  if (argc > 7) {
    const std::string model = argv[7];
    if (model == "simple") so.model = sim_model::simple;
    else if (model != "wc") throw error(errc::bad_argument, "model must be wc or simple, got " + model);
  }
  const std::string moves_kept = argc > 8 ? argv[8] : "all";
  if (moves_kept != "all" && moves_kept != "no-pieces" && moves_kept != "no-order")
    throw error(errc::bad_argument, "moves must be all, no-pieces or no-order, got " + moves_kept);
  if (iterations < 1) throw error(errc::bad_argument, "ITERATIONS must be >= 1");
  const cost_model cm;
  const auto n = static_cast<op_index>(g.size());
  const auto n_dev = static_cast<device_index>(c.device_count());
  const auto pieces = moves_kept == "no-pieces" ? std::vector<std::vector<op_index>>{} : shard_pieces(g);
  const std::size_t kinds = moves_kept == "no-order" ? 2 : 4;  // 0 one op, 1 a piece, 2-3 the order

  auto weights_follow = [&](placement& p) {
    for (op_index i = 0; i < n; ++i)
      if (g[i].flops == 0 && g.preds(i).empty() && g.succs(i).size() == 1) p.device[i] = p.device[g.succs(i)[0]];
  };
  auto score = [&](const placement& p) { return simulate(g, c, p, cm, so).makespan; };

  // The start as given is the first best (the result is never worse than it); the walk starts from it
  // with its weights moved to their consumers and, without an order, the topological one.
  placement best = cur;
  double best_cost = score(best);
  if (cur.order.empty()) cur.order.assign(g.topo_order().begin(), g.topo_order().end());
  weights_follow(cur);
  double cur_cost = score(cur);
  std::printf("start %.6g s (%.6g s as the walk's first state), %zu shard pieces\n", best_cost, cur_cost, pieces.size());
  if (cur_cost < best_cost) {
    best = cur;
    best_cost = cur_cost;
  }

  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t k) { return static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, k - 1)(rng)); };
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double t0 = 0.04 * cur_cost, decay = std::pow(1e-3, 1.0 / static_cast<double>(iterations));
  double temp = t0;
  std::vector<std::size_t> pos(n);
  for (long it = 0; it < iterations; ++it, temp *= decay) {
    placement next = cur;
    const std::size_t moves = 1 + pick(2);
    for (std::size_t m = 0; m < moves; ++m) {
      const std::size_t kind = pick(kinds);
      if (kind == 0 || (kind == 1 && pieces.empty())) {
        const auto o = static_cast<op_index>(pick(n));
        const auto d = static_cast<device_index>(pick(n_dev));
        next.device[o] = d;
        for (op_index s : g.succs(o))
          if (g[s].flops == 0) next.device[s] = d;
      } else if (kind == 1) {
        const auto d = static_cast<device_index>(pick(n_dev));
        for (op_index o : pieces[pick(pieces.size())]) next.device[o] = d;
      } else {
        for (std::size_t i = 0; i < n; ++i) pos[next.order[i]] = i;
        const std::size_t i = pick(n);
        const op_index o = next.order[i];
        std::size_t lo = 0, hi = n - 1;
        for (op_index p : g.preds(o)) lo = std::max(lo, pos[p] + 1);
        for (op_index s : g.succs(o)) hi = std::min(hi, pos[s] - 1);
        const std::size_t j = lo + pick(hi - lo + 1);  // lo <= i <= hi: the window holds o's own slot
        next.order.erase(next.order.begin() + static_cast<std::ptrdiff_t>(i));
        next.order.insert(next.order.begin() + static_cast<std::ptrdiff_t>(j), o);
      }
    }
    weights_follow(next);
    const double cost = score(next);
    if (cost <= cur_cost || unit(rng) < std::exp(-(cost - cur_cost) / temp)) {
      cur = std::move(next);
      cur_cost = cost;
      if (cost < best_cost) {
        best_cost = cost;
        best = cur;
      }
    }
    if ((it + 1) % std::max(1L, iterations / 10) == 0) {
      std::printf("iteration %ld: current %.6g s, best %.6g s\n", it + 1, cur_cost, best_cost);
      std::fflush(stdout);
    }
  }
  best.method = "anneal_probe";
  check_placement(best, g, c);
  save_placement(best, g, c, out);
  std::printf("best %.6g s -> %s\n", best_cost, out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "anneal_probe: %s\n", e.what());
    return 1;
  }
}
