// m-ETF, Baechi's memory-aware earliest task first (Jeon et al., SoCC'20; docs/placers.md, "m-etf").
//
// Per step: over every ready op v and every device d whose memory still holds v's output (device
// memory use = sum of the output bytes of the ops placed there), EST(v, d) = max(avail[d],
// data_ready(v, d)) with data_ready(v, d) = max over producers u of end[u] + transfer(dev[u], d,
// bytes[u]); place the pair of smallest EST (ties: larger bottom level, then lower op index, then
// lower device index), end[v] = EST + op_time(v, d), avail[d] = end[v]. data_ready is computed once,
// when v becomes ready, so a step costs O(|ready| · q).

#include "placer_common.hpp"

#include <doppler/runtime/error.hpp>

#include <limits>

namespace doppler::detail {

namespace {

class metf_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "m-etf"; }

  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    const auto n = static_cast<op_index>(g.size());
    const auto n_dev = static_cast<device_index>(c.device_count());
    memory_tracker mem(g, c, opt.respect_memory);
    mem.check_total(name());
    transfer_table tt(c);
    auto bl = default_bottom_levels(g, c, cm);

    placement p;
    p.device.assign(n, 0);
    p.order.reserve(n);
    p.method = name();
    std::vector<double> end(n, 0.0), avail(n_dev, 0.0);
    std::vector<double> data_ready(static_cast<std::size_t>(n) * n_dev, 0.0);
    std::vector<std::uint32_t> missing(n);
    std::vector<op_index> ready;

    auto make_ready = [&](op_index v) {
      double* r = &data_ready[static_cast<std::size_t>(v) * n_dev];
      for (device_index d = 0; d < n_dev; ++d) {
        double t = 0;
        for (op_index u : g.preds(v)) {
          device_index du = p.device[u];
          double arrive = du == d ? end[u] : end[u] + tt.time(du, d, g[u].bytes);
          if (arrive > t) t = arrive;
        }
        r[d] = t;
      }
      ready.push_back(v);
    };
    for (op_index v = 0; v < n; ++v) {
      missing[v] = static_cast<std::uint32_t>(g.preds(v).size());
      if (missing[v] == 0) make_ready(v);
    }

    while (!ready.empty()) {
      constexpr double inf = std::numeric_limits<double>::infinity();
      double best_est = inf;
      std::size_t best_slot = 0;
      device_index best_dev = 0;
      for (std::size_t i = 0; i < ready.size(); ++i) {
        op_index v = ready[i];
        const double* r = &data_ready[static_cast<std::size_t>(v) * n_dev];
        for (device_index d = 0; d < n_dev; ++d) {
          if (!mem.fits(d, v)) continue;
          double est = avail[d] > r[d] ? avail[d] : r[d];
          bool better = est < best_est;
          if (!better && est == best_est) {
            op_index w = ready[best_slot];
            better = bl[v] > bl[w] || (bl[v] == bl[w] && (v < w || (v == w && d < best_dev)));
          }
          if (better) {
            best_est = est;
            best_slot = i;
            best_dev = d;
          }
        }
      }
      if (best_est == inf) {
        // Some ready op fits nowhere: report the first of them.
        for (op_index v : ready) {
          bool any = false;
          for (device_index d = 0; d < n_dev && !any; ++d) any = mem.fits(d, v);
          if (!any) mem.fail(v, name());
        }
        throw error(errc::internal, "", "", "m-etf: no placeable pair but every ready op fits somewhere");
      }
      op_index v = ready[best_slot];
      ready[best_slot] = ready.back();
      ready.pop_back();
      p.device[v] = best_dev;
      p.order.push_back(v);
      mem.add(best_dev, v);
      end[v] = best_est + cm.op_time(g[v], c[best_dev]);
      avail[best_dev] = end[v];
      for (op_index s : g.succs(v))
        if (--missing[s] == 0) make_ready(s);
    }
    return p;
  }
};

}  // namespace

std::unique_ptr<placer> make_metf_placer() { return std::make_unique<metf_placer>(); }

}  // namespace doppler::detail
