// The telp method: TE-CCL's LP form on the time-expanded network, solved with CLP. One commodity
// per source GPU (all its chunks, no chunk index, no copy, fractional): flow F[s,l,k] on link l
// sent in epoch k, carry H[s,v,k] at device v from epoch k to k+1 (store-and-forward; switches hold
// nothing: what enters in epoch k leaves in epoch k), absorption A[s,d,k] (destination d takes
// delivery of s's data held at epoch k), window capacities per link, every destination's amount
// absorbed by the horizon K; objective: deliver early (Σ A[s,d,k]/(k+1), as TE-CCL's LP) plus a
// tiny cost per hop. K is searched from the lower bound upward (doubling steps, then bisection)
// below the direct schedule's epochs, where the LP is always feasible. The flow of each source is
// decomposed into time-expanded paths (source at epoch 0 → absorption), each (chunk, destination)
// takes one path (systematic rounding by cumulative weight, earliest arrivals first), and the paths
// are list-scheduled in LP arrival order on a slot table (once from epoch 0 and once from each
// path's LP start epoch; the shorter schedule wins), reusing hops a chunk already took (multicast).
#include "methods.hpp"
#include "te_model.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#ifdef DOPPLER_HAVE_COIN
#include <coin/ClpSimplex.hpp>
#include <coin/ClpSolve.hpp>
#include <coin/CoinError.hpp>
#include <coin/CoinPackedMatrix.hpp>
#endif

