// The lp method: a fluid multi-commodity LP (one commodity per source, no copy, no chunk index)
// minimizing the time T in which every source's bytes reach their destinations over the link
// bandwidths, solved with CLP's dual simplex; its flows are decomposed into weighted paths per
// (source, destination), every (chunk, destination) is rounded to one path (largest remainder),
// and the paths are list-scheduled on the time-expanded network (store-and-forward, same-epoch
// switch hops, window capacities), reusing hops a chunk already took (so multicast still copies).
#include "methods.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#ifdef DOPPLER_HAVE_COIN
#include <coin/ClpSimplex.hpp>
#include <coin/CoinError.hpp>
#include <coin/CoinPackedMatrix.hpp>
#endif

namespace doppler::comm::detail {

#ifndef DOPPLER_HAVE_COIN
method_result plan_lp(const network&, const demand&, const plan_options&, const lower_bound&) {
  throw error(errc::bad_argument, "method lp is not built: doppler was configured without COIN-OR (CBC/CLP)");
}
#else

namespace {

/// Per source: flow on each link (chunks), from the fluid LP.
std::vector<std::vector<double>> solve_fluid(const network& net, const demand& d, std::vector<device_index>& sources,
                                             double& T) {
  const std::size_t D = net.device_count(), N = net.node_count(), L = net.links().size();
  std::map<device_index, std::vector<double>> need;  // source -> units per destination
  for (const chunk& c : d.chunks) {
    auto& q = need[c.source];
    q.resize(D, 0);
    for (device_index t : c.destinations) q[t] += 1;
  }
  sources.clear();
  for (auto& [s, q] : need) sources.push_back(s);
  const std::size_t S = sources.size();
  const int tcol = static_cast<int>(S * L);
  std::vector<double> collb(S * L + 1, 0), colub(S * L + 1, COIN_DBL_MAX), obj(S * L + 1, 0);
  obj[static_cast<std::size_t>(tcol)] = 1;
  // A tiny cost per unit of flow keeps paths short and cycle-free.
  for (std::size_t i = 0; i < S * L; ++i) obj[i] = 1e-6 * net.tau() / d.chunk_bytes;
  std::vector<int> rows, cols;
  std::vector<double> vals, rowlb, rowub;
  auto add = [&](int r, int c, double v) {
    rows.push_back(r);
    cols.push_back(c);
    vals.push_back(v);
  };
  for (std::size_t si = 0; si < S; ++si) {
    const auto& q = need[sources[si]];
    double total = 0;
    for (double x : q) total += x;
    for (node_index v = 0; v < N; ++v) {
      int r = static_cast<int>(rowlb.size());
      double rhs = 0;  // in - out
      if (v == sources[si]) rhs = -total;
      else if (v < D) rhs = q[v];
      rowlb.push_back(rhs);
      rowub.push_back(rhs);
      for (std::uint32_t l : net.in_links(v)) add(r, static_cast<int>(si * L + l), 1);
      for (std::uint32_t l : net.out_links(v)) add(r, static_cast<int>(si * L + l), -1);
    }
  }
  // Σ_s f[s,l] · chunk ≤ bw_l · T
  for (std::size_t l = 0; l < L; ++l) {
    int r = static_cast<int>(rowlb.size());
    rowlb.push_back(-COIN_DBL_MAX);
    rowub.push_back(0);
    for (std::size_t si = 0; si < S; ++si) add(r, static_cast<int>(si * L + l), d.chunk_bytes);
    add(r, tcol, -net.links()[l].bandwidth);
  }
  CoinPackedMatrix m(false, rows.data(), cols.data(), vals.data(), static_cast<CoinBigIndex>(vals.size()));
  m.setDimensions(static_cast<int>(rowlb.size()), static_cast<int>(collb.size()));
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(m, collb.data(), colub.data(), obj.data(), rowlb.data(), rowub.data());
  lp.dual();
  if (lp.status() != 0)
    throw error(errc::internal, "CLP did not solve the fluid LP (status " + std::to_string(lp.status()) + ")");
  const double* x = lp.primalColumnSolution();
  T = x[tcol];
  std::vector<std::vector<double>> flow(S, std::vector<double>(L, 0));
  for (std::size_t si = 0; si < S; ++si)
    for (std::size_t l = 0; l < L; ++l) flow[si][l] = std::max(0.0, x[si * L + l]);
  return flow;
}

/// A path (links) from source to one destination with its weight.
struct weighted_path {
  std::vector<std::uint32_t> links;
  double weight = 0;
};

/// Decomposes one source's flow into paths to each destination (largest bottleneck first).
std::map<device_index, std::vector<weighted_path>> decompose(const network& net, device_index s,
                                                             std::vector<double> flow,
                                                             const std::vector<double>& need) {
  std::map<device_index, std::vector<weighted_path>> out;
  const std::size_t N = net.node_count();
  std::vector<double> left = need;
  for (int guard = 0; guard < 100000; ++guard) {
    // Widest path (max bottleneck) from s to any destination with demand left, over positive flow.
    std::vector<double> width(N, 0);
    std::vector<std::uint32_t> via(N, UINT32_MAX);
    width[s] = 1e300;
    for (bool changed = true; changed;) {
      changed = false;
      for (std::uint32_t l = 0; l < net.links().size(); ++l) {
        const te_link& t = net.links()[l];
        double w = std::min(width[t.src], flow[l]);
        if (w > width[t.dst] + 1e-12 && t.dst != s) {
          width[t.dst] = w;
          via[t.dst] = l;
          changed = true;
        }
      }
    }
    device_index best = 0;
    double bw = 1e-7;
    for (device_index t = 0; t < net.device_count(); ++t)
      if (left[t] > 1e-7 && width[t] > bw) {
        bw = width[t];
        best = t;
      }
    if (bw <= 1e-7) break;
    double amount = std::min(bw, left[best]);
    weighted_path p;
    for (node_index v = best; v != s; v = net.links()[via[v]].src) p.links.push_back(via[v]);
    std::reverse(p.links.begin(), p.links.end());
    for (std::uint32_t l : p.links) flow[l] -= amount;
    left[best] -= amount;
    p.weight = amount;
    out[best].push_back(std::move(p));
  }
  return out;
}

}  // namespace

method_result plan_lp(const network& net, const demand& d, const plan_options&, const lower_bound&) {
  method_result r;
  try {
    const std::size_t D = net.device_count();
    std::vector<device_index> sources;
    double T = 0;
    auto flow = solve_fluid(net, d, sources, T);
    // Round: each (chunk, destination) takes one path of its (source, destination) pair, in
    // proportion to the path weights (largest remainder).
    struct item { std::size_t chunk; device_index dst; const weighted_path* path; std::size_t hops; };
    std::vector<item> items;
    std::vector<std::map<device_index, std::vector<weighted_path>>> paths(sources.size());
    for (std::size_t si = 0; si < sources.size(); ++si) {
      std::vector<double> need(D, 0);
      for (const chunk& c : d.chunks)
        if (c.source == sources[si])
          for (device_index t : c.destinations) need[t] += 1;
      paths[si] = decompose(net, sources[si], flow[si], need);
      std::map<device_index, std::vector<double>> used;  // per destination: units given to each path
      for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) {
        const chunk& c = d.chunks[ci];
        if (c.source != sources[si]) continue;
        for (device_index t : c.destinations) {
          auto it = paths[si].find(t);
          if (it == paths[si].end() || it->second.empty()) {
            items.push_back({ci, t, nullptr, 0});
            continue;
          }
          auto& u = used[t];
          u.resize(it->second.size(), 0);
          std::size_t pick = 0;
          double most = -1e300;
          for (std::size_t k = 0; k < it->second.size(); ++k) {
            double deficit = it->second[k].weight - u[k];
            if (deficit > most) {
              most = deficit;
              pick = k;
            }
          }
          u[pick] += 1;
          items.push_back({ci, t, &it->second[pick], it->second[pick].links.size()});
        }
      }
    }
    // Long paths first (they carry the critical hops), sources interleaved.
    std::stable_sort(items.begin(), items.end(), [](const item& a, const item& b) { return a.hops > b.hops; });
    slot_table slots(net);
    std::vector<std::int32_t> hold(d.chunks.size() * D, unreachable_epochs);
    for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) hold[ci * D + d.chunks[ci].source] = 0;
    std::vector<std::int32_t> h(D);
    for (const item& it : items) {
      std::copy_n(hold.begin() + static_cast<std::ptrdiff_t>(it.chunk * D), D, h.begin());
      std::vector<std::uint32_t> path = it.path ? it.path->links : device_path(net, d.chunks[it.chunk].source, it.dst);
      schedule_path(net, slots, d.chunks[it.chunk].id, path, 0, r.sends, &h);
      std::copy(h.begin(), h.end(), hold.begin() + static_cast<std::ptrdiff_t>(it.chunk * D));
    }
    r.note = "fluid LP time " + std::to_string(T) + " s; paths list-scheduled";
  } catch (const CoinError& e) {
    throw error(errc::internal, "CLP failed in " + e.className() + "::" + e.methodName() + ": " + e.message());
  }
  return r;
}

#endif

}  // namespace doppler::comm::detail
