// `doppler calibrate`: measure this host's kernel throughput per op kind (FLOP/s for compute-bound
// kinds, output bytes/s for memory-bound ones), the actor runtime's per-op dispatch overhead,
// transfer latency and copy bandwidth, and how many cores the devices really get, and write the cost
// table (doppler-costs/1) plus the matching `cpu:N:flops=…:bw=…:lat=…` cluster spec for this host.

#include "commands.hpp"
#include "run_setup.hpp"

#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <tuple>

namespace doppler::cli {

namespace {

struct calibrate_flags {
  std::string cluster_spec = "cpu:4", out = "cost.json", cluster_out;
  std::vector<std::string> graphs;  // time kernels on these; default: the default workloads
  int rounds = 3;
  bool flops_only = false;  // the table of before the memory term (efficiencies only)
  std::vector<std::string> workers;  // HOST:PORT: measure the links between processes too
  std::string token;
  double busy_wait = 60;  // --workers: seconds a run waits its turn (--busy-wait)
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs.empty() ? 0.0 : xs[xs.size() / 2];
}

/// Per-op kernel samples of one kind: FLOPs, output bytes and seconds of each timed op.
struct kind_samples {
  std::vector<double> flops, bytes, seconds;
  double sum(const std::vector<double>& xs) const {
    double s = 0;
    for (double x : xs) s += x;
    return s;
  }
};

/// Times every op of the graphs (one thread, reference runs after a warm-up), per kind; an op's time
/// is its fastest of `rounds` runs (on a shared host other users' load only ever adds time).
std::array<kind_samples, op_kind_count> kernel_samples(const std::vector<graph>& graphs, int rounds) {
  std::array<kind_samples, op_kind_count> out;
  for (const graph& g : graphs) {
    execute_reference(g, reference_options{}.exits_only());  // warm-up
    std::vector<double> best(g.size(), INFINITY);
    for (int r = 0; r < rounds; ++r) {
      kernel_timer t(g.size());
      execute_reference(g, reference_options{}.exits_only().timed(t));
      for (op_index i = 0; i < g.size(); ++i)
        if (t.runs(i) > 0) best[i] = std::min(best[i], t.seconds(i) / t.runs(i));
    }
    for (op_index i = 0; i < g.size(); ++i) {
      if (!std::isfinite(best[i])) continue;
      auto& k = out[static_cast<int>(g[i].kind)];
      k.flops.push_back(g[i].flops);
      k.bytes.push_back(g[i].bytes);
      k.seconds.push_back(best[i]);
    }
  }
  return out;
}

/// Σ over samples of log²(model / measured) for time = x / rate (rate = Σx / Σt): how well one
/// throughput explains every op of a kind. Infinite when some op has x = 0 but took time.
double log_misfit(const std::vector<double>& x, const std::vector<double>& t, double rate) {
  double e = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (t[i] <= 0) continue;
    if (x[i] <= 0) return INFINITY;
    double l = std::log((x[i] / rate) / t[i]);
    e += l * l;
  }
  return e;
}

/// A chain of 64 scalings of a 1 × 16 input: ops that cost almost nothing but their dispatch.
graph tiny_chain() {
  graph_builder b("tiny-chain");
  b.input("x0", {1, 16});
  for (int i = 1; i <= 64; ++i) b.scale("x" + std::to_string(i), "x" + std::to_string(i - 1), 1.0);
  return std::move(b).build();
}

/// A 1024 × 4096 f32 input (16 MB) and one scaling of it: placed on two devices, one big copy.
graph big_copy() {
  graph_builder b("bandwidth");
  b.input("x", {1024, 4096});
  b.scale("y", "x", 1.0);
  return std::move(b).build();
}

/// tiny_chain, op i on device i mod `devices`, run `rounds` times after a warm-up on `e`: the gaps
/// between one op's end and the next one's start (dispatch, plus a transfer when consecutive ops sit
/// on different devices).
std::vector<double> chain_gaps(engine& e, std::size_t devices, int rounds) {
  const graph gl = tiny_chain();
  placement pl;
  for (op_index i = 0; i < gl.size(); ++i) pl.device.push_back(static_cast<device_index>(i % devices));
  std::vector<double> gaps;
  for (int r = 0; r < rounds + 1; ++r) {
    auto res = e.run(gl, pl);
    if (r == 0) continue;  // warm-up
    std::vector<double> start(gl.size()), end(gl.size());
    for (const auto& ev : res.runs[0].events)
      if (ev.what == trace_event::kind::op) start[ev.id] = ev.start, end[ev.id] = ev.end;
    for (op_index i = 1; i < gl.size(); ++i) gaps.push_back(start[i] - end[i - 1]);
  }
  return gaps;
}

/// The per-op dispatch overhead of the runtime: the gap between one op's end and the next one's
/// start on one device (a chain of tiny ops; messages, queueing and thread wake-ups, no transfers).
double dispatch_overhead(int rounds) {
  engine e(make_preset("cpu:1"));
  auto gaps = chain_gaps(e, 1, rounds);
  for (double& g : gaps) g = std::max(0.0, g);
  return median(gaps);
}

/// Cores `n` devices of the runtime really get when all compute at once: n independent chains of
/// 512×512 matmuls, chain i on device i, against one chain alone on one device; cores = n × (one
/// chain's makespan) / (n chains' makespan), each the minimum of 2 × `rounds` runs: the cores the
/// host gives this process when others leave it alone (on a shared host, other users' load comes
/// and goes within seconds and only ever takes cores away). ≈ n on a host with ≥ n idle cores.
double effective_cores(std::size_t n, int rounds) {
  auto chains = [](std::size_t k) {
    graph_builder b("cores");
    for (std::size_t i = 0; i < k; ++i) {
      std::string c = std::to_string(i), prev = "x" + c;
      b.input(prev, {512, 512});
      b.input("w" + c, {512, 512});
      for (int j = 0; j < 8; ++j) {
        std::string next = "h" + c + "." + std::to_string(j);
        b.matmul(next, prev, "w" + c);
        prev = next;
      }
    }
    return std::move(b).build();
  };
  auto timed = [&](std::size_t k) {
    cluster c = make_preset("cpu:" + std::to_string(k));
    engine e(c);
    graph g = chains(k);
    placement p;
    for (std::size_t i = 0; i < k; ++i) p.device.insert(p.device.end(), 10, static_cast<device_index>(i));
    e.run(g, p);  // warm-up
    std::vector<double> ms;
    for (int r = 0; r < 2 * rounds; ++r) ms.push_back(e.run(g, p).runs[0].makespan);
    return *std::min_element(ms.begin(), ms.end());
  };
  double one = timed(1), many = timed(n);
  return many > 0 ? std::clamp(static_cast<double>(n) * one / many, 0.5, static_cast<double>(n))
                  : static_cast<double>(n);
}

/// Transfer latency (producer end → consumer start of a tiny tensor on another device: messages,
/// copy, dispatch) and copy bandwidth (a 16 MB tensor copied between two devices), on the runtime.
std::pair<double, double> transfer_costs(int rounds) {
  engine e(make_preset("cpu:2"));
  const auto gaps = chain_gaps(e, 2, rounds);
  const graph gb = big_copy();
  placement pb;
  pb.device = {0, 1};
  std::vector<double> bw;
  for (int r = 0; r < rounds + 1; ++r) {
    auto res = e.run(gb, pb);
    if (r == 0) continue;
    for (const auto& ev : res.runs[0].events)
      if (ev.what == trace_event::kind::transfer && ev.end > ev.start)
        bw.push_back(static_cast<double>(res.bytes_moved[0]) / (ev.end - ev.start));
  }
  return {median(gaps), median(bw)};  // the latency includes one dispatch gap
}

/// The fastest of `rounds` runs of `g` placed by `p` on `e`, after a warm-up: a makespan the
/// dispatcher measures on its own clock, so it holds when devices live in other processes.
double fastest_run(engine& e, const graph& g, const placement& p, int rounds) {
  e.run(g, p);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < rounds; ++r) best = std::min(best, e.run(g, p).runs[0].makespan);
  return best;
}

