// The makespan lower bound: the critical path, the work bound, and the head/tail bound.
//
// The head/tail bound (a release/delivery bound of scheduling theory, with transfers): every op on
// device d starts no earlier than the earliest any op could start there (its head h_d: inputs have to
// reach d) and leaves at least the least time any op there needs after it ends (its tail t_d: its
// consumers, transfers and their successors), so d computes only inside [h_d, T − t_d]:
//     Σ_d rate_d · streams · max(0, T − h_d − t_d) ≥ total work.
// Heads and tails alone are 0 wherever an entry may sit on every device. What lifts them is that an
// op sits on exactly ONE device: for an op `u` that every op with work depends on (a "source", e.g.
// the input activations x of a Llama block) the bound is computed with u pinned to each device a in
// turn, and the least over a is kept; likewise for an op every op with work feeds (a "sink", the
// block's output) pinned to each b. The head of (v, d) is a longest-path DP in which every other op
// may sit on whichever device suits that one path (a relaxation, hence a bound), transfers take
// their uncontended time, and ops never wait for a busy device. Valid for every placement with
// jitter 0: contention, queueing and host-core sharing only make things later.
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/sim.hpp>

#include "sim_detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

namespace doppler {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// The head/tail bound's inputs: per (op, device) times, each op's least FLOP-equivalent work, and a
/// lower bound on moving op u's output from device a to device b.
struct ht_problem {
  explicit ht_problem(const graph& graph_) : g(graph_) {}
  const graph& g;
  std::size_t n = 0, devices = 0;
  std::vector<double> time;      ///< n × devices: seconds of op v on device d
  std::vector<double> work;      ///< per op: min over d of time × capacity rate (0 = takes no time)
  std::vector<double> capacity;  ///< per device: rate × streams, rates relative to the fastest device's
  std::vector<double> latency;   ///< devices × devices: seconds every transfer a → b pays at least
  std::vector<double> per_byte;  ///< devices × devices: seconds per byte a → b at least

  double t(op_index v, std::size_t d) const { return time[v * devices + d]; }
  double comm(op_index u, std::size_t a, std::size_t b) const {
    if (a == b) return 0;
    std::size_t k = a * devices + b;
    return latency[k] + (g[u].bytes > 0 ? g[u].bytes * per_byte[k] : 0.0);
  }
};

/// head[v × D + d]: the earliest op v can start on device d when op `pin` (if any) is on device `at`.
std::vector<double> heads(const ht_problem& pr, std::optional<op_index> pin, std::size_t at) {
  const std::size_t D = pr.devices;
  std::vector<double> h(pr.n * D, 0.0);
  for (op_index v : pr.g.topo_order())
    for (std::size_t d = 0; d < D; ++d) {
      double& hv = h[v * D + d];
      if (pin && v == *pin && d != at) { hv = inf; continue; }
      for (op_index u : pr.g.preds(v)) {
        double best = inf;
        for (std::size_t e = 0; e < D; ++e) best = std::min(best, h[u * D + e] + pr.t(u, e) + pr.comm(u, e, d));
        hv = std::max(hv, best);
      }
    }
  return h;
}

/// tail[v × D + d]: the least time that must pass after op v ends on device d until the run ends,
/// when op `pin` (if any) is on device `at`.
std::vector<double> tails(const ht_problem& pr, std::optional<op_index> pin, std::size_t at) {
  const std::size_t D = pr.devices;
  std::vector<double> t(pr.n * D, 0.0);
  auto order = pr.g.topo_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    op_index v = *it;
    for (std::size_t d = 0; d < D; ++d) {
      double& tv = t[v * D + d];
      if (pin && v == *pin && d != at) { tv = inf; continue; }
      for (op_index w : pr.g.succs(v)) {
        double best = inf;
        for (std::size_t e = 0; e < D; ++e) best = std::min(best, pr.comm(v, d, e) + pr.t(w, e) + t[w * D + e]);
        tv = std::max(tv, best);
      }
    }
  }
  return t;
}

/// Per device: the least of `x[v × D + d]` over the ops with work (what any op there waits at least).
std::vector<double> least_over_work(const ht_problem& pr, const std::vector<double>& x) {
  std::vector<double> m(pr.devices, inf);
  for (op_index v = 0; v < pr.n; ++v)
    if (pr.work[v] > 0)
      for (std::size_t d = 0; d < pr.devices; ++d) m[d] = std::min(m[d], x[v * pr.devices + d]);
  return m;
}

