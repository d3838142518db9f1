// The astar method (temporal partitioning): the TE-CCL MILP over rounds of ~15 epochs; each round
// rewards delivery and, for chunks still on their way, holding them closer to their destinations
// (the distance-to-destination heuristic); holdings, in-flight chunks and link windows carry over
// to the next round. Whatever a round cannot place (time out, no progress) is finished by routing
// each remaining (chunk, destination) from its nearest holder, so the method always terminates.
#include "methods.hpp"
#include "te_model.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace doppler::comm::detail {

method_result plan_astar(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb) {
  if (!have_solvers())
    throw error(errc::bad_argument, "method astar is not built: doppler was configured without COIN-OR (CBC/CLP)");
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::size_t C = d.chunks.size(), D = net.device_count();
  const std::int32_t R = std::max<std::int32_t>(2, opt.round_epochs);
  window_spec w = initial_window(net, d, R);
  std::vector<std::int32_t> held = w.held_from;  // global epochs
  slot_table slots(net);
  method_result out;
  std::int32_t first = 0, rounds = 0, stalled = 0, unsolved = 0;
  const double expected_rounds = std::max(1.0, std::ceil(1.5 * std::max(1, lb.epochs) / R));
  auto left_pending = [&] {
    return std::count(w.pending.begin(), w.pending.end(), char{1});
  };
  while (left_pending() > 0 && elapsed() < opt.time_limit && stalled < 2) {
    w.first_epoch = first;
    w.require_all = false;
    w.prior = &slots;
    for (std::size_t i = 0; i < C * D; ++i)
      w.held_from[i] = held[i] >= unreachable_epochs ? unreachable_epochs : held[i] - first;
    // Shorter rounds where one would exceed the binary budget; route the rest when even 2 epochs do.
    w.epochs = R;
    while (w.epochs > 2 && count_binaries(net, d, w) > opt.milp_binary_limit) w.epochs /= 2;
    if (count_binaries(net, d, w) > opt.milp_binary_limit) break;
    double budget = std::max(0.5, (opt.time_limit - elapsed()) / std::max(1.0, expected_rounds - rounds));
    window_result r = solve_window(net, d, opt, w, budget);
    ++rounds;
    std::size_t before = left_pending();
    if (r.state == window_result::status::solved) {
      for (const send& x : r.sends) {
        slots.take(*net.find_link(x.src, x.dst), x.epoch);
        out.sends.push_back(x);
        if (net.is_switch(x.dst)) continue;
        std::size_t ci = *d.find_chunk(x.chunk);
        std::int32_t at = x.epoch + net.links()[*net.find_link(x.src, x.dst)].offset;
        held[ci * D + x.dst] = std::min(held[ci * D + x.dst], at);
        w.pending[ci * D + x.dst] = 0;
      }
    }
    stalled = static_cast<std::size_t>(left_pending()) < before ? 0 : stalled + 1;
    // A round without a solution (out of time) placed nothing: the next one starts at the same epoch.
    // (Moving on left its epochs empty — 30 epochs where one solved round gives 15, depending on the
    // machine's load.)
    if (r.state == window_result::status::solved)
      first += w.epochs;
    else
      ++unsolved;
  }
  // Finish what is left by routing from the nearest holder.
  std::size_t routed = 0;
  for (std::size_t ci = 0; ci < C; ++ci)
    for (device_index t : d.chunks[ci].destinations) {
      if (!w.pending[ci * D + t]) continue;
      device_index from = d.chunks[ci].source;
      std::int32_t best = unreachable_epochs;
      for (device_index v = 0; v < D; ++v)
        if (held[ci * D + v] < unreachable_epochs && held[ci * D + v] + net.epochs_between(v, t) < best) {
          best = held[ci * D + v] + net.epochs_between(v, t);
          from = v;
        }
      std::vector<std::uint32_t> path = device_path(net, from, t);
      std::int32_t ready = held[ci * D + from];
      // Hops to devices that already hold the chunk are skipped (the tree grows from every holder).
      std::vector<std::int32_t> fresh(held.begin() + static_cast<std::ptrdiff_t>(ci * D),
                                      held.begin() + static_cast<std::ptrdiff_t>(ci * D + D));
      schedule_path(net, slots, d.chunks[ci].id, path, ready, out.sends, &fresh);
      for (device_index v = 0; v < D; ++v) held[ci * D + v] = std::min(held[ci * D + v], fresh[v]);
      w.pending[ci * D + t] = 0;
      ++routed;
    }
  out.note = "astar: " + std::to_string(rounds) + " round(s) of " + std::to_string(R) + " epochs" +
             (unsolved ? "; " + std::to_string(unsolved) + " of them found no solution in time" : "") +
             (routed ? "; " + std::to_string(routed) + " (chunk, destination) pairs routed after the rounds" : "");
  // Routing pair by pair after rounds that ran out of time can be far worse than greedy (28 epochs
  // for greedy's 16 on a loaded machine): then greedy's plan is returned, as milp does.
  if (unsolved > 0 || routed > 0) {
    method_result g = plan_greedy(net, d, opt);
    if (make_schedule(net, d, "greedy", g.sends).epochs < make_schedule(net, d, "astar", out.sends).epochs) {
      g.note = out.note + "; greedy's plan is shorter and returned";
      return g;
    }
  }
  return out;
}

}  // namespace doppler::comm::detail
