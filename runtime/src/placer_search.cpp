// Local search / simulated annealing over assignments (docs/placers.md, "search"): the
// "enumerative optimizer" anchor.
//
// Start: opt.start when given; else the best (simulated makespan under opt.sim; earlier wins ties) of
// cp (seed opt.seed), heft, m-etf, round-robin and single, then (with opt.sim.transfers, which makes
// cp/heft's EST planned-aware) cp and heft with the per-edge EST; its priority order is kept. Placers
// that cannot fit the graph in memory are skipped; metis is the last resort when all of them fail. Then opt.budget candidates, each one move from the current assignment:
//   50% reassign a random op to another random device,
//   30% swap the devices of two random ops on different devices,
//   20% move a random op to the device of one of its random neighbours (producer or consumer).
// Moves that would overflow a device's memory (when respect_memory) are skipped without an
// evaluation. A candidate of makespan m replaces the current one (makespan m0) if m ≤ m0, else with
// probability exp(-(m - m0) / (T · m0)), T decaying geometrically from 0.05 to 1e-4 over the budget.
// Return to the best: a counter of proposals since the last new best (or the last return); once it
// passes budget/20 and the current assignment is worse than the best, the walk jumps back to the best
// assignment and the counter restarts (the schedule goes on cooling). Without it a long budget stays
// hot long enough to wander out of a good basin for good, and a larger budget could end worse than a
// smaller one (docs/placers.md). The best assignment seen is returned, so the result is never worse
// than the start.

#include "placer_common.hpp"

#include <doppler/runtime/error.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace doppler::detail {