/// The least T with Σ_d capacity_d · max(0, T − offset_d) ≥ work (offset = head + tail; a device
/// with an infinite offset cannot hold work).
double fill_time(std::vector<std::pair<double, double>> dev /* (offset, capacity) */, double work) {
  std::sort(dev.begin(), dev.end());
  double cap = 0, weighted = 0;  // Σ capacity and Σ capacity × offset of the devices below T
  for (std::size_t i = 0; i < dev.size() && std::isfinite(dev[i].first); ++i) {
    cap += dev[i].second;
    weighted += dev[i].second * dev[i].first;
    double t = (work + weighted) / cap;  // T if exactly devices 0..i take work
    if (i + 1 == dev.size() || !std::isfinite(dev[i + 1].first) || t <= dev[i + 1].first) return t;
  }
  return inf;  // unreachable for a pinned op's own device (offsets finite there)
}

/// Ops every op with work depends on (`forward`) or feeds (`!forward`), at most `limit` of them,
/// nearest to the graph's entries (exits) first: the candidates to pin.
std::vector<op_index> dominators(const ht_problem& pr, bool forward, std::size_t limit) {
  const graph& g = pr.g;
  std::size_t with_work = 0;
  op_index first = 0;
  bool found = false;
  auto order = g.topo_order();
  for (std::size_t i = 0; i < order.size(); ++i) {
    op_index v = forward ? order[i] : order[order.size() - 1 - i];
    if (pr.work[v] <= 0) continue;
    ++with_work;
    if (!found) { first = v; found = true; }
  }
  if (!found) return {};
  // Candidates: the first op with work (in that direction) and everything upstream of it.
  std::vector<char> mark(pr.n, 0);
  std::vector<op_index> stack{first}, cand;
  mark[first] = 1;
  while (!stack.empty()) {
    op_index v = stack.back();
    stack.pop_back();
    cand.push_back(v);
    for (op_index u : forward ? g.preds(v) : g.succs(v))
      if (!mark[u]) { mark[u] = 1; stack.push_back(u); }
  }
  // Nearest the entries first: topological position (reversed for sinks).
  std::vector<std::size_t> pos(pr.n);
  for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  std::sort(cand.begin(), cand.end(), [&](op_index a, op_index b) { return forward ? pos[a] < pos[b] : pos[a] > pos[b]; });
  constexpr std::size_t max_checked = 64;  // each check is a graph walk
  if (cand.size() > max_checked) cand.resize(max_checked);
  std::vector<op_index> out;
  std::vector<char> seen(pr.n);
  for (op_index c : cand) {
    if (out.size() == limit) break;
    std::fill(seen.begin(), seen.end(), 0);
    std::size_t reached = 0;
    stack.assign(1, c);
    seen[c] = 1;
    while (!stack.empty()) {
      op_index v = stack.back();
      stack.pop_back();
      if (pr.work[v] > 0) ++reached;
      for (op_index w : forward ? g.succs(v) : g.preds(v))
        if (!seen[w]) { seen[w] = 1; stack.push_back(w); }
    }
    if (reached == with_work) out.push_back(c);
  }
  return out;
}

/// The head/tail bound (see the file comment); 0 when the graph is too large for it (the DP is
/// O(edges × devices²) per pinned device).
double head_tail_bound(const ht_problem& pr, double total_work) {
  constexpr std::size_t max_pins = 3;
  constexpr double budget = 4e8;  // (edges + ops) × devices³ × pins, ~1 s on one core
  const double D = static_cast<double>(pr.devices);
  double per_pin = (static_cast<double>(pr.g.edge_count()) + static_cast<double>(pr.n)) * D * D * D;
  if (pr.devices < 2 || total_work <= 0 || per_pin > budget) return 0;
  std::size_t pins = std::min<std::size_t>(max_pins, static_cast<std::size_t>(budget / per_pin / 2));
  auto sources = dominators(pr, true, pins), sinks = dominators(pr, false, pins);
  // Per pin and device it sits on: the per-device least head (tail). No pin: one unpinned pass.
  auto sweep = [&](const std::vector<op_index>& pinned, bool head) {
    std::vector<std::vector<std::vector<double>>> out;  // [pin][device at] -> per-device least
    if (pinned.empty()) {
      auto x = head ? heads(pr, std::nullopt, 0) : tails(pr, std::nullopt, 0);
      out.push_back({least_over_work(pr, x)});
    }
    for (op_index u : pinned) {
      out.emplace_back();
      for (std::size_t a = 0; a < pr.devices; ++a)
        out.back().push_back(least_over_work(pr, head ? heads(pr, u, a) : tails(pr, u, a)));
    }
    return out;
  };
  auto H = sweep(sources, true), T = sweep(sinks, false);
  double best = 0;
  std::vector<std::pair<double, double>> dev(pr.devices);
  for (const auto& hp : H)
    for (const auto& tp : T) {
      double least = inf;  // over where the pinned source and sink sit
      for (const auto& h : hp)
        for (const auto& t : tp) {
          for (std::size_t d = 0; d < pr.devices; ++d) dev[d] = {h[d] + t[d], pr.capacity[d]};
          least = std::min(least, fill_time(dev, total_work));
        }
      if (std::isfinite(least)) best = std::max(best, least);
    }
  return best;
}

}  // namespace

