// The milp method: the TE-CCL MILP over the whole horizon, searching the epoch count upward from
// the lower bound (each horizon proved infeasible or solved), capped by the greedy plan.
#include "methods.hpp"
#include "te_model.hpp"

#include <doppler/runtime/error.hpp>

#include <chrono>
#include <functional>
#include <unordered_map>

#include <doppler/comm/validate.hpp>

namespace doppler::comm::detail {

namespace {

/// The epochs of `sends` as a schedule of d, if it is a valid one (else unreachable_epochs).
std::int32_t valid_epochs(const network& net, const demand& d, const plan_options& opt, const std::vector<send>& sends) {
  try {
    schedule s = make_schedule(net, d, "milp", sends);
    validate_schedule(net, d, s, {.switch_copy = opt.switch_copy});
    return s.epochs;
  } catch (const error&) {
    return unreachable_epochs;
  }
}

/// Downward epoch search from a known schedule of H epochs: the bound first when it is at least 2
/// below (a schedule there ends the search), then H−1, H−2, ... each stopping at CBC's first
/// feasible schedule, until a horizon is proved infeasible (the last schedule is then optimal), the
/// bound is reached, or the time is up. Never solves at H itself: the known schedule is one.
/// `window_at(K)`: the model of horizon K (default: a fresh start around the fixed sends).
method_result descend(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                      const std::vector<send>& known, std::int32_t H, double seconds,
                      const std::function<window_spec(std::int32_t)>& window_at = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] { return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  method_result best;
  best.sends = known;
  const std::int32_t floor_k = std::max<std::int32_t>(1, lb.epochs);
  if (H <= floor_k) {
    best.proved_optimal = true;
    best.note = "milp: the known schedule (" + std::to_string(H) + " epochs) meets the lower bound" +
                (lb.fixed_aware ? " (aware of the fixed sends)" : "") + "; no solve";
    return best;
  }
  const slot_table fixed = slots_with(net, opt.fixed_sends);
  plan_options o = opt;
  o.first_feasible = true;  // any schedule at a shorter horizon improves on the known one
  std::string log;
  auto solve = [&](std::int32_t K, double budget) {
    window_spec w;
    if (window_at) {
      w = window_at(K);
    } else {
      w = initial_window(net, d, K);
      if (opt.fixed_sends) w.prior = &fixed;
    }
    window_result r = solve_window(net, d, o, w, budget);
    log += " K=" + std::to_string(K) + ":" +
           (r.state == window_result::status::solved       ? "feasible"
            : r.state == window_result::status::infeasible ? "infeasible"
                                                             : "timeout") +
           "(" + std::to_string(r.binaries) + " binaries)";
    return r;
  };
  std::int32_t proved_below = floor_k - 1;  // every horizon ≤ this has no schedule
  if (H - floor_k >= 2 && left() > 0.1) {
    window_result r = solve(floor_k, std::max(0.2, left() * 0.25));
    if (r.state == window_result::status::solved) {
      best.sends = std::move(r.sends);
      best.proved_optimal = true;
      best.note = "milp downward search from a known " + std::to_string(H) + "-epoch schedule:" + log + "; meets the bound";
      return best;
    }
    if (r.state == window_result::status::infeasible) proved_below = floor_k;
  }
  std::int32_t at = H;
  for (std::int32_t K = H - 1; K > proved_below && left() > 0.05; --K) {
    window_result r = solve(K, std::max(0.2, left() * 0.5));
    if (r.state == window_result::status::solved) {
      best.sends = std::move(r.sends);
      at = K;
      continue;
    }
    if (r.state == window_result::status::infeasible) proved_below = K;
    break;
  }
  best.proved_optimal = at - 1 <= proved_below;
  best.note = "milp downward search from a known " + std::to_string(H) + "-epoch schedule:" + log + "; " +
              std::to_string(at) + " epochs" + (best.proved_optimal ? ", proved minimal" : "");
  return best;
}

}  // namespace

method_result plan_milp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                        std::int32_t upper_epochs, const std::vector<send>* incumbent) {
  if (!have_solvers())
    throw error(errc::bad_argument, "method milp is not built: doppler was configured without COIN-OR (CBC/CLP)");
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] {
    return opt.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (const std::vector<send>* known = opt.hint_sends ? opt.hint_sends : incumbent; known && opt.max_epochs == 0) {
    if (std::int32_t H = valid_epochs(net, d, opt, *known); H < unreachable_epochs) return descend(net, d, opt, lb, *known, H, left());
  }
  if (upper_epochs <= 0) upper_epochs = make_schedule(net, d, "greedy", plan_greedy(net, d, opt).sends).epochs;
  std::int32_t K = std::max<std::int32_t>(1, lb.epochs);
  if (upper_epochs <= K && opt.max_epochs == 0) {
    // The greedy plan already meets the bound: its epoch count is optimal.
    method_result g = plan_greedy(net, d, opt);
    g.proved_optimal = true;
    g.note = "milp: the greedy plan meets the lower bound of " + std::to_string(K) + " epochs; returned as optimal";
    return g;
  }
  std::int32_t last = opt.max_epochs > 0 ? opt.max_epochs : upper_epochs;
  const slot_table fixed = slots_with(net, opt.fixed_sends);
  bool all_below_proved = true;  // every horizon below the current one proved infeasible
  std::string log;
  for (; K <= last; ++K) {
    window_spec w = initial_window(net, d, K);
    if (opt.fixed_sends) w.prior = &fixed;
    if (opt.hint_sends) w.hint = opt.hint_sends;
    double budget = left();
    if (budget <= 0.05) break;
    // Give each horizon up to the rest of the time, but leave some for the next ones.
    window_result r = solve_window(net, d, opt, w, K == last ? budget : std::max(0.5, budget * 0.6));
    log += " K=" + std::to_string(K) + ":" +
           (r.state == window_result::status::solved
                ? "feasible"
                : r.state == window_result::status::infeasible ? "infeasible" : "timeout") +
           "(" + std::to_string(r.binaries) + " binaries)";
    if (r.state == window_result::status::solved) {
      method_result m;
      m.sends = std::move(r.sends);
      m.proved_optimal = all_below_proved;
      m.note = "milp epoch search:" + log + (m.proved_optimal ? "; epoch count proved minimal" : "");
      return m;
    }
    if (r.state != window_result::status::infeasible) all_below_proved = false;
  }
  if (opt.max_epochs > 0)
    throw error(errc::infeasible, "milp: no schedule within " + std::to_string(opt.max_epochs) +
                                      " epochs (" + (all_below_proved ? "proved" : "not proved; time limit") + "):" + log);
  // Nothing better than the greedy plan within the time limit: return it, say so.
  method_result g = plan_greedy(net, d, opt);
  g.note = "milp found nothing below the greedy plan's " + std::to_string(upper_epochs) + " epochs:" + log +
           "; greedy schedule returned";
  g.proved_optimal = all_below_proved && K > upper_epochs;
  return g;
}

