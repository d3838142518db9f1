// METIS k-way partition placer (docs/placers.md, "metis").
//
// The op graph as an undirected graph (edge {u, v} for every producer u → consumer v); vertex weight
// 1 + round(1000 · flops / max flops), edge weight 1 + round(1000 · bytes(u) / max bytes), both
// integers; k = device count; target part weights proportional to device FLOP/s;
// METIS_PartGraphKway with METIS_OPTION_SEED = seed (truncated to int), its stdout chatter sent to
// /dev/null. No more ops than devices: no METIS, one op per device, heaviest op on the fastest. Memory: when a part's output
// bytes exceed its device's memory, the overflowing ops (in topological order) move to the device
// with the most free memory; errc::infeasible when none has room. Order: bottom-level priority.

#include "placer_common.hpp"

#include <doppler/runtime/error.hpp>

#include <metis.h>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>

namespace doppler::detail {

namespace {

class metis_placer final : public placer {
 public:
  std::string_view name() const noexcept override { return "metis"; }

  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    const auto n = static_cast<op_index>(g.size());
    const auto n_dev = static_cast<device_index>(c.device_count());
    memory_tracker mem(g, c, opt.respect_memory);
    mem.check_total(name());
    placement p;
    p.device.assign(n, 0);
    p.method = name();
    if (n > 0 && n <= n_dev) spread(g, c, p.device);
    else if (n > 0 && n_dev > 1) partition(g, c, opt.seed, p.device);
    if (mem.enabled()) repair_memory(g, c, mem, p.device);
    p.order = priority_topo_order(g, default_bottom_levels(g, c, cm));
    return p;
  }

 private:
  /// No more ops than devices: METIS would have to make empty parts (and says so on stdout), and the
  /// balanced partition is one op per device anyway: heaviest op on the fastest device, and so on.
  static void spread(const graph& g, const cluster& c, std::vector<device_index>& out) {
    std::vector<op_index> ops(g.size());
    std::vector<device_index> devs(c.device_count());
    for (op_index v = 0; v < ops.size(); ++v) ops[v] = v;
    for (device_index d = 0; d < devs.size(); ++d) devs[d] = d;
    std::stable_sort(ops.begin(), ops.end(), [&](op_index a, op_index b) { return g[a].flops > g[b].flops; });
    std::stable_sort(devs.begin(), devs.end(), [&](device_index a, device_index b) { return c[a].flops > c[b].flops; });
    for (std::size_t i = 0; i < ops.size(); ++i) out[ops[i]] = devs[i];
  }

  /// Runs `f` with file descriptor 1 on /dev/null: METIS prints some complaints ("Cannot bisect a
  /// graph with 0 vertices", when a lumpy graph leaves a small part empty) with printf, which would
  /// corrupt a command's JSON on stdout. The partition it returns is still valid.
  template <class F>
  static int quietly(F&& f) {
    static std::mutex m;
    std::lock_guard lock(m);
    std::fflush(stdout);
    int saved = ::dup(1);
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    bool redirected = saved >= 0 && null >= 0 && ::dup2(null, 1) >= 0;
    int rc = f();
    if (redirected) {
      std::fflush(stdout);
      ::dup2(saved, 1);
    }
    if (null >= 0) ::close(null);
    if (saved >= 0) ::close(saved);
    return rc;
  }

  static void partition(const graph& g, const cluster& c, std::uint64_t seed, std::vector<device_index>& out) {
    const auto n = static_cast<op_index>(g.size());
    double max_flops = 0, max_bytes = 0;
    for (op_index v = 0; v < n; ++v) {
      max_flops = std::max(max_flops, g[v].flops);
      max_bytes = std::max(max_bytes, g[v].bytes);
    }
    auto scaled = [](double x, double max) -> idx_t {
      return 1 + static_cast<idx_t>(max > 0 ? std::llround(1000.0 * x / max) : 0);
    };
    std::vector<idx_t> xadj(n + 1, 0), adjncy, adjwgt, vwgt(n);
    adjncy.reserve(2 * g.edge_count());
    adjwgt.reserve(2 * g.edge_count());
    for (op_index v = 0; v < n; ++v) {
      vwgt[v] = scaled(g[v].flops, max_flops);
      for (op_index u : g.preds(v)) {
        adjncy.push_back(static_cast<idx_t>(u));
        adjwgt.push_back(scaled(g[u].bytes, max_bytes));
      }
      for (op_index s : g.succs(v)) {
        adjncy.push_back(static_cast<idx_t>(s));
        adjwgt.push_back(scaled(g[v].bytes, max_bytes));
      }
      xadj[v + 1] = static_cast<idx_t>(adjncy.size());
    }
    idx_t nvtxs = static_cast<idx_t>(n), ncon = 1, nparts = static_cast<idx_t>(c.device_count()), objval = 0;
    std::vector<real_t> tpwgts(c.device_count());
    double total = c.total_flops();
    for (device_index d = 0; d < c.device_count(); ++d) tpwgts[d] = static_cast<real_t>(c[d].flops / total);
    // METIS requires the targets to sum to 1 within its tolerance: put the rounding error on part 0.
    real_t sum = 0;
    for (real_t t : tpwgts) sum += t;
    tpwgts[0] += 1.0f - sum;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
    options[METIS_OPTION_NUMBERING] = 0;
    std::vector<idx_t> part(n, 0);
    int rc = quietly([&] {
      return METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                                 adjwgt.empty() ? nullptr : adjwgt.data(), &nparts, tpwgts.data(), nullptr, options,
                                 &objval, part.data());
    });
    if (rc != METIS_OK)
      throw error(errc::internal, "", "", fmt::format("metis: METIS_PartGraphKway failed with code {} on graph '{}'",
                                                      rc, g.name()));
    for (op_index v = 0; v < n; ++v) out[v] = static_cast<device_index>(part[v]);
  }

  static void repair_memory(const graph& g, const cluster& c, memory_tracker& mem, std::vector<device_index>& dev) {
    for (op_index v : g.topo_order()) {
      device_index d = dev[v];
      if (!mem.fits(d, v)) {
        device_index roomiest = 0;
        double free_max = -1;
        for (device_index e = 0; e < c.device_count(); ++e) {
          double f = mem.capacity(e) - mem.used(e);
          if (f > free_max) {
            free_max = f;
            roomiest = e;
          }
        }
        if (!mem.fits(roomiest, v)) mem.fail(v, "metis");
        d = roomiest;
        dev[v] = d;
      }
      mem.add(d, v);
    }
  }
};

}  // namespace

std::unique_ptr<placer> make_metis_placer() { return std::make_unique<metis_placer>(); }

}  // namespace doppler::detail