namespace doppler::comm::detail {

#ifndef DOPPLER_HAVE_COIN
method_result plan_telp(const network&, const demand&, const plan_options&, const lower_bound&) {
  throw error(errc::bad_argument, "method telp is not built: doppler was configured without COIN-OR (CBC/CLP)");
}
#else

namespace {

/// The commodities: per source device (no copy), or per (source, destination) with a shared
/// usage per (source, link, epoch) when the demand multicasts (the copy relaxation).
struct commodities {
  std::vector<device_index> sources;      // per commodity
  std::vector<std::vector<double>> need;  // [commodity][device]: chunks to absorb there
  bool copy = false;
  std::vector<std::size_t> owner;  // copy: per commodity, its source's index in `owners`
  std::vector<device_index> owners;
};

commodities group(const network& net, const demand& d) {
  std::map<device_index, std::vector<double>> need;
  commodities out;
  for (const chunk& c : d.chunks) {
    auto& q = need[c.source];
    q.resize(net.device_count(), 0);
    for (device_index t : c.destinations) q[t] += 1;
    out.copy = out.copy || c.destinations.size() > 1;
  }
  for (auto& [s, q] : need) {
    if (!out.copy) {
      out.sources.push_back(s);
      out.need.push_back(std::move(q));
      continue;
    }
    out.owners.push_back(s);
    for (device_index t = 0; t < q.size(); ++t) {
      if (q[t] <= 0) continue;
      out.sources.push_back(s);
      out.owner.push_back(out.owners.size() - 1);
      out.need.emplace_back(q.size(), 0.0);
      out.need.back()[t] = q[t];
    }
  }
  return out;
}

/// One solved time-expanded LP: column indices and the primal solution.
struct te_lp {
  std::int32_t K = 0;
  enum class status { optimal, infeasible, stopped } state = status::stopped;
  std::size_t columns = 0, rows = 0;
  // Column index per (source, link, epoch) / (source, device, epoch); -1 when pruned.
  std::vector<int> f, h, a;
  std::vector<int> u;  // copy relaxation: usage per (owner, link, epoch); -1 when absent
  std::vector<double> x;
  double objective = 0;
};

te_lp solve_te_lp(const network& net, const commodities& cm, std::int32_t K, double seconds, bool switch_copy) {
  const std::size_t S = cm.sources.size(), D = net.device_count(), N = net.node_count(), L = net.links().size();
  const std::size_t KK = static_cast<std::size_t>(K) + 1;
  te_lp r;
  r.K = K;
  r.f.assign(S * L * KK, -1);
  r.h.assign(S * D * KK, -1);
  r.a.assign(S * D * KK, -1);
  auto fi = [&](std::size_t s, std::size_t l, std::int32_t k) { return (s * L + l) * KK + static_cast<std::size_t>(k); };
  auto vi = [&](std::size_t s, std::size_t v, std::int32_t k) { return (s * D + v) * KK + static_cast<std::size_t>(k); };
  std::vector<double> collb, colub, obj, rowlb, rowub;
  std::vector<int> rows, cols;
  std::vector<double> vals;
  auto add_col = [&](double cost) {
    collb.push_back(0);
    colub.push_back(COIN_DBL_MAX);
    obj.push_back(cost);
    return static_cast<int>(obj.size()) - 1;
  };
  const double hop_cost = 1e-4 / ((K + 1.0) * (K + 2.0));
  for (std::size_t s = 0; s < S; ++s) {
    const device_index src = cm.sources[s];
    const auto& q = cm.need[s];
    // Flows: a link is useful from the epoch its tail can first hold s's data until the epoch from
    // which some destination of s is still reachable in time.
    for (std::size_t l = 0; l < L; ++l) {
      const te_link& t = net.links()[l];
      if (t.dst == src) continue;
      std::int32_t lo = net.epochs_to_node(src, t.src), rest = unreachable_epochs;
      for (device_index d = 0; d < D; ++d) {
        if (q[d] <= 0) continue;
        std::int32_t x = net.is_switch(t.dst) ? net.epochs_from_node(t.dst, d)
                                              : (t.dst == d ? t.offset : t.offset + net.epochs_from_node(t.dst, d));
        rest = std::min(rest, x);
      }
      if (rest >= unreachable_epochs) continue;
      if (net.is_switch(t.dst)) rest = std::max(rest, 1);
      std::int32_t hi = std::min(K - 1, K - rest);
      for (std::int32_t k = lo; k <= hi; ++k) r.f[fi(s, l, k)] = add_col(hop_cost);
    }
    for (device_index v = 0; v < D; ++v) {
      std::int32_t first = v == src ? 0 : net.epochs_between(src, v);
      if (first >= unreachable_epochs) continue;
      for (std::int32_t k = first; k < K; ++k) r.h[vi(s, v, k)] = add_col(0);
      if (q[v] > 0)
        for (std::int32_t k = std::max(first, 1); k <= K; ++k) r.a[vi(s, v, k)] = add_col(-1.0 / (k + 1.0));
    }
  }
  auto put = [&](int row, int col, double v) {
    if (col < 0) return;
    rows.push_back(row);
    cols.push_back(col);
    vals.push_back(v);
  };
  auto add_row = [&](double lo, double hi) {
    rowlb.push_back(lo);
    rowub.push_back(hi);
    return static_cast<int>(rowlb.size()) - 1;
  };
  for (std::size_t s = 0; s < S; ++s) {
    const device_index src = cm.sources[s];
    double total = 0;
    for (double x : cm.need[s]) total += x;
    // Devices: carry in + arrivals (+ supply) = absorbed + sent + carry out.
    for (device_index v = 0; v < D; ++v)
      for (std::int32_t k = 0; k <= K; ++k) {
        const double supply = v == src && k == 0 ? total : 0;
        const std::size_t before = vals.size();
        int row = add_row(-supply, -supply);
        if (k > 0) put(row, r.h[vi(s, v, k - 1)], 1);
        if (k < K) put(row, r.h[vi(s, v, k)], -1);
        put(row, r.a[vi(s, v, k)], -1);
        for (std::uint32_t l : net.in_links(v)) {
          std::int32_t e = k - net.links()[l].offset;
          if (e >= 0 && e < K) put(row, r.f[fi(s, l, e)], 1);
        }
        if (k < K)
          for (std::uint32_t l : net.out_links(v)) put(row, r.f[fi(s, l, k)], -1);
        if (vals.size() == before && supply == 0) {  // nothing can happen here
          rowlb.pop_back();
          rowub.pop_back();
        }
      }
    // Switches: in = out in the same epoch.
    for (node_index w = static_cast<node_index>(D); w < N; ++w)
      for (std::int32_t k = 0; k < K; ++k) {
        const std::size_t before = vals.size();
        int row = add_row(0, 0);
        for (std::uint32_t l : net.in_links(w)) put(row, r.f[fi(s, l, k)], 1);
        for (std::uint32_t l : net.out_links(w)) put(row, r.f[fi(s, l, k)], -1);
        if (vals.size() == before) {
          rowlb.pop_back();
          rowub.pop_back();
        }
      }
    // Demand met by the horizon.
    for (device_index v = 0; v < D; ++v) {
      if (cm.need[s][v] <= 0) continue;
      int row = add_row(cm.need[s][v], cm.need[s][v]);
      for (std::int32_t k = 0; k <= K; ++k) put(row, r.a[vi(s, v, k)], 1);
    }
  }
  // Copy relaxation: a source's data on a link in an epoch serves every destination's flow (a chunk
  // sent once, copied at the GPU holding it): usage U[o,l,k] ≥ F[c,l,k] for each commodity c of
  // owner o, and the capacity counts U. Switches cannot copy (unless switch copy is on): what
  // leaves a switch is at most what entered.
  std::vector<int> usage;  // [owner][link][epoch]
  if (cm.copy) {
    const std::size_t O = cm.owners.size();
    usage.assign(O * L * KK, -1);
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t l = 0; l < L; ++l)
        for (std::int32_t k = 0; k < K; ++k) {
          int c = r.f[fi(s, l, k)];
          if (c < 0) continue;
          int& u = usage[(cm.owner[s] * L + l) * KK + static_cast<std::size_t>(k)];
          if (u < 0) u = add_col(hop_cost);
          int row = add_row(0, COIN_DBL_MAX);
          put(row, u, 1);
          put(row, c, -1);
        }
    if (!switch_copy)
      for (std::size_t o = 0; o < O; ++o)
        for (node_index w = static_cast<node_index>(D); w < N; ++w)
          for (std::int32_t k = 0; k < K; ++k) {
            const std::size_t before = vals.size();
            int row = add_row(-COIN_DBL_MAX, 0);
            for (std::uint32_t l : net.out_links(w)) put(row, usage[(o * L + l) * KK + static_cast<std::size_t>(k)], 1);
            for (std::uint32_t l : net.in_links(w)) put(row, usage[(o * L + l) * KK + static_cast<std::size_t>(k)], -1);
            if (vals.size() == before) {
              rowlb.pop_back();
              rowub.pop_back();
            }
          }
  }
  // Capacity: at most cap chunks per window of β+1 epochs.
  for (std::size_t l = 0; l < L; ++l) {
    const te_link& t = net.links()[l];
    for (std::int32_t k = 0; k < K + t.window - 1; ++k) {
      int row = -1;
      const std::size_t owners = cm.copy ? cm.owners.size() : S;
      for (std::size_t s = 0; s < owners; ++s)
        for (std::int32_t j = std::max(0, k - t.window + 1); j <= std::min(k, K - 1); ++j)
          if (int c = cm.copy ? usage[(s * L + l) * KK + static_cast<std::size_t>(j)] : r.f[fi(s, l, j)]; c >= 0) {
            if (row < 0) row = add_row(-COIN_DBL_MAX, t.cap);
            put(row, c, 1);
          }
    }
  }
  r.u = std::move(usage);
  r.columns = obj.size();
  r.rows = rowlb.size();
  CoinPackedMatrix m(false, rows.data(), cols.data(), vals.data(), static_cast<CoinBigIndex>(vals.size()));
  m.setDimensions(static_cast<int>(rowlb.size()), static_cast<int>(collb.size()));
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(m, collb.data(), colub.data(), obj.data(), rowlb.data(), rowub.data());
  // Wall-clock limit (the cores are shared), CPU seconds too.
  lp.setMaximumSeconds(std::max(0.05, seconds));
  lp.setMaximumWallSeconds(std::max(0.05, seconds));
  // Barrier with crossover: on these degenerate time-expanded LPs it is 2-3x faster than the dual
  // simplex, and its solutions round better (DGX-1 allgather, 4 chunks per GPU: 12 epochs vs 16).
  // The dual simplex settles what the barrier leaves open (e.g. infeasibility it does not prove).
  // Large models go to the dual simplex alone: CLP's barrier ignored the time limit there (NDv2
  // alltoall, ~10^5 columns: minutes and 1.6 GB) while the simplex stops on it.
  const char* algo = std::getenv("DOPPLER_TELP_ALGO");  // "dual": the dual simplex only (experiments)
  if ((!algo || std::string(algo) != "dual") && obj.size() <= 40000) {
    ClpSolve how;
    how.setSolveType(ClpSolve::useBarrier);
    lp.initialSolve(how);
  }
  if (lp.status() != 0 && lp.status() != 1 && lp.status() != 3) lp.dual();  // 3: stopped on the limit
  if (lp.status() == 0) {
    r.state = te_lp::status::optimal;
    r.x.assign(lp.primalColumnSolution(), lp.primalColumnSolution() + obj.size());
    r.objective = lp.objectiveValue();
  } else if (lp.status() == 1) {
    r.state = te_lp::status::infeasible;
  }
  return r;
}

/// One time-expanded path of a source's flow: hops (link, epoch) to an absorption.
struct te_path {
  std::vector<std::pair<std::uint32_t, std::int32_t>> hops;
  device_index dst = 0;
  std::int32_t arrival = 0;
  double weight = 0;
};

/// Flow decomposition of source s's commodity: walks from (source, 0) along positive flow,
/// preferring absorption, then sends, then carrying, and subtracts each path's bottleneck.
std::vector<te_path> decompose(const network& net, const te_lp& lp, std::size_t s, device_index src, double total) {
  const std::size_t D = net.device_count(), L = net.links().size(), KK = static_cast<std::size_t>(lp.K) + 1;
  std::vector<double> x = lp.x;
  auto val = [&](int col) { return col < 0 ? 0.0 : x[static_cast<std::size_t>(col)]; };
  auto F = [&](std::size_t l, std::int32_t k) { return lp.f[(s * L + l) * KK + static_cast<std::size_t>(k)]; };
  auto H = [&](std::size_t v, std::int32_t k) { return lp.h[(s * D + v) * KK + static_cast<std::size_t>(k)]; };
  auto A = [&](std::size_t v, std::int32_t k) { return lp.a[(s * D + v) * KK + static_cast<std::size_t>(k)]; };
  constexpr double tiny = 1e-6;
  std::vector<te_path> out;
  double left = total;
  for (std::size_t guard = 0; left > tiny && guard < 1000000; ++guard) {
    te_path p;
    std::vector<int> arcs;
    node_index v = src;
    std::int32_t k = 0;
    bool done = false;
    for (std::size_t steps = 0; steps < 100000 && !done && k <= lp.K; ++steps) {
      if (int a = net.is_switch(v) ? -1 : A(v, k); val(a) > tiny) {
        arcs.push_back(a);
        p.dst = static_cast<device_index>(v);
        p.arrival = k;
        done = true;
        break;
      }
      bool moved = false;
      if (k < lp.K)
        for (std::uint32_t l : net.out_links(v)) {
          int c = F(l, k);
          if (val(c) <= tiny) continue;
          const te_link& t = net.links()[l];  // into a switch: offset 0, it leaves in the same epoch
          arcs.push_back(c);
          p.hops.push_back({l, k});
          v = t.dst;
          k += t.offset;
          moved = true;
          break;
        }
      if (moved) continue;
      if (int c = net.is_switch(v) || k >= lp.K ? -1 : H(v, k); val(c) > tiny) {
        arcs.push_back(c);
        ++k;
        continue;
      }
      break;  // a dead end (numerical residue)
    }
    if (!done) break;
    double w = left;
    for (int c : arcs) w = std::min(w, val(c));
    for (int c : arcs) x[static_cast<std::size_t>(c)] -= w;
    left -= w;
    p.weight = w;
    out.push_back(std::move(p));
  }
  return out;
}

struct item {
  std::size_t chunk = 0;
  device_index dst = 0;
  const te_path* path = nullptr;  // null: leftover, the cluster route
};

/// The LP's priority of an item: its path's arrival, then its start epoch.
std::pair<std::int32_t, std::int32_t> item_key(const item& i) {
  return i.path ? std::pair{i.path->arrival, i.path->hops.empty() ? 0 : i.path->hops.front().second}
                : std::pair{unreachable_epochs, 0};
}

/// List-schedules the items in order; `lp_start`: no hop earlier than the LP's first hop epoch
/// (LP epochs are `scale` epochs of the network: the LP may run on coarser epochs).
std::vector<send> list_schedule(const network& net, const demand& d, const std::vector<item>& items, bool lp_start,
                                std::int32_t scale = 1) {
  const std::size_t D = net.device_count();
  slot_table slots(net);
  std::vector<send> sends;
  std::vector<std::int32_t> hold(d.chunks.size() * D, unreachable_epochs), h(D);
  for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) hold[ci * D + d.chunks[ci].source] = 0;
  for (const item& it : items) {
    std::copy_n(hold.begin() + static_cast<std::ptrdiff_t>(it.chunk * D), D, h.begin());
    std::vector<std::uint32_t> path;
    std::int32_t ready = 0;
    if (it.path) {
      for (auto [l, k] : it.path->hops) path.push_back(l);
      if (lp_start && !it.path->hops.empty()) ready = it.path->hops.front().second * scale;
    } else {
      path = device_path(net, d.chunks[it.chunk].source, it.dst);
    }
    schedule_path(net, slots, d.chunks[it.chunk].id, path, ready, sends, &h);
    std::copy(h.begin(), h.end(), hold.begin() + static_cast<std::ptrdiff_t>(it.chunk * D));
  }
  return sends;
}

