// Re-planning at an epoch t0 (the moment the demand changes): the previous schedule's sends before
// t0 have happened and stay as they are; the rest is planned again from the state at t0 (what every
// device holds, what is in flight, which links are busy). Candidates, cheapest first, stopping at
// the first that meets the bound of the state: the greedy from the state steered by the old plan's
// remaining sends (warm), the greedy from the state without them (cold; at t0 = 0 the joint greedy
// plan from scratch), and the old plan's remaining sends pinned with the greedy filling in around
// them; the shortest wins (ties: the earlier). Above the bound, auto and milp descend with the MILP
// from the state when it fits the binary budget and time is left.
#include "methods.hpp"

#include <doppler/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

namespace doppler::comm::detail {

std::vector<send> replay_valid(const network& net, const demand& d, const std::vector<send>& old, std::int32_t until) {
  const std::size_t D = net.device_count();
  std::unordered_map<std::uint32_t, std::size_t> index;
  for (std::size_t c = 0; c < d.chunks.size(); ++c) index.emplace(d.chunks[c].id, c);
  std::vector<std::int32_t> hold(d.chunks.size() * D, unreachable_epochs);
  for (std::size_t c = 0; c < d.chunks.size(); ++c) hold[c * D + d.chunks[c].source] = std::numeric_limits<std::int32_t>::min();
  std::vector<send> in;
  for (const send& x : old)
    if (x.epoch < until && index.count(x.chunk) && net.find_link(x.src, x.dst)) in.push_back(x);
  // Device senders before switch senders within an epoch (a switch forwards what entered it then).
  std::stable_sort(in.begin(), in.end(), [&](const send& a, const send& b) {
    return std::tuple(a.epoch, net.is_switch(a.src)) < std::tuple(b.epoch, net.is_switch(b.src));
  });
  std::set<std::tuple<std::uint32_t, node_index, std::int32_t>> entered;  // (chunk, switch, epoch)
  std::vector<send> out;
  std::vector<char> done(in.size(), 0);
  for (std::size_t i = 0; i < in.size();) {
    std::size_t j = i;
    while (j < in.size() && in[j].epoch == in[i].epoch) ++j;
    // Repeat over the epoch's sends until nothing more is accepted (switch → switch hops).
    for (bool more = true; more;) {
      more = false;
      for (std::size_t k = i; k < j; ++k) {
        if (done[k]) continue;
        const send& x = in[k];
        const std::size_t c = index.at(x.chunk);
        const bool ok = net.is_switch(x.src) ? entered.count({x.chunk, x.src, x.epoch}) > 0
                                             : hold[c * D + x.src] <= x.epoch;
        if (!ok) continue;
        done[k] = 1;
        more = true;
        out.push_back(x);
        if (net.is_switch(x.dst)) {
          entered.insert({x.chunk, x.dst, x.epoch});
        } else {
          auto& h = hold[c * D + x.dst];
          h = std::min(h, x.epoch + net.links()[*net.find_link(x.src, x.dst)].offset);
        }
      }
    }
    i = j;
  }
  return out;
}

namespace {

struct candidate {
  std::string name;
  schedule sched;  // the whole schedule (history included), canonical
  std::int32_t epochs = unreachable_epochs;
  std::string note;
  bool proved_optimal = false;
};

}  // namespace

void check_warm_start(const network& net, const demand& d, const schedule& old) {
  if (std::abs(old.epoch_seconds - net.tau()) > 1e-9 * net.tau() || old.chunk_bytes != d.chunk_bytes)
    throw error(errc::bad_argument, "", "warm_start",
                fmt::format("the previous schedule has {:.10g}-byte chunks and epochs of {:.6g} s, this plan {:.10g}-byte "
                            "chunks and epochs of {:.6g} s: re-plan with the previous chunk size and epoch length",
                            old.chunk_bytes, old.epoch_seconds, d.chunk_bytes, net.tau()));
}

plan_result replan_at(const network& net, const demand& d, const plan_options& opt) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const schedule& old = *opt.warm_start;
  check_warm_start(net, d, old);
  if (opt.method != "greedy" && opt.method != "auto" && opt.method != "milp")
    throw error(errc::bad_argument, "re-planning at an epoch supports the greedy, auto and milp methods, not " + opt.method);
  const std::int32_t t0 = opt.replan_epoch;
  if (t0 > old.epochs)  // the old plan was over by then: nothing of it to re-plan from
    throw error(errc::bad_argument, "", "replan_epoch",
                std::to_string(t0) + " is past the end of the previous schedule (" + std::to_string(old.epochs) +
                    " epochs)");
  // The history (sends before t0 that stay valid for the new demand) and the old plan's rest.
  // One replay of the whole old plan: its valid sends before t0 are the history, the rest the old
  // plan's remaining sends (the hint, and what candidate 3 pins).
  const std::vector<send> whole = replay_valid(net, d, old.sends, std::numeric_limits<std::int32_t>::max());
  std::vector<send> history, rest;
  for (const send& x : whole) (x.epoch < t0 ? history : rest).push_back(x);
  std::size_t dropped = 0;
  for (const send& x : old.sends) dropped += x.epoch < t0;
  dropped -= history.size();

