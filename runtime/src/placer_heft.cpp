// HEFT (Topcuoglu, Hariri, Wu 2002), append policy (docs/placers.md, "heft").
//
// rank_u(v) = w̄(v) + max over consumers s of (c̄(v) + rank_u(s)), with w̄ the op's mean time over the
// devices and c̄ the mean uncontended transfer time of its output over ordered pairs of distinct
// devices. Ops are taken in decreasing rank (ties: earlier in the graph's topological order, which
// keeps the order topological since rank_u(u) ≥ rank_u(v) along every edge u → v). Each goes to the
// device of earliest finish time EFT = EST + op_time(v, d), EST = max(avail[d], max over producers of
// end + transfer), without insertion into idle gaps; ties go to the lower device index. O(e·q).
// With a transfer planner (`opt.sim.transfers`) "end + transfer" is the planned-aware arrival of
// placer_arrivals.hpp.

#include "placer_arrivals.hpp"

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>

#include <algorithm>
#include <limits>

namespace doppler::detail {

namespace {

class heft_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "heft"; }

  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    const auto n = static_cast<op_index>(g.size());
    const auto n_dev = static_cast<device_index>(c.device_count());
    memory_tracker mem(g, c, opt.respect_memory);
    mem.check_total(name());
    arrival_estimator arrivals(g, c, opt.sim.transfers.get());

    // Mean op time: flops / (flops_d · eff) averaged over d = flops / eff · mean(1 / flops_d).
    auto pc = critical_path_costs(g, c, cm);  // edge = mean transfer time
    std::vector<double> mean_time(n, 0.0);
    for (op_index v = 0; v < n; ++v) {
      double s = 0;
      for (device_index d = 0; d < n_dev; ++d) s += cm.op_time(g[v], c[d]);
      mean_time[v] = s / n_dev;
    }
    auto rank = bottom_levels(g, mean_time, pc.edge);
    check_finite_levels(g, c, rank);

    std::vector<std::uint32_t> topo_pos(n);
    auto topo = g.topo_order();
    for (std::uint32_t i = 0; i < topo.size(); ++i) topo_pos[topo[i]] = i;
    placement p;
    p.order.assign(topo.begin(), topo.end());
    std::sort(p.order.begin(), p.order.end(), [&](op_index a, op_index b) {
      return rank[a] != rank[b] ? rank[a] > rank[b] : topo_pos[a] < topo_pos[b];
    });

    p.device.assign(n, 0);
    p.method = name();
    std::vector<double> end(n, 0.0), avail(n_dev, 0.0);
    for (op_index v : p.order) {
      double best_eft = std::numeric_limits<double>::infinity();
      device_index best = 0;
      bool found = false;
      for (device_index d = 0; d < n_dev; ++d) {
        if (!mem.fits(d, v)) continue;
        double est = avail[d];
        for (op_index u : g.preds(v)) {
          double ready = arrivals.arrival(u, p.device[u], end[u], d);
          if (ready > est) est = ready;
        }
        double eft = est + cm.op_time(g[v], c[d]);
        if (eft < best_eft) {
          best_eft = eft;
          best = d;
          found = true;
        }
      }
      if (!found) mem.fail(v, name());
      p.device[v] = best;
      mem.add(best, v);
      for (op_index u : g.preds(v)) arrivals.commit(u, p.device[u], best);
      end[v] = best_eft;
      avail[best] = best_eft;
    }
    return p;
  }
};

}  // namespace

std::unique_ptr<placer> make_heft_placer() { return std::make_unique<heft_placer>(); }

}  // namespace doppler::detail