/// The LP's sends per (owner, link) accumulated over epochs, for the guided greedy matcher: owners
/// are the sources (unicast) or the multicast sources whose usage the copy relaxation shares.
greedy_guide make_guide(const network& net, const demand& d, const commodities& cm, const te_lp& lp) {
  const std::size_t L = net.links().size(), KK = static_cast<std::size_t>(lp.K) + 1, K = static_cast<std::size_t>(lp.K);
  const std::vector<device_index>& owners = cm.copy ? cm.owners : cm.sources;
  const std::vector<int>& col = cm.copy ? lp.u : lp.f;
  greedy_guide g;
  g.K = lp.K;
  g.links = L;
  std::map<device_index, std::size_t> row;
  for (std::size_t o = 0; o < owners.size(); ++o) row[owners[o]] = o;
  for (const chunk& c : d.chunks) g.owner.push_back(row.at(c.source));
  g.cum.assign(owners.size() * L * K, 0.0);
  for (std::size_t o = 0; o < owners.size(); ++o)
    for (std::size_t l = 0; l < L; ++l) {
      double sum = 0;
      for (std::size_t k = 0; k < K; ++k) {
        if (int c = col[(o * L + l) * KK + k]; c >= 0) sum += lp.x[static_cast<std::size_t>(c)];
        g.cum[(o * L + l) * K + k] = sum;
      }
    }
  return g;
}