  plan_result out;
  // The cheap bound (latency, every device's in- and out-cut) first: when the warm pass meets it,
  // the exact cut enumeration is not needed.
  out.bound = compute_lower_bound_from(net, d, t0, history, opt.fixed_sends, false);
  std::vector<candidate> tried;
  auto finish = [&](std::string name, std::vector<send> fresh, const std::vector<send>& before) {
    candidate k;
    k.name = std::move(name);
    std::vector<send> sends = before;
    sends.insert(sends.end(), fresh.begin(), fresh.end());
    if (sends.size() < 400000) prune_unused(net, d, sends, t0);
    k.sched = make_schedule(net, d, opt.method + "+warm", std::move(sends));
    k.epochs = k.sched.epochs;
    tried.push_back(std::move(k));
    return tried.back().epochs <= out.bound.epochs;
  };
  // 1. warm: the greedy from the state, the old plan's remaining sends as its preference.
  greedy_state st{t0, &history, rest.empty() ? nullptr : &rest};
  bool met = finish("warm greedy from the state", plan_greedy(net, d, opt, &st).sends, history);
  if (!met) {
    out.bound = compute_lower_bound_from(net, d, t0, history, opt.fixed_sends, true);
    met = tried.back().epochs <= out.bound.epochs;
  }
  // 2. cold: the same greedy without the old plan (at t0 = 0: the joint plan from scratch).
  if (!met && !rest.empty()) {
    greedy_state cold{t0, &history, nullptr};
    met = finish("cold greedy from the state", plan_greedy(net, d, opt, &cold).sends, history);
  }
  // 3. the old plan kept: its remaining sends pinned, the greedy around them for what they miss.
  if (!met && !rest.empty()) {
    greedy_state pinned{t0, &whole, nullptr};
    met = finish("old plan kept + greedy", plan_greedy(net, d, opt, &pinned).sends, whole);
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < tried.size(); ++i)
    if (tried[i].epochs < tried[best].epochs) best = i;
  std::string summary;
  for (const candidate& k : tried)
    summary += (summary.empty() ? "" : ", ") + k.name + " " + std::to_string(k.epochs);
  out.sched = std::move(tried[best].sched);
  std::string how = tried[best].name;
  std::string solver_note;
  bool proved = tried[best].epochs <= out.bound.epochs;
  // 4. Above the bound: the MILP from the state, down from the best plan, where it fits.
  if (!proved && (opt.method == "milp" || opt.method == "auto") && have_solvers()) {
    const double binaries = static_cast<double>(d.chunks.size()) * static_cast<double>(net.links().size()) *
                            static_cast<double>(tried[best].epochs - t0);
    const double left = opt.time_limit - elapsed();
    if ((opt.method == "milp" || binaries <= static_cast<double>(opt.milp_binary_limit)) && left > 0.1) {
      plan_options m = opt;
      m.time_limit = left;
      method_result r = plan_milp_from(net, d, m, out.bound, t0, history, out.sched.sends);
      std::vector<send> all = history;
      all.insert(all.end(), r.sends.begin(), r.sends.end());
      prune_unused(net, d, all, t0);
      const std::int32_t k = make_schedule(net, d, "", all).epochs;
      solver_note = "; " + r.note;
      if (k < tried[best].epochs) {
        out.sched = make_schedule(net, d, opt.method + "+warm", std::move(all));
        how = "milp from the state";
      }
      proved = proved || r.proved_optimal;
    } else {
      solver_note = "; no MILP (" + std::string(left <= 0.1 ? "no time left" : "above the binary budget") + ")";
    }
  }
  out.sched.replan_epoch = t0;
  out.sched.proved_optimal = proved || out.sched.epochs <= out.bound.epochs;
  out.sched.note = "re-planned at epoch " + std::to_string(t0) + ": " + std::to_string(history.size()) +
                   " sends before it kept" + (dropped ? " (" + std::to_string(dropped) + " of chunks no longer in the demand dropped)" : "") +
                   "; kept the " + how + " (" + summary + "; bound " + std::to_string(out.bound.epochs) + ")" + solver_note;
  out.sched.lower_bound_seconds = out.bound.seconds;
  out.sched.solve_seconds = elapsed();
  try {
    out.report = validate_schedule(net, d, out.sched, {.switch_copy = opt.switch_copy});
  } catch (const error& e) {
    throw error(errc::internal, "re-planning produced an invalid schedule: " + std::string(e.what()));
  }
  return out;
}

}  // namespace doppler::comm::detail
