// Lower bounds: cuts (exact ≤ 16 nodes, heuristic above), latency, and their epoch forms.
#include <doppler/comm/bounds.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace doppler::comm {

namespace {

/// Evaluates node sets against the demand and the network.
class cut_evaluator {
 public:
  cut_evaluator(const network& net, const demand& d) : net_(net), d_(d) {}
  /// Re-planning: from epoch t0, with `hold` (C × D: epoch a device holds or will hold the chunk
  /// through sends already made; unreachable_epochs if not) instead of the sources.
  cut_evaluator(const network& net, const demand& d, std::int32_t t0, const std::vector<std::int32_t>* hold)
      : net_(net), d_(d), t0_(t0), hold_(hold) {}

  /// Chunks that start in S and are needed outside S (re-planning: every holder in S, a
  /// destination that is not a holder outside).
  std::size_t crossing(const std::vector<char>& in) const {
    std::size_t n = 0;
    if (hold_) {
      const std::size_t D = net_.device_count();
      for (std::size_t c = 0; c < d_.chunks.size(); ++c) {
        const std::int32_t* h = hold_->data() + c * D;
        bool inside = true;
        for (std::size_t v = 0; v < D && inside; ++v) inside = h[v] >= unreachable_epochs || in[v];
        if (!inside) continue;
        for (device_index t : d_.chunks[c].destinations)
          if (!in[t] && h[t] >= unreachable_epochs) {
            ++n;
            break;
          }
      }
      return n;
    }
    for (const chunk& c : d_.chunks) {
      if (!in[c.source]) continue;
      for (device_index t : c.destinations)
        if (!in[t]) {
          ++n;
          break;
        }
    }
    return n;
  }
  double bandwidth_out(const std::vector<char>& in) const {
    double bw = 0;
    for (const te_link& l : net_.links())
      if (in[l.src] && !in[l.dst]) bw += l.bandwidth;
    return bw;
  }
  double seconds(const std::vector<char>& in) const {
    std::size_t n = crossing(in);
    if (n == 0) return 0;
    double bw = bandwidth_out(in);
    if (bw <= 0) return std::numeric_limits<double>::infinity();
    return static_cast<double>(n) * d_.chunk_bytes / bw;
  }
  /// Fewest epochs K in which the links leaving S can carry every crossing chunk, each send
  /// arriving (at the earliest a device behind the link could hold it) by K. `used` (per link,
  /// prefix counts of fixed sends by start epoch; may be null): capacity those sends take.
  std::int32_t epochs(const std::vector<char>& in, const std::vector<std::vector<std::int32_t>>* used = nullptr) const {
    std::size_t n = crossing(in);
    if (n == 0) return 0;
    std::vector<const te_link*> cut;
    std::vector<std::int32_t> first_hold;
    for (const te_link& l : net_.links())
      if (in[l.src] && !in[l.dst]) {
        cut.push_back(&l);
        std::int32_t o = l.offset;
        if (net_.is_switch(l.dst)) {
          o = std::numeric_limits<std::int32_t>::max();
          for (std::uint32_t k : net_.out_links(l.dst)) o = std::min(o, net_.links()[k].offset);
        }
        first_hold.push_back(std::max<std::int32_t>(1, o));
      }
    if (cut.empty()) return unreachable_epochs;
    for (std::int32_t K = t0_ + 1;; ++K) {
      std::size_t carry = 0;
      for (std::size_t i = 0; i < cut.size(); ++i) {
        std::int32_t slots = K - t0_ - first_hold[i] + 1;  // send epochs t0..K-offset
        if (slots <= 0) continue;
        // Sends starting in epochs t0..t0+slots-1 fit in ⌈slots/window⌉ windows; fixed ones take room.
        std::int64_t room = static_cast<std::int64_t>(cut[i]->cap) * ((slots + cut[i]->window - 1) / cut[i]->window);
        if (used) {
          const auto& u = (*used)[static_cast<std::size_t>(cut[i] - net_.links().data())];
          auto at = [&](std::int32_t k) {
            return u[static_cast<std::size_t>(std::min<std::int32_t>(k, static_cast<std::int32_t>(u.size()) - 1))];
          };
          if (!u.empty()) room -= at(t0_ + slots) - at(t0_);
        }
        carry += static_cast<std::size_t>(std::max<std::int64_t>(0, room));
      }
      if (carry >= n) return K;
      if (K > t0_ + (1 << 24)) return K;
    }
  }
  std::string describe(const std::vector<char>& in) const {
    std::string s = "{";
    for (node_index v = 0; v < in.size(); ++v)
      if (in[v]) s += (s.size() > 1 ? "," : "") + net_.topology().node_id(v);
    return s + "}";
  }