namespace {

class search_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "search"; }

  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    if (opt.budget < 0)
      throw error(errc::bad_argument, "search: budget must be >= 0 simulator evaluations, got " +
                                          std::to_string(opt.budget));
    sim_options so = opt.sim;
    so.record_trace = false;
    auto score = [&](const placement& p) { return simulate(g, c, p, cm, so).makespan; };

    placer_options sub = opt;
    sub.progress = nullptr;
    placement start;
    double start_cost = std::numeric_limits<double>::infinity();  // inf: no start yet
    std::string first_refusal;  // the first start placer's reason, if none fits
    auto consider = [&](const char* method, const placer_options& po) {  // the best heuristic start
      placement alt;
      try {
        alt = make_placer(method)->place(g, c, cm, po);
      } catch (const error& e) {
        // e.g. single when device 0 is too small, or a greedy packing that fills a device too early
        if (e.code() != errc::infeasible) throw;
        if (first_refusal.empty()) first_refusal = e.reason();
        return;
      }
      double alt_cost = score(alt);
      if (alt_cost < start_cost) {  // earlier wins ties (makespans are finite)
        start = std::move(alt);
        start_cost = alt_cost;
      }
    };
    if (opt.start) {  // the caller's start, e.g. a learned placement to refine
      check_placement(*opt.start, g, c);
      start = *opt.start;
      start_cost = score(start);
    } else {
      for (const char* m : {"cp", "heft", "m-etf", "round-robin", "single"}) consider(m, sub);
      if (opt.sim.transfers) {  // cp and heft also with their per-edge EST: the planned-aware one is not always better
        placer_options per_edge = sub;
        per_edge.sim.transfers = nullptr;
        for (const char* m : {"cp", "heft"}) consider(m, per_edge);
      }
      if (std::isinf(start_cost)) consider("metis", sub);  // balances memory too; a start of last resort
      if (std::isinf(start_cost))
        throw error(errc::infeasible, "", "",
                    "search: no start placement fits in memory (cp, heft, m-etf, round-robin, single and metis "
                    "each failed); the first reason: " + first_refusal);
    }
    placement cur = std::move(start);
    cur.method = name();
    const auto n = static_cast<op_index>(g.size());
    const auto n_dev = static_cast<device_index>(c.device_count());
    // A given start must fit, whether or not anything is searched (budget 0 returned it unchecked).
    memory_tracker mem(g, c, opt.respect_memory);
    for (op_index v = 0; v < n; ++v) mem.add(cur.device[v], v);
    if (opt.start && mem.enabled())
      for (device_index d = 0; d < n_dev; ++d)
        if (mem.used(d) > mem.capacity(d))
          throw error(errc::infeasible, "search: the start placement puts " + std::to_string(mem.used(d)) +
                                            " bytes on device " + c[d].id + ", over its memory (" +
                                            std::to_string(mem.capacity(d)) + " bytes)");
    if (n == 0 || n_dev < 2 || opt.budget <= 0) {
      if (opt.progress) opt.progress(1.0);
      return cur;
    }

    std::mt19937_64 rng(opt.seed ^ 0x9e3779b97f4a7c15ULL);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    auto any_op = [&] { return static_cast<op_index>(std::uniform_int_distribution<std::uint32_t>(0, n - 1)(rng)); };
    auto other_dev = [&](device_index d) {
      auto e = static_cast<device_index>(std::uniform_int_distribution<std::uint32_t>(0, n_dev - 2)(rng));
      return e >= d ? e + 1 : e;
    };
    auto fits_after = [&](device_index d, op_index in, op_index out) {  // d gains `in`, loses `out`
      return !mem.enabled() || mem.used(d) + g[in].bytes - (out < n ? g[out].bytes : 0.0) <= mem.capacity(d);
    };

    double cur_cost = start_cost, best_cost = start_cost;
    std::vector<device_index> best = cur.device;
    const double t0 = 0.05, t1 = 1e-4;
    const int report_every = std::max(1, opt.budget / 100);
    const int stall_limit = std::max(1, opt.budget / 20);
    int stalled = 0;  // proposals since the last new best or the last return
    for (int k = 0; k < opt.budget; ++k) {
      if (opt.progress && k % report_every == 0) opt.progress(static_cast<double>(k) / opt.budget);
      if (++stalled > stall_limit && cur_cost > best_cost) {  // return to the best assignment
        for (op_index v = 0; v < n; ++v) {
          mem.remove(cur.device[v], v);
          mem.add(best[v], v);
        }
        cur.device = best;
        cur_cost = best_cost;
        stalled = 0;
      }
      double temp = t0 * std::pow(t1 / t0, static_cast<double>(k) / opt.budget);
      // Propose: up to two ops change device (a, b); b == n means none.
      op_index a = any_op(), b = n;
      device_index da = cur.device[a], na = da, db = 0;
      double r = unit(rng);
      if (r < 0.5) {
        na = other_dev(da);
      } else if (r < 0.8) {
        b = any_op();
        db = cur.device[b];
        if (db == da) continue;
        na = db;
      } else {
        auto ps = g.preds(a);
        auto ss = g.succs(a);
        std::size_t deg = ps.size() + ss.size();
        if (deg == 0) continue;
        std::size_t i = std::uniform_int_distribution<std::size_t>(0, deg - 1)(rng);
        na = cur.device[i < ps.size() ? ps[i] : ss[i - ps.size()]];
        if (na == da) continue;
      }
      if (!fits_after(na, a, b) || (b < n && !fits_after(da, b, a))) continue;
      cur.device[a] = na;
      if (b < n) cur.device[b] = da;
      double cost = score(cur);
      bool accept = cost <= cur_cost || unit(rng) < std::exp(-(cost - cur_cost) / (temp * cur_cost));
      if (accept) {
        mem.remove(da, a);
        mem.add(na, a);
        if (b < n) {
          mem.remove(db, b);
          mem.add(da, b);
        }
        cur_cost = cost;
        if (cost < best_cost) {
          stalled = 0;
          best_cost = cost;
          best = cur.device;
        }
      } else {
        cur.device[a] = da;
        if (b < n) cur.device[b] = db;
      }
    }
    if (opt.progress) opt.progress(1.0);
    cur.device = std::move(best);
    return cur;
  }
};

}  // namespace

std::unique_ptr<placer> make_search_placer() { return std::make_unique<search_placer>(); }

}  // namespace doppler::detail