/// The whole telp pipeline with the LP on epochs of `scale` × τ (1: τ itself), within `seconds`.
method_result telp_at_scale(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb,
                            const commodities& cm, std::int32_t scale, double estimate, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] {
    return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  method_result r;
  {
    std::optional<network> coarse;
    lower_bound coarse_lb;
    if (scale > 1) {
      coarse.emplace(net.topology(), d.chunk_bytes, epoch_mode::given, net.tau() * scale, opt.removed_links);
      if (coarse->links().size() != net.links().size())
        throw error(errc::internal, "telp: the coarse network has other links than the network");
      coarse_lb = compute_lower_bound(*coarse, d);
    }
    const network& ln = coarse ? *coarse : net;  // the network the LP is solved on
    const lower_bound& llb = coarse ? coarse_lb : lb;
    // The direct (unicast, no copy) schedule is a solution of the LP: its epochs cap the search.
    const std::int32_t cap_k = std::max<std::int32_t>(1, make_schedule(ln, d, "direct", plan_direct(ln, d).sends).epochs);
    std::int32_t K = std::clamp<std::int32_t>(llb.epochs, 1, cap_k);
    std::int32_t infeasible_below = K - 1;  // the largest K proved infeasible (or below the bound)
    te_lp best;
    std::string log;
    auto try_k = [&](std::int32_t k) {
      te_lp x = solve_te_lp(ln, cm, k, left(), opt.switch_copy);
      log += " K=" + std::to_string(k) + ":" +
             (x.state == te_lp::status::optimal ? "feasible" : x.state == te_lp::status::infeasible ? "infeasible" : "stopped") +
             "(" + std::to_string(x.columns) + " cols)";
      return x;
    };
    // Upward in doubling steps until feasible, then bisect the gap.
    for (std::int32_t step = 1; left() > 0.05;) {
      te_lp x = try_k(K);
      if (x.state == te_lp::status::optimal) {
        best = std::move(x);
        break;
      }
      if (x.state == te_lp::status::stopped) break;
      infeasible_below = K;
      if (K >= cap_k) break;
      K = std::min(cap_k, K + step);
      step *= 2;
    }
    while (best.state == te_lp::status::optimal && best.K - infeasible_below > 1 && left() > 0.05) {
      std::int32_t mid = infeasible_below + (best.K - infeasible_below) / 2;
      te_lp x = try_k(mid);
      if (x.state == te_lp::status::optimal) best = std::move(x);
      else if (x.state == te_lp::status::infeasible) infeasible_below = mid;
      else break;
    }
    if (best.state != te_lp::status::optimal) {
      method_result g = plan_greedy(net, d, opt);
      g.note = "telp: no LP solution within the time limit:" + log + "; greedy schedule returned";
      return g;
    }
    // Decompose each source's flow and round every (chunk, destination) to one path.
    std::vector<std::vector<te_path>> paths(cm.sources.size());
    std::vector<item> items;
    std::size_t leftovers = 0;
    std::map<std::pair<device_index, device_index>, std::vector<const te_path*>> by_pair;  // (source, dst)
    for (std::size_t s = 0; s < cm.sources.size(); ++s) {
      double total = 0;
      for (double x : cm.need[s]) total += x;
      paths[s] = decompose(ln, best, s, cm.sources[s], total);
      for (const te_path& p : paths[s]) by_pair[{cm.sources[s], p.dst}].push_back(&p);
    }
    for (auto& [key, ps] : by_pair)
      std::stable_sort(ps.begin(), ps.end(), [](const te_path* a, const te_path* b) {
        return std::pair{a->arrival, a->hops.size()} < std::pair{b->arrival, b->hops.size()};
      });
    {
      std::map<std::pair<device_index, device_index>, std::size_t> taken;  // chunks given to a pair so far
      for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) {
        for (device_index t : d.chunks[ci].destinations) {
          const std::size_t j = taken[{d.chunks[ci].source, t}]++;
          auto& by_dst = by_pair;
          const std::pair<device_index, device_index> pair{d.chunks[ci].source, t};
          const te_path* pick = nullptr;
          double cum = 0;
          for (const te_path* p : by_dst[pair]) {  // the path covering position j + 1/2 (ties: the earlier)
            cum += p->weight;
            pick = p;
            if (cum >= j + 0.5 - 1e-9) break;
          }
          if (!pick) ++leftovers;
          items.push_back({ci, t, pick});
        }
      }
    }
    // Earliest LP arrivals first (the LP's priorities), then earliest starts.
    std::stable_sort(items.begin(), items.end(), [](const item& a, const item& b) { return item_key(a) < item_key(b); });
    // List schedules: eagerly and from the LP start epochs, in LP order and in a few shuffles of the
    // items that tie on it (fixed seed); the shortest wins, stopping at the lower bound.
    std::int32_t e_best = unreachable_epochs;
    std::string how;
    std::mt19937 rng(12345);
    for (int attempt = 0; attempt < 8 && e_best > lb.epochs; ++attempt) {
      if (attempt > 0) {
        for (std::size_t i = 0; i < items.size();) {  // shuffle within runs of equal LP keys
          std::size_t j = i + 1;
          while (j < items.size() && item_key(items[j]) == item_key(items[i])) ++j;
          std::shuffle(items.begin() + static_cast<std::ptrdiff_t>(i), items.begin() + static_cast<std::ptrdiff_t>(j), rng);
          i = j;
        }
      }
      for (bool timed : {false, true}) {
        std::vector<send> s = list_schedule(net, d, items, timed, scale);
        const std::int32_t e = make_schedule(net, d, "telp", s).epochs;
        if (e < e_best) {
          e_best = e;
          r.sends = std::move(s);
          how = std::string("by paths list-scheduled ") + (timed ? "from LP start epochs" : "eagerly") + (attempt ? ", shuffle " + std::to_string(attempt) : "");
        }
      }
    }
    // Tree-aware rounding: the greedy matcher (every chunk grows one tree: a holder forwards it,
    // copies branch where several links take it) steered by the LP — each link in each epoch
    // prefers chunks of the sources the LP sends there by then and the matcher has not yet. LP
    // first or rarity first, LP epochs or one ahead, then seeded ties; the shortest wins.
    std::size_t guided_runs = 0;
    const char* guided_env = std::getenv("DOPPLER_TELP_GUIDED");  // "off": paths only; N: N seeded runs (experiments)
    if (!guided_env || std::string(guided_env) != "off") {
      greedy_guide g = make_guide(net, d, cm, best);
      g.epoch_scale = scale;
      const unsigned seeded = guided_env ? static_cast<unsigned>(std::atoi(guided_env)) : 24;
      auto attempt = [&](bool lp_first, std::int32_t look, unsigned seed) {
        g.lp_first = lp_first;
        g.lookahead = look;
        g.seed = seed;
        ++guided_runs;
        std::vector<send> s;
        try {
          s = plan_greedy_guided(net, d, opt, g).sends;
        } catch (const error&) {
          return;  // the matcher stalled; other candidates stand
        }
        const std::int32_t e = make_schedule(net, d, "telp", s).epochs;
        if (e < e_best) {
          e_best = e;
          r.sends = std::move(s);
          how = std::string("by the LP-guided matcher (") + (lp_first ? "LP first" : "rarity first") +
                ", lookahead " + std::to_string(look) + (seed ? ", seed " + std::to_string(seed) : "") + ")";
        }
      };
      for (bool lp_first : {true, false})
        for (std::int32_t look : {0, 1})
          if (e_best > lb.epochs) attempt(lp_first, look, 0);
      for (unsigned seed = 1; seed <= seeded && e_best > lb.epochs && left() > 0.05; ++seed)
        attempt(seed % 2 == 1, static_cast<std::int32_t>((seed / 2) % 2), seed);
    }
    // Still above the bound: the MILP restricted to the LP's support (a chunk may cross a link in
    // an epoch only where the LP sends its source's data there, or up to K − LP horizon epochs
    // earlier), from the LP horizon up to one below the best rounding. The support is small, so
    // CBC settles each horizon quickly; its integer solution forms per-chunk trees by construction.
    std::string support_log;
    const char* support_env = std::getenv("DOPPLER_TELP_SUPPORT_MILP");  // "off": skip (experiments)
    if (e_best > lb.epochs && scale == 1 && opt.telp_support_milp && (!support_env || std::string(support_env) != "off")) {
      const std::size_t L = net.links().size(), KK = static_cast<std::size_t>(best.K) + 1, C = d.chunks.size();
      const std::vector<device_index>& owners = cm.copy ? cm.owners : cm.sources;
      const std::vector<int>& col = cm.copy ? best.u : best.f;
      std::map<device_index, std::size_t> row;
      for (std::size_t o = 0; o < owners.size(); ++o) row[owners[o]] = o;
      for (std::int32_t K_try = std::max(lb.epochs, best.K); K_try < e_best && left() > 0.2; ++K_try) {
        const std::int32_t slack = K_try - best.K;
        std::vector<char> allowed(C * L * static_cast<std::size_t>(K_try), 0);
        std::size_t n = 0;
        for (std::size_t c = 0; c < C; ++c) {
          const std::size_t o = row.at(d.chunks[c].source);
          for (std::size_t l = 0; l < L; ++l)
            for (std::int32_t k = 0; k < K_try; ++k)
              for (std::int32_t j = std::max(0, k - slack); j <= std::min(best.K - 1, k); ++j)
                if (int x = col[(o * L + l) * KK + static_cast<std::size_t>(j)]; x >= 0 && best.x[static_cast<std::size_t>(x)] > 1e-6) {
                  allowed[(c * L + l) * static_cast<std::size_t>(K_try) + static_cast<std::size_t>(k)] = 1;
                  ++n;
                  break;
                }
        }
        if (n > opt.milp_binary_limit) {
          support_log += " K=" + std::to_string(K_try) + ": " + std::to_string(n) + " binaries, over the MILP limit";
          break;
        }
        window_spec w = initial_window(net, d, K_try);
        w.allowed = &allowed;
        plan_options o = opt;
        o.first_feasible = true;  // any schedule at K_try beats the rounding
        // Most of the time left: the first horizon (the LP's) is the one most likely to pay.
        window_result wr = solve_window(net, d, o, w, std::max(0.2, left() * 0.9));
        support_log += " K=" + std::to_string(K_try) + ":" +
                       (wr.state == window_result::status::solved       ? "feasible"
                        : wr.state == window_result::status::infeasible ? "infeasible"
                                                                          : "timeout") +
                       "(" + std::to_string(n) + " binaries)";
        if (wr.state == window_result::status::solved) {
          const std::int32_t e = make_schedule(net, d, "telp", wr.sends).epochs;
          if (e < e_best) {
            e_best = e;
            r.sends = std::move(wr.sends);
            how = "by the MILP on the LP's support";
          }
          break;
        }
        if (wr.state != window_result::status::infeasible) break;
      }
    }
    if (opt.max_epochs > 0 && e_best > opt.max_epochs)
      throw error(errc::infeasible, "telp: the rounded schedule takes " + std::to_string(e_best) +
                                        " epochs, more than --max-epochs " + std::to_string(opt.max_epochs) + ":" + log);
    r.note = "telp: time-expanded LP" +
             (scale > 1 ? " on epochs of " + std::to_string(scale) + "τ (coarse, then list-scheduled on τ; ~" +
                              std::to_string(static_cast<long long>(estimate)) + " flow columns at τ)"
                        : std::string()) +
             log + "; LP horizon " + std::to_string(best.K) + " epochs (" +
             std::to_string(best.columns) + " columns, " + std::to_string(best.rows) + " rows); rounded " +
             how + " (" + std::to_string(e_best) + " epochs; " + std::to_string(guided_runs) + " guided runs)" +
             (support_log.empty() ? "" : "; LP-support MILP" + support_log) +
             (leftovers ? "; " + std::to_string(leftovers) + " (chunk, destination) pairs on cluster routes" : "");
  }
  return r;
}

}  // namespace