/// Transfer latency and bandwidth from device a to device b of `e` (in other processes, say), from
/// makespans alone: a chain of 64 tiny ops alternating a and b against the same chain on a (63
/// transfers of a tiny tensor), and a 16 MB tensor made on a and scaled on b against both on a.
std::pair<double, double> link_costs(engine& e, device_index a, device_index b, int rounds) {
  const graph gc = tiny_chain();
  placement same, alternating;
  for (op_index i = 0; i < gc.size(); ++i) {
    same.device.push_back(a);
    alternating.device.push_back(i % 2 == 0 ? a : b);
  }
  const double latency = std::max(
      0.0, (fastest_run(e, gc, alternating, rounds) - fastest_run(e, gc, same, rounds)) / static_cast<double>(gc.size() - 1));
  const graph gb = big_copy();
  placement local, across;
  local.device = {a, a};
  across.device = {a, b};
  const double moved = fastest_run(e, gb, across, rounds) - fastest_run(e, gb, local, rounds) - latency;
  const double bytes = gb[0].bytes;
  // a copy faster than the measurement resolves: no bandwidth limit worth stating
  return {latency, moved > 0 ? std::min(bytes / moved, cluster_limits::max_bandwidth) : cluster_limits::max_bandwidth};
}

/// --workers: the cluster of this deployment — the devices of `c` with their process as `host`
/// ("engine" or the worker's HOST:PORT), links within a process at (bandwidth, latency), links between
/// processes at the bandwidth `link_costs` measures between the first devices of two processes and at
/// `latency` plus what crossing processes adds to it.
cluster deployment_cluster(const calibrate_flags& f, const cluster& c, double flops, double bandwidth, double latency) {
  engine e(c, engine_options{}.with_network().with_busy_wait(busy_wait_flag(f.busy_wait)));
  attach_workers(e, c, f.workers, "--workers", f.token);
  std::vector<std::string> where(c.device_count());
  std::vector<device_index> first;  // the first device of each process, in device order
  for (device_index d = 0; d < c.device_count(); ++d) {
    std::string at = e.location(d);
    where[d] = at.empty() ? "engine" : at.substr(at.find(' ') + 1);  // "worker HOST:PORT" -> HOST:PORT
    bool seen = false;
    for (device_index k : first) seen |= where[k] == where[d];
    if (!seen) first.push_back(d);
  }
  double cross_bw = bandwidth, cross_lat = latency;
  if (first.size() > 1) {
    // The same measurement between two devices of one process is the baseline: what crossing processes
    // adds goes on top of the in-process latency as calibrate states it (with or without the dispatch
    // overhead, --flops-only), so the two kinds of link stay comparable.
    engine here(make_preset("cpu:2"));
    const auto [here_lat, here_bw] = link_costs(here, 0, 1, f.rounds);
    double apart_lat = 0;
    std::tie(apart_lat, cross_bw) = link_costs(e, first[0], first[1], f.rounds);
    cross_lat = latency + std::max(0.0, apart_lat - here_lat);
    std::cout << fmt::format("  between processes ({} and {}): transfer latency {:.1f} us ({:.1f} us more than inside "
                             "one), bandwidth {:.2f} GB/s (inside one, measured the same way: {:.2f} GB/s)\n",
                             where[first[0]], where[first[1]], cross_lat * 1e6, (apart_lat - here_lat) * 1e6,
                             cross_bw / 1e9, here_bw / 1e9);
  }
  std::vector<device> devices(c.devices().begin(), c.devices().end());
  for (device_index d = 0; d < devices.size(); ++d) {
    devices[d].flops = flops;
    devices[d].host = where[d];
  }
  std::vector<link_spec> links;
  for (device_index a = 0; a < devices.size(); ++a)
    for (device_index b = a + 1; b < devices.size(); ++b) {
      const bool apart = where[a] != where[b];
      links.push_back({devices[a].id, devices[b].id, std::max(cluster_limits::min_bandwidth, apart ? cross_bw : bandwidth),
                       apart ? cross_lat : latency, true});
    }
  std::string name = fmt::format("cpu:{} over {} processes (calibrated)", devices.size(), first.size());
  return cluster(std::move(name), std::move(devices), {}, std::move(links));
}

