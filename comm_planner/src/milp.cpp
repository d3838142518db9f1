// The milp method: the TE-CCL MILP over the whole horizon, searching the epoch count upward from
// the lower bound (each horizon proved infeasible or solved), capped by the greedy plan.
#include "methods.hpp"
#include "te_model.hpp"

#include <doppler/runtime/error.hpp>

#include <chrono>

namespace doppler::comm::detail {

method_result plan_milp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                        std::int32_t upper_epochs) {
  if (!have_solvers())
    throw error(errc::bad_argument, "method milp is not built: doppler was configured without COIN-OR (CBC/CLP)");
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] {
    return opt.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
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

}  // namespace doppler::comm::detail