method_result plan_telp(const network& net, const demand& d, const plan_options& opt, const lower_bound& lb) {
  const auto t0 = std::chrono::steady_clock::now();
  auto left = [&] {
    return opt.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    const commodities cm = group(net, d);
    // Large instances: the LP on coarser epochs, multiples of τ that keep every link's capacity per
    // coarse epoch a whole multiple of its fine one — base × 2^j, base the least common multiple of
    // the links' windows (NDv2's 12.5 GB/s NIC takes 4τ per 62.5 MB chunk: base 4; DGX-2's 10τ: base
    // 10; a 6τ epoch would waste a third of NDv2's NIC) — its paths and priorities list-scheduled
    // and matched on τ. The finest scale brings the flow columns under the budget; up to 8× coarser
    // ones go first (cheap, and their paths are often as good: NDv2 2×8 alltoall meets the bound
    // from 16τ) while the coarse horizon keeps ≥ 16 epochs; the bound met or the time spent ends it.
    const double estimate = static_cast<double>(cm.sources.size()) * static_cast<double>(net.links().size()) *
                            static_cast<double>(std::max<std::int32_t>(1, lb.epochs));
    const char* coarse_env = std::getenv("DOPPLER_TELP_COARSE");  // "off": never coarsen (experiments)
    std::vector<std::int32_t> scales{1};
    if (estimate > opt.telp_column_budget && !(coarse_env && std::string(coarse_env) == "off")) {
      std::int32_t base = 1;
      for (const te_link& t : net.links()) base = std::lcm(base, std::max(1, t.window));
      if (base > 64) base = 1;  // windows without a small common multiple: powers of two
      std::int32_t finest = base;
      while (estimate / finest > opt.telp_column_budget) finest *= 2;
      scales.clear();
      for (std::int32_t sc = finest * 8; sc > finest; sc /= 2)
        if (lb.epochs / sc >= 16) scales.push_back(sc);
      scales.push_back(finest);
    }
    if (const char* e = std::getenv("DOPPLER_TELP_SCALE")) scales = {std::max(1, std::atoi(e))};  // experiments
    method_result best;
    std::int32_t best_epochs = unreachable_epochs;
    std::string tried;
    for (std::size_t i = 0; i < scales.size() && (i == 0 || left() > 0.5); ++i) {
      // Each coarse LP gets the time left, except that finer ones after the first keep half back.
      const double budget = i + 1 < scales.size() && i > 0 ? left() * 0.5 : left();
      method_result m = telp_at_scale(net, d, opt, lb, cm, scales[i], estimate, budget);
      const std::int32_t e = make_schedule(net, d, "telp", m.sends).epochs;
      if (scales.size() > 1) tried += (tried.empty() ? "" : ", ") + std::to_string(scales[i]) + "τ: " + std::to_string(e);
      if (e < best_epochs) {
        best_epochs = e;
        best = std::move(m);
      }
      if (best_epochs <= lb.epochs) break;
    }
    if (scales.size() > 1) best.note += "; coarse epochs tried (epochs on τ): " + tried;
    return best;
  } catch (const CoinError& e) {
    throw error(errc::internal, "CLP failed in " + e.className() + "::" + e.methodName() + ": " + e.message());
  }
}

#endif

}  // namespace doppler::comm::detail