method_result plan_milp_from(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                             std::int32_t t0, const std::vector<send>& history, const std::vector<send>& known) {
  if (!have_solvers())
    throw error(errc::bad_argument, "method milp is not built: doppler was configured without COIN-OR (CBC/CLP)");
  const std::size_t C = d.chunks.size(), D = net.device_count();
  // The state at t0: holdings (local epochs: ≤ 0 held, > 0 in flight), pending destinations, and
  // the links the history and other jobs' fixed sends occupy.
  std::unordered_map<std::uint32_t, std::size_t> index;
  for (std::size_t c = 0; c < C; ++c) index.emplace(d.chunks[c].id, c);
  std::vector<std::int32_t> held(C * D, unreachable_epochs);
  for (std::size_t c = 0; c < C; ++c) held[c * D + d.chunks[c].source] = 0;
  slot_table prior = slots_with(net, opt.fixed_sends);
  for (const send& x : history) {
    auto l = net.find_link(x.src, x.dst);
    auto it = index.find(x.chunk);
    if (!l || it == index.end()) continue;
    prior.take(*l, x.epoch);
    if (net.is_switch(x.dst)) continue;
    auto& h = held[it->second * D + x.dst];
    h = std::min(h, x.epoch + net.links()[*l].offset - t0);
  }
  std::vector<char> pending(C * D, 0);
  for (std::size_t c = 0; c < C; ++c)
    for (device_index t : d.chunks[c].destinations) pending[c * D + t] = held[c * D + t] >= unreachable_epochs;
  std::vector<send> known_new;
  for (const send& x : known)
    if (x.epoch >= t0) known_new.push_back(x);
  const std::int32_t H = make_schedule(net, d, "milp", known).epochs;
  auto window_at = [&](std::int32_t K) {
    window_spec w;
    w.first_epoch = t0;
    w.epochs = std::max(1, K - t0);
    w.held_from = held;
    w.pending = pending;
    w.prior = &prior;
    return w;
  };
  method_result r = descend(net, d, opt, lb, known_new, H, opt.time_limit, window_at);
  r.note = "from the state at epoch " + std::to_string(t0) + ": " + r.note;
  return r;
}

}  // namespace doppler::comm::detail