 private:
  const network& net_;
  const demand& d_;
  std::int32_t t0_ = 0;
  const std::vector<std::int32_t>* hold_ = nullptr;
};

/// Fixed sends per link as prefix counts by start epoch: used[l][k] = sends starting before k.
std::vector<std::vector<std::int32_t>> usage_prefix(const network& net, const std::vector<send>& fixed) {
  std::vector<std::vector<std::int32_t>> used(net.links().size());
  std::int32_t last = 0;
  for (const send& x : fixed) last = std::max(last, x.epoch + 1);
  for (const send& x : fixed) {
    auto l = net.find_link(x.src, x.dst);
    if (!l || x.epoch < 0) continue;
    auto& u = used[*l];
    if (u.empty()) u.assign(static_cast<std::size_t>(last) + 1, 0);
    ++u[static_cast<std::size_t>(x.epoch) + 1];
  }
  for (auto& u : used)
    for (std::size_t k = 1; k < u.size(); ++k) u[k] += u[k - 1];
  return used;
}

/// The cuts with the most seconds seen so far (the best few are also turned into epoch bounds).
struct top_cuts {
  static constexpr std::size_t keep = 24;
  const cut_evaluator& ev;
  std::multimap<double, std::vector<char>, std::greater<>> by_seconds;

  void consider(const std::vector<char>& in) {
    double t = ev.seconds(in);
    if (t <= 0) return;
    if (by_seconds.size() < keep || t > by_seconds.rbegin()->first) {
      by_seconds.emplace(t, in);
      if (by_seconds.size() > keep) by_seconds.erase(std::prev(by_seconds.end()));
    }
  }
  /// Every proper non-empty subset of the N (≤ 16) nodes.
  void enumerate(std::size_t N) {
    std::vector<char> in(N, 0);
    for (std::uint32_t mask = 1; mask + 1 < (1u << N); ++mask) {
      for (std::size_t v = 0; v < N; ++v) in[v] = static_cast<char>((mask >> v) & 1u);
      consider(in);
    }
  }
};

}  // namespace

lower_bound compute_lower_bound(const network& net, const demand& d) {
  lower_bound b;
  const cluster& c = net.topology();
  const std::size_t N = net.node_count();
  cut_evaluator ev(net, d);
  top_cuts top{ev, {}};
  auto consider = [&](const std::vector<char>& in) { top.consider(in); };
  const auto& best = top.by_seconds;
  if (N <= 16) {
    b.exact_cuts = true;
    top.enumerate(N);
  } else {
    std::vector<std::vector<char>> seeds;
    for (node_index v = 0; v < c.device_count(); ++v) {
      std::vector<char> s(N, 0);
      s[v] = 1;
      seeds.push_back(s);
      for (auto& x : s) x = !x;
      seeds.push_back(s);
    }
    std::map<std::string, std::vector<char>> hosts;
    for (node_index v = 0; v < c.device_count(); ++v) {
      auto& s = hosts[c[v].host];
      s.resize(N, 0);
      s[v] = 1;
    }
    // A host's switches join it when every device they touch is on that host (its NVSwitch).
    for (auto& [h, s] : hosts)
      for (node_index sw = static_cast<node_index>(c.device_count()); sw < N; ++sw) {
        bool own = true, any = false;
        for (std::uint32_t l : net.out_links(sw)) {
          node_index x = net.links()[l].dst;
          if (x < c.device_count()) {
            any = true;
            own = own && s[x];
          } else {
            own = false;
          }
        }
        if (own && any) s[sw] = 1;
      }
    if (hosts.size() > 1)
      for (auto& [h, s] : hosts) {
        seeds.push_back(s);
        std::vector<char> t = s;
        for (auto& x : t) x = !x;
        seeds.push_back(t);
      }
    const bool local_search = N <= 200 && d.chunks.size() * c.device_count() <= 200000;
    for (auto& s : seeds) {
      consider(s);
      if (!local_search) continue;
      double cur = ev.seconds(s);
      for (bool improved = true; improved;) {
        improved = false;
        for (node_index v = 0; v < N; ++v) {
          s[v] = !s[v];
          double t = ev.seconds(s);
          if (t > cur * (1 + 1e-12) && std::isfinite(t)) {
            cur = t;
            improved = true;
            consider(s);
          } else {
            s[v] = !s[v];
          }
        }
      }
    }
  }
  if (!best.empty()) {
    b.cut_seconds = best.begin()->first;
    b.cut = ev.describe(best.begin()->second);
    for (auto& [t, s] : best) b.epochs = std::max(b.epochs, ev.epochs(s));
  }
  // Latency in the epoch model: the fewest epochs any (chunk, destination) needs, times τ (the model
  // drops α below a tenth of an epoch, so this is the bound its transfer times are measured against).
  std::int32_t farthest = 0;
  for (const chunk& ch : d.chunks)
    for (device_index t : ch.destinations) farthest = std::max(farthest, net.epochs_between(ch.source, t));
  b.epochs = std::max(b.epochs, farthest);
  b.latency_seconds = farthest * net.tau();
  b.seconds = std::max(b.cut_seconds, b.latency_seconds);
  return b;
}

