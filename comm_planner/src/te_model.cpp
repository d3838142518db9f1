// The TE-CCL window MILP, built in memory (CoinPackedMatrix) and solved by CBC through Osi/Clp.
#include "te_model.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#ifdef DOPPLER_HAVE_COIN
#include <coin/CbcModel.hpp>
#include <coin/CoinError.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>
#endif

namespace doppler::comm::detail {

namespace {

/// Per (chunk, link): the local epochs [lo, hi] a send is possibly useful in; lo > hi when never.
struct send_range {
  std::vector<std::int32_t> lo, hi;
};

send_range prune(const network& net, const demand& d, const window_spec& w) {
  const std::size_t C = d.chunks.size(), D = net.device_count(), N = net.node_count(), L = net.links().size();
  send_range r;
  r.lo.assign(C * L, 1);
  r.hi.assign(C * L, 0);
  std::vector<std::int32_t> earliest(N);
  for (std::size_t c = 0; c < C; ++c) {
    bool any_pending = false;
    for (device_index t : d.chunks[c].destinations) any_pending = any_pending || w.pending[c * D + t];
    if (!any_pending) continue;
    std::fill(earliest.begin(), earliest.end(), unreachable_epochs);
    for (device_index h = 0; h < D; ++h) {
      std::int32_t from = w.held_from[c * D + h];
      if (from >= unreachable_epochs) continue;
      from = std::max(from, 0);
      for (node_index n = 0; n < N; ++n)
        earliest[n] = std::min(earliest[n], from + net.epochs_to_node(h, n));
    }
    for (std::size_t l = 0; l < L; ++l) {
      const te_link& t = net.links()[l];
      if (!net.is_switch(t.dst) && w.held_from[c * D + t.dst] <= 0) continue;  // already there
      std::int32_t lo = earliest[t.src], hi = w.epochs - 1;
      if (w.require_all) {
        std::int32_t rest = unreachable_epochs;
        for (device_index dst : d.chunks[c].destinations) {
          if (!w.pending[c * D + dst]) continue;
          std::int32_t x = net.is_switch(t.dst) ? net.epochs_from_node(t.dst, dst)
                                                : t.offset + net.epochs_from_node(t.dst, dst);
          rest = std::min(rest, x);
        }
        if (net.is_switch(t.dst)) rest = std::max(rest, 1);
        hi = std::min(hi, w.epochs - rest);
      }
      r.lo[c * L + l] = lo;
      r.hi[c * L + l] = hi;
    }
  }
  return r;
}

}  // namespace

window_spec initial_window(const network& net, const demand& d, std::int32_t epochs) {
  const std::size_t C = d.chunks.size(), D = net.device_count();
  window_spec w;
  w.epochs = epochs;
  w.held_from.assign(C * D, unreachable_epochs);
  w.pending.assign(C * D, 0);
  for (std::size_t c = 0; c < C; ++c) {
    w.held_from[c * D + d.chunks[c].source] = 0;
    for (device_index t : d.chunks[c].destinations) w.pending[c * D + t] = 1;
  }
  return w;
}

std::size_t count_binaries(const network& net, const demand& d, const window_spec& w) {
  send_range r = prune(net, d, w);
  std::size_t n = 0;
  for (std::size_t i = 0; i < r.lo.size(); ++i)
    if (r.hi[i] >= r.lo[i]) n += static_cast<std::size_t>(r.hi[i] - r.lo[i] + 1);
  return n;
}

#ifndef DOPPLER_HAVE_COIN
window_result solve_window(const network&, const demand&, const plan_options&, const window_spec&, double) {
  throw error(errc::bad_argument, "the MILP methods are not built: doppler was configured without COIN-OR (CBC/CLP)");
}
#else

window_result solve_window(const network& net, const demand& d, const plan_options& opt, const window_spec& w,
                           double seconds) {
  const std::size_t C = d.chunks.size(), D = net.device_count(), L = net.links().size();
  const std::int32_t K = w.epochs;
  const send_range range = prune(net, d, w);
  std::vector<double> collb, colub, obj, rowlb, rowub;
  std::vector<int> rows, cols;
  std::vector<double> vals;
  std::vector<int> integer_cols;
  // F columns, indexed by (chunk, link) then epoch.
  std::vector<int> f_first(C * L, -1);
  struct fcol { std::uint32_t c, l; std::int32_t k; };
  std::vector<fcol> fcols;
  const double kg = w.first_epoch + K + 1.0;
  const double eps = 1e-3 / (kg * kg);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t l = 0; l < L; ++l) {
      std::int32_t lo = range.lo[c * L + l], hi = range.hi[c * L + l];
      if (hi < lo) continue;
      f_first[c * L + l] = static_cast<int>(collb.size());
      for (std::int32_t k = lo; k <= hi; ++k) {
        integer_cols.push_back(static_cast<int>(collb.size()));
        fcols.push_back({static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(l), k});
        collb.push_back(0);
        colub.push_back(w.allowed && !(*w.allowed)[(c * L + l) * static_cast<std::size_t>(K) + static_cast<std::size_t>(k)] ? 0 : 1);
        obj.push_back(eps);
      }
    }
  auto F = [&](std::size_t c, std::size_t l, std::int32_t k) -> int {
    int first = f_first[c * L + l];
    if (first < 0 || k < range.lo[c * L + l] || k > range.hi[c * L + l]) return -1;
    return first + (k - range.lo[c * L + l]);
  };
  window_result res;
  res.binaries = fcols.size();
  // B columns for (chunk, device) pairs that may change: all others are constants.
  std::vector<int> b_first(C * D, -1);
  auto add_row = [&](double lo, double hi) {
    rowlb.push_back(lo);
    rowub.push_back(hi);
    return static_cast<int>(rowlb.size()) - 1;
  };
  auto put = [&](int row, int col, double v) {
    rows.push_back(row);
    cols.push_back(col);
    vals.push_back(v);
  };
  std::vector<double> dist_now(C * D, 0);
  // Job weights relative to the largest: the objective's scale stays that of weight 1 whatever the
  // file says (CLP asserts on coefficients of 1e25 and more: a weight of 1e30 aborted the process).
  double top_weight = 0;
  for (const job& j : d.jobs) top_weight = std::max(top_weight, j.weight);
  for (std::size_t c = 0; c < C; ++c) {
    const double weight = d.jobs.empty() ? 1.0 : d.jobs[d.chunks[c].job].weight / top_weight;
    for (device_index v = 0; v < D; ++v) {
      std::int32_t held = w.held_from[c * D + v];
      if (held <= 0) continue;
      bool has_in = false;
      for (std::uint32_t l : net.in_links(v)) has_in = has_in || f_first[c * L + l] >= 0;
      const bool pend = w.pending[c * D + v];
      if (!has_in && held > K) {
        if (pend && w.require_all) {
          res.state = window_result::status::infeasible;
          res.message = "chunk " + std::to_string(d.chunks[c].id) + " cannot reach " + net.topology()[v].id +
                        " within " + std::to_string(K) + " epochs";
          return res;
        }
        continue;
      }
      b_first[c * D + v] = static_cast<int>(collb.size());
      for (std::int32_t k = 0; k <= K; ++k) {
        double lb = k >= held ? 1.0 : 0.0, ub = (k >= held || k > 0) ? 1.0 : 0.0;
        if (k == K && pend && w.require_all) lb = 1.0;
        collb.push_back(lb);
        colub.push_back(ub);
        double o = 0;
        if (pend && k >= 1) o -= weight / (w.first_epoch + k + 1.0);
        obj.push_back(o);
      }
      // B[k] - B[k-1] - Σ arrivals = [held == k]
      for (std::int32_t k = 1; k <= K; ++k) {
        double rhs = held == k ? 1.0 : 0.0;
        int row = add_row(rhs, rhs);
        put(row, b_first[c * D + v] + k, 1.0);
        put(row, b_first[c * D + v] + k - 1, -1.0);
        for (std::uint32_t l : net.in_links(v)) {
          int f = F(c, l, k - net.links()[l].offset);
          if (f >= 0) put(row, f, -1.0);
        }
      }
    }
  }
  // Progress reward (rounds): holding a chunk closer to a pending destination than any holder now.
  if (!w.require_all) {
    for (std::size_t c = 0; c < C; ++c)
      for (device_index t : d.chunks[c].destinations) {
        if (!w.pending[c * D + t]) continue;
        std::int32_t now = unreachable_epochs;
        for (device_index h = 0; h < D; ++h)
          if (w.held_from[c * D + h] <= 0) now = std::min(now, net.epochs_between(h, t));
        for (device_index v = 0; v < D; ++v) {
          int b = b_first[c * D + v];
          if (b < 0 || v == t) continue;
          std::int32_t dv = net.epochs_between(v, t);
          if (dv >= now) continue;
          obj[static_cast<std::size_t>(b + K)] -= 0.5 / (kg + 1.0) * (now - dv) / (now + 1.0);
        }
      }
  }
  // Sends need the chunk: at devices F ≤ B; at switches out ≤ in (each out-link, or their sum).
  for (const fcol& f : fcols) {
    const te_link& t = net.links()[f.l];
    if (net.is_switch(t.src)) continue;
    int b = b_first[f.c * D + t.src];
    std::int32_t held = w.held_from[f.c * D + t.src];
    if (held <= f.k) continue;  // a constant 1
    int row = add_row(-COIN_DBL_MAX, 0);
    put(row, F(f.c, f.l, f.k), 1.0);
    if (b >= 0) put(row, b + f.k, -1.0);
  }
  for (node_index s = static_cast<node_index>(D); s < net.node_count(); ++s)
    for (std::size_t c = 0; c < C; ++c)
      for (std::int32_t k = 0; k < K; ++k) {
        std::vector<int> in, out;
        for (std::uint32_t l : net.in_links(s))
          if (int f = F(c, l, k); f >= 0) in.push_back(f);
        for (std::uint32_t l : net.out_links(s))
          if (int f = F(c, l, k); f >= 0) out.push_back(f);
        if (out.empty()) continue;
        if (opt.switch_copy) {
          for (int o : out) {
            int row = add_row(-COIN_DBL_MAX, 0);
            put(row, o, 1.0);
            for (int i : in) put(row, i, -1.0);
          }
        } else {
          int row = add_row(-COIN_DBL_MAX, 0);
          for (int o : out) put(row, o, 1.0);
          for (int i : in) put(row, i, -1.0);
        }
      }
  // Capacity per window of β+1 epochs.
  for (std::size_t l = 0; l < L; ++l) {
    const te_link& t = net.links()[l];
    // Every window holding a send of this model, less what fixed/earlier sends already use of it.
    for (std::int32_t k = 0; k < K + t.window - 1; ++k) {
      double room = t.cap;
      if (w.prior)
        for (std::int32_t j = k - t.window + 1; j <= k; ++j)
          room -= w.prior->count(static_cast<std::uint32_t>(l), w.first_epoch + j);
      int row = -1;
      for (std::size_t c = 0; c < C; ++c)
        for (std::int32_t j = std::max(0, k - t.window + 1); j <= std::min(k, K - 1); ++j)
          if (int f = F(c, l, j); f >= 0) {
            if (row < 0) row = add_row(-COIN_DBL_MAX, std::max(0.0, room));
            put(row, f, 1.0);
          }
    }
  }
  res.rows = rowlb.size();
  if (fcols.empty()) {
    bool met = true;
    for (std::size_t i = 0; i < w.pending.size(); ++i) met = met && (!w.pending[i] || w.held_from[i] <= K);
    res.state = met || !w.require_all ? window_result::status::solved : window_result::status::infeasible;
    res.proved_optimal = true;
    return res;
  }
  try {
    CoinPackedMatrix m(false, rows.data(), cols.data(), vals.data(), static_cast<CoinBigIndex>(vals.size()));
    m.setDimensions(static_cast<int>(rowlb.size()), static_cast<int>(collb.size()));
    OsiClpSolverInterface solver;
    solver.messageHandler()->setLogLevel(0);
    solver.loadProblem(m, collb.data(), colub.data(), obj.data(), rowlb.data(), rowub.data());
    solver.setInteger(integer_cols.data(), static_cast<int>(integer_cols.size()));
    std::vector<std::string> names;
    std::vector<double> start;
    if (w.hint) {
      // MIP start: the hinted sends as F = 1 and the holdings they imply.
      std::unordered_map<std::uint32_t, std::size_t> index;
      for (std::size_t c = 0; c < C; ++c) index.emplace(d.chunks[c].id, c);
      start.assign(collb.size(), 0.0);
      std::vector<std::int32_t> hold(w.held_from);
      for (const send& x : *w.hint) {
        auto l = net.find_link(x.src, x.dst);
        auto ci = index.find(x.chunk);
        if (!l || ci == index.end()) continue;
        int f = F(ci->second, *l, x.epoch - w.first_epoch);
        if (f >= 0) start[static_cast<std::size_t>(f)] = 1.0;
        if (!net.is_switch(x.dst)) {
          auto& h = hold[ci->second * D + x.dst];
          h = std::min(h, x.epoch - w.first_epoch + net.links()[*l].offset);
        }
      }
      for (std::size_t c = 0; c < C; ++c)
        for (device_index v = 0; v < D; ++v)
          if (int b = b_first[c * D + v]; b >= 0)
            for (std::int32_t k = 0; k <= K; ++k) start[static_cast<std::size_t>(b + k)] = hold[c * D + v] <= k ? 1.0 : 0.0;
      names.reserve(collb.size());
      for (std::size_t i = 0; i < collb.size(); ++i) {
        names.push_back("x" + std::to_string(i));
        solver.setColName(static_cast<int>(i), names.back());
      }
    }
    CbcModel model(solver);
    if (w.hint) {
      std::vector<const char*> cn;
      for (const auto& n : names) cn.push_back(n.c_str());
      model.setMIPStart(static_cast<int>(cn.size()), cn.data(), start.data());
    }
    model.setLogLevel(0);
    model.messageHandler()->setLogLevel(0);
    CbcMain0(model);
    std::string sec = std::to_string(std::max(0.5, seconds));
    // Wall-clock seconds (CBC counts CPU time by default; these cores are shared).
    std::vector<const char*> argv = {"doppler", "-log", "0", "-timeMode", "elapsed", "-sec", sec.c_str()};
    if (opt.first_feasible) {
      argv.push_back("-maxSolutions");
      argv.push_back("1");
    }
    argv.push_back("-solve");
    argv.push_back("-quit");
    CbcMain1(static_cast<int>(argv.size()), argv.data(), model);
    const double* x = model.bestSolution();
    if (model.isProvenInfeasible()) {
      res.state = window_result::status::infeasible;
      return res;
    }
    if (!x) {
      res.state = window_result::status::no_solution;
      res.message = "no solution within " + sec + " s";
      return res;
    }
    res.state = window_result::status::solved;
    res.proved_optimal = model.isProvenOptimal();
    for (std::size_t i = 0; i < fcols.size(); ++i)
      if (x[F(fcols[i].c, fcols[i].l, fcols[i].k)] > 0.5) {
        const te_link& t = net.links()[fcols[i].l];
        res.sends.push_back({d.chunks[fcols[i].c].id, t.src, t.dst, w.first_epoch + fcols[i].k});
      }
  } catch (const CoinError& e) {
    throw error(errc::internal, "CBC failed in " + e.className() + "::" + e.methodName() + ": " + e.message());
  }
  return res;
}

#endif

}  // namespace doppler::comm::detail