/// The largest synthetic op calibrate runs (a few seconds on one core).
constexpr double max_synthetic_flops = 1e11;

void calibrate_command(const calibrate_flags& f) {
  if (f.rounds < 1) throw error(errc::bad_argument, "", "--rounds", "must be at least 1");
  if (!f.workers.empty() && f.cluster_out.empty())
    throw error(errc::bad_argument, "", "--workers",
                "the deployment's links go into a cluster file: give --cluster-out FILE");
  for (const auto& w : f.workers) (void)host_port(w, "--workers", false);  // before minutes of measuring
  (void)busy_wait_flag(f.busy_wait);
  cluster c = load_cluster_or_preset(f.cluster_spec);
  // Calibration measures this host's CPU cores: the cluster only says how many of them are devices.
  for (device_index d = 0; d < c.device_count(); ++d)
    if (c[d].kind != device_kind::cpu)
      throw error(errc::bad_argument, "", "--cluster",
                  fmt::format("calibrate measures this host's CPU and takes a cpu:N cluster; '{}' has {} device "
                              "'{}' (simulate other hardware with its preset and a costs file instead)",
                              f.cluster_spec, to_string(c[d].kind), c[d].id));
  std::size_t n = c.device_count();
  std::vector<graph> graphs;
  if (f.graphs.empty())
    for (const char* name : {"llama-block", "llama-layer", "ffnn", "moe-layer", "chainmm"})
      graphs.push_back(make_workload(name, workload_params{}));
  else
    for (const auto& file : f.graphs) {
      graphs.push_back(load_graph(file));
      // calibrate runs every op here, once per round: a synthetic op's declared FLOPs are real work
      for (const op& o : graphs.back().ops())
        if (o.kind == op_kind::synthetic && o.flops > max_synthetic_flops)
          throw error(errc::bad_argument, file, "--graph",
                      fmt::format("synthetic op '{}' declares {:.3g} FLOPs; calibrate runs every op on this host "
                                  "and takes graphs whose synthetic ops are at most {:.0e} FLOPs (seconds each)",
                                  o.id, o.flops, max_synthetic_flops));
    }
  const bool any_matmul = std::any_of(graphs.begin(), graphs.end(), [](const graph& g) {
    return std::any_of(g.ops().begin(), g.ops().end(), [](const op& o) { return o.kind == op_kind::matmul && o.flops > 0; });
  });
  if (!any_matmul)
    throw error(errc::bad_argument, "", "--graph",
                "no matmul op in the graphs: calibrate derives the host's FLOP/s from matmul times");
  std::cout << fmt::format("calibrate: kernels on {} ({} rounds; OpenBLAS {}), dispatch and transfers on the actor runtime\n",
                           f.graphs.empty() ? std::string("the default workloads") : fmt::format("{} graph(s)", graphs.size()),
                           f.rounds, cpu::blas_core());
  auto samples = kernel_samples(graphs, f.rounds);
  const auto& mm = samples[static_cast<int>(op_kind::matmul)];
  double peak = mm.sum(mm.seconds) > 0 ? mm.sum(mm.flops) / mm.sum(mm.seconds) : 0;
  if (!(peak > 0)) throw error(errc::internal, "calibrate: no matmul time was measured");
  // A graph's declared costs (`flops`/`bytes` overrides) are taken as the work its ops do: absurd
  // ones give rates no device has (an infinite peak made every efficiency NaN).
  auto implausible = [&](const char* what, op_kind k, double rate) {
    return error(errc::bad_argument, "", "--graph",
                 fmt::format("the {} ops' declared {} over their measured times give {:.3g} per second, which no "
                             "device does: calibrate with graphs whose ops declare their real costs",
                             to_string(k), what, rate));
  };
  if (!(peak >= cluster_limits::min_flops && peak <= cluster_limits::max_flops))
    throw implausible("FLOPs", op_kind::matmul, peak);
  cost_model cm;
  // Per kind, the throughput (FLOP/s or output bytes/s) that explains its ops' times best; matmul is
  // always FLOP-rated (it sets the device's FLOP/s). With --flops-only, the FLOP rate alone.
  std::cout << fmt::format("  {:<11} {:>5} {:>12} {:>10} {:>10}  {}\n", "kind", "ops", "GFLOP/s", "efficiency",
                           "GB/s out", "model");
  for (op_kind k : all_op_kinds()) {
    const auto& s = samples[static_cast<int>(k)];
    double secs = s.sum(s.seconds);
    if (k == op_kind::synthetic || s.seconds.empty() || secs <= 0) continue;
    double fr = s.sum(s.flops) / secs, br = s.sum(s.bytes) / secs;
    if (!std::isfinite(fr)) throw implausible("FLOPs", k, fr);
    if (!std::isfinite(br)) throw implausible("bytes", k, br);
    bool by_bytes = false;
    if (k != op_kind::matmul && !f.flops_only && br >= 1e3) {  // a cost table's least bandwidth (simulator.md)
      by_bytes = fr <= 0 || log_misfit(s.bytes, s.seconds, br) < log_misfit(s.flops, s.seconds, fr);
      // A FLOP rate above matmul's is no efficiency (at most 1): its bytes explain the kind. (It was
      // clamped to 1 and the table said 16 s for a 0.7 ms gelu that has few FLOPs per byte.)
      by_bytes = by_bytes || fr / peak > 1.0;
    }
    double efficiency = fr / peak;
    std::string note;
    if (by_bytes) {
      cm.set_efficiency(k, 1.0).set_bandwidth(k, br);
    } else if (fr > 0) {
      efficiency = std::clamp(fr / peak, 1e-4, 1.0);  // the cost table's range
      if (efficiency != fr / peak) note = fmt::format(" (measured {:.4g}, out of the table's range)", fr / peak);
      cm.set_efficiency(k, efficiency);
    }
    std::cout << fmt::format("  {:<11} {:>5} {:>12.2f} {:>10.4f} {:>10.2f}  {}{}\n", to_string(k), s.seconds.size(),
                             fr / 1e9, efficiency, br / 1e9,
                             by_bytes ? "bytes" : (fr > 0 ? "flops" : "free (no FLOPs)"), note);
  }
  auto [gap, bandwidth] = transfer_costs(f.rounds);
  double latency = gap;
  if (!f.flops_only) {
    double overhead = dispatch_overhead(f.rounds);
    double cores = effective_cores(n, f.rounds);
    latency = std::max(0.0, gap - overhead);  // the consumer's op time already holds one overhead
    cm.set_overhead(overhead).set_host_cores(cores);
    std::cout << fmt::format("  dispatch overhead {:.1f} us per op; {} devices computing at once get {:.2f} cores "
                             "(host_cores)\n",
                             overhead * 1e6, n, cores);
  }
  std::string spec = fmt::format("cpu:{}:flops={:.4g}:bw={:.4g}:lat={:.3g}", n, peak, bandwidth, latency);
  const cluster host = make_preset(spec);  // checked before anything is written
  std::cout << fmt::format("  transfer latency {:.1f} us, copy bandwidth {:.2f} GB/s\n", latency * 1e6,
                           bandwidth / 1e9);
  write_file_atomic(f.out, cm.to_json_text());
  std::cout << "wrote " << f.out << "\nsimulate this host with --cluster " << spec << " --costs " << f.out << "\n";
  if (!f.workers.empty()) {
    save_cluster(deployment_cluster(f, host, peak, bandwidth, latency), f.cluster_out);
    std::cout << "wrote " << f.cluster_out << "\nsimulate this deployment with --cluster " << f.cluster_out
              << " --costs " << f.out << "\n";
  } else if (!f.cluster_out.empty()) {
    save_cluster(host, f.cluster_out);
    std::cout << "wrote " << f.cluster_out << "\n";
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "Measure per-kind kernel throughput and transfer latency/bandwidth on "
                                              "this host; write the cost table (doppler-costs/1)");
  auto f = std::make_shared<calibrate_flags>();
  cmd->add_option("--cluster", f->cluster_spec, "cpu:N cluster the table is for (sets N)")->capture_default_str();
  cmd->add_option("-o,--output", f->out, "Cost table to write")->capture_default_str();
  cmd->add_option("--cluster-out", f->cluster_out, "Also write the calibrated cluster (doppler-cluster/1)");
  cmd->add_option("--rounds", f->rounds, "Measured rounds per workload")->capture_default_str();
  cmd->add_option("--graph", f->graphs, "Time kernels on this graph (repeatable; default: the default workloads). One graph needs a matmul; synthetic ops above 1e11 FLOPs are refused");
  cmd->add_flag("--flops-only", f->flops_only, "Efficiencies only: no memory term, overhead or host_cores "
                                               "(the table before they existed)");
  cmd->add_option("--workers", f->workers,
                  "HOST:PORT[,HOST:PORT...]: `doppler worker`s serving devices of --cluster (as `run --workers`); "
                  "also measure transfers between processes and write this deployment's cluster (--cluster-out): "
                  "devices with their process as host, links between processes as measured")
      ->delimiter(',');
  cmd->add_option("--token", f->token, "--workers: the token the workers require (default: $DOPPLER_TOKEN)");
  cmd->add_option("--busy-wait", f->busy_wait, std::string("--workers: ") + busy_wait_help)->capture_default_str();
  cmd->callback([f, cmd] {
    // before the measuring, not after it
    auto inputs = input_args(f->graphs, "--graph");
    inputs.push_back({f->cluster_spec, "--cluster"});
    check_outputs(*cmd, {{f->out, "--output"}, {f->cluster_out, "--cluster-out"}}, inputs);
    calibrate_command(*f);
  });
}

}  // namespace doppler::cli