lower_bound compute_lower_bound(const network& net, const demand& d, const std::vector<send>* fixed) {
  lower_bound b = compute_lower_bound(net, d);
  if (!fixed || fixed->empty()) return b;
  const std::vector<std::vector<std::int32_t>> used = usage_prefix(net, *fixed);
  cut_evaluator ev(net, d);
  const std::size_t N = net.node_count();
  std::int32_t best = 0;
  std::vector<char> best_cut;
  auto consider = [&](const std::vector<char>& in) {
    std::int32_t k = ev.epochs(in, &used);
    if (k > best && k < unreachable_epochs) {
      best = k;
      best_cut = in;
    }
  };
  // Every device's out-cut {v} and in-cut (all but v); on small clusters every subset.
  for (node_index v = 0; v < net.device_count(); ++v) {
    std::vector<char> in(N, 0);
    in[v] = 1;
    consider(in);
    for (auto& x : in) x = !x;
    consider(in);
  }
  if (N <= 12)  // every subset (each epoch bound walks K; beyond 12 nodes too slow for a plan call)
    for (std::uint32_t mask = 1; mask + 1 < (1u << N); ++mask) {
      std::vector<char> in(N, 0);
      for (std::size_t v = 0; v < N; ++v) in[v] = static_cast<char>((mask >> v) & 1u);
      if (ev.seconds(in) > 0) consider(in);
    }
  if (best > b.epochs) {
    b.epochs = best;
    b.fixed_aware = true;
    b.cut = ev.describe(best_cut) + " around the fixed sends";
    b.seconds = std::max(b.seconds, best * net.tau());
    b.cut_seconds = std::max(b.cut_seconds, best * net.tau());
  }
  return b;
}

lower_bound compute_lower_bound_from(const network& net, const demand& d, std::int32_t t0,
                                     const std::vector<send>& history, const std::vector<send>* fixed, bool exact) {
  if (exact && t0 <= 0 && history.empty()) return compute_lower_bound(net, d, fixed);
  const std::size_t C = d.chunks.size(), D = net.device_count(), N = net.node_count();
  // Holdings at t0: sources, and every history send into a device (arrivals after t0 count as held:
  // a relaxation, so the bound stays valid).
  std::map<std::uint32_t, std::size_t> index;
  for (std::size_t c = 0; c < C; ++c) index.emplace(d.chunks[c].id, c);
  std::vector<std::int32_t> hold(C * D, unreachable_epochs);
  for (std::size_t c = 0; c < C; ++c) hold[c * D + d.chunks[c].source] = 0;
  std::int32_t arrived = 0;  // the schedule covers every history arrival
  for (const send& x : history) {
    auto l = net.find_link(x.src, x.dst);
    auto it = index.find(x.chunk);
    if (!l || it == index.end() || net.is_switch(x.dst)) continue;
    const std::int32_t a = x.epoch + net.links()[*l].offset;
    arrived = std::max(arrived, a);
    auto& h = hold[it->second * D + x.dst];
    h = std::min(h, a);
  }
  lower_bound b;
  // Latency: each pending (chunk, destination) from its nearest holder, no earlier than t0.
  std::int32_t latency = std::max(arrived, t0);
  for (std::size_t c = 0; c < C; ++c)
    for (device_index t : d.chunks[c].destinations) {
      if (hold[c * D + t] < unreachable_epochs) continue;
      std::int32_t best = unreachable_epochs;
      for (device_index h = 0; h < D; ++h)
        if (hold[c * D + h] < unreachable_epochs)
          best = std::min(best, std::max(t0, hold[c * D + h]) + net.epochs_between(h, t));
      latency = std::max(latency, best);
    }
  b.epochs = latency;
  b.latency_seconds = latency * net.tau();
  // Cuts: the remaining crossings through the capacity left from t0 on (other fixed sends take theirs).
  std::vector<std::vector<std::int32_t>> used;
  if (fixed && !fixed->empty()) used = usage_prefix(net, *fixed);
  cut_evaluator ev(net, d, t0, &hold);
  top_cuts top{ev, {}};
  auto consider = [&](const std::vector<char>& in) { top.consider(in); };
  const auto& best = top.by_seconds;
  std::vector<char> in(N, 0);
  if (exact && N <= 16) {
    b.exact_cuts = true;
    top.enumerate(N);
  } else {
    for (node_index v = 0; v < D; ++v) {
      std::fill(in.begin(), in.end(), 0);
      in[v] = 1;
      consider(in);
      for (auto& x : in) x = !x;
      consider(in);
    }
  }
  std::vector<char> binding;
  for (auto& [t, s] : best) {
    const std::int32_t k = ev.epochs(s, used.empty() ? nullptr : &used);
    if (k < unreachable_epochs && k > b.epochs) {
      b.epochs = k;
      binding = s;
    }
  }
  if (!best.empty()) b.cut_seconds = t0 * net.tau() + best.begin()->first;
  b.seconds = std::max({b.cut_seconds, b.latency_seconds, b.epochs * net.tau()});
  b.fixed_aware = true;
  b.cut = (binding.empty() ? std::string("latency") : ev.describe(binding)) + " from the state at epoch " +
          std::to_string(t0);
  return b;
}

}  // namespace doppler::comm