double makespan_lower_bound(const graph& g, const cluster& c, const cost_model& cm,
                            const sim_options& opt) {
  detail::check_options(opt, c);
  if (g.size() == 0 || c.device_count() == 0) return 0;
  auto slow = detail::slowdowns(opt, c);
  const std::size_t D = c.device_count();
  // Effective rates: a straggler computes at flops / slowdown; in units of the fastest device's,
  // so that work (time × rate) stays in seconds: 1e308 FLOPs at 1e21 FLOP/s times 1e21 overflowed
  // to an infinite "lower" bound above the makespan.
  std::vector<double> rate(D);
  double total_rate = 0, top_rate = 0;
  for (device_index d = 0; d < D; ++d) top_rate = std::max(top_rate, c[d].flops / slow[d]);
  for (device_index d = 0; d < D; ++d) {
    rate[d] = c[d].flops / slow[d] / top_rate;
    total_rate += rate[d];
  }
  // Every op at its least time over the devices, no communication: the critical path. (Not "on the
  // device of the highest rate": a straggler's slowdown also stretches the overhead and memory
  // terms, so that device is not the quickest for every op — a bound of 10 s came out for a 1.1 s
  // run.) D devices of `streams` concurrent ops finish the work no faster than its FLOP-equivalents
  // / (Σ rates × streams).
  int streams = opt.model == sim_model::simple ? 1 : opt.streams;
  ht_problem pr(g);
  pr.n = g.size();
  pr.devices = D;
  pr.time.resize(pr.n * D);
  pr.work.assign(pr.n, inf);
  for (op_index v = 0; v < pr.n; ++v)
    for (device_index d = 0; d < D; ++d) {
      double s = detail::base_time(g[v], c[d], cm, opt.model) * slow[d];
      pr.time[v * D + d] = s;
      // An op's FLOP-equivalent work (time × rate) is the same on every device under the FLOP-only
      // model; a memory term or an overhead does not shrink on a faster device, so the least over
      // devices is what a bound may count.
      pr.work[v] = std::min(pr.work[v], s * rate[d]);
    }
  std::vector<double> t(pr.n);
  double work = 0;  // FLOP-equivalents: seconds on the fastest device
  for (op_index v = 0; v < pr.n; ++v) {
    t[v] = inf;
    for (device_index d = 0; d < D; ++d) t[v] = std::min(t[v], pr.t(v, d));
    work += pr.work[v];
  }
  double cp = critical_path(g, t);
  double bound = std::max(cp, work / (total_rate * streams));
  // Host-core sharing: at most host_cores ops progress at full speed at any instant, none faster than
  // its least time.
  if (opt.model == sim_model::wc && cm.host_cores() > 0) {
    double seconds = std::accumulate(t.begin(), t.end(), 0.0);
    bound = std::max(bound, seconds / cm.host_cores());
  }
  // Transfers for the head/tail bound: the simple model pays bytes / route bottleneck bandwidth; the
  // wc model with direct copies the route's latency + bytes / bottleneck; planned transfers may split
  // a tensor over several paths, so there only what every path into b pays: its cheapest inbound
  // link's latency and bytes / the sum of b's inbound bandwidths.
  pr.capacity.resize(D);
  for (device_index d = 0; d < D; ++d) pr.capacity[d] = rate[d] * streams;
  pr.latency.assign(D * D, 0.0);
  pr.per_byte.assign(D * D, 0.0);
  std::vector<double> in_bw(D, 0.0), in_lat(D, inf);
  for (const link& l : c.links())
    if (l.dst < D) {
      in_bw[l.dst] += l.bandwidth;
      in_lat[l.dst] = std::min(in_lat[l.dst], l.latency);
    }
  for (device_index a = 0; a < D; ++a)
    for (device_index b = 0; b < D; ++b) {
      if (a == b) continue;
      const route& rt = c.route_between(a, b);
      std::size_t k = a * D + b;
      if (opt.model == sim_model::simple) {
        pr.per_byte[k] = 1.0 / rt.bandwidth;
      } else if (opt.transfers) {
        pr.latency[k] = std::isfinite(in_lat[b]) ? in_lat[b] : 0.0;
        pr.per_byte[k] = in_bw[b] > 0 ? 1.0 / in_bw[b] : 0.0;
      } else {
        pr.latency[k] = rt.latency;
        pr.per_byte[k] = 1.0 / rt.bandwidth;
      }
    }
  return std::max(bound, head_tail_bound(pr, work));
}

double makespan_lower_bound(const graph& g, const cluster& c, const cost_model& cm) {
  return makespan_lower_bound(g, c, cm, sim_options{});
}

}  // namespace doppler
