// `doppler calibrate`: measure this host's kernel throughput per op kind and the actor runtime's
// transfer latency and copy bandwidth, and write the cost table (doppler-costs/1) plus the matching
// `cpu:N:flops=…:bw=…:lat=…` cluster spec the simulator should use for this host.

#include "commands.hpp"

#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <memory>

namespace doppler::cli {

namespace {

struct calibrate_flags {
  std::string cluster_spec = "cpu:4", out = "cost.json", cluster_out;
  int rounds = 3;
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs.empty() ? 0.0 : xs[xs.size() / 2];
}

/// Per-kind FLOP/s of the CPU kernels on the default workloads (one thread, reference runs).
std::array<double, op_kind_count> kernel_rates(int rounds) {
  std::array<double, op_kind_count> flops{}, seconds{};
  for (const char* name : {"llama-block", "llama-layer", "ffnn", "moe-layer", "chainmm"}) {
    graph g = make_workload(name, workload_params{});
    execute_reference(g, reference_options{}.exits_only());  // warm-up
    for (int r = 0; r < rounds; ++r) {
      kernel_timer t(g.size());
      execute_reference(g, reference_options{}.exits_only().timed(t));
      auto per = t.per_kind(g);
      for (int k = 0; k < op_kind_count; ++k) seconds[k] += per[k];
      for (const auto& o : g.ops()) flops[static_cast<int>(o.kind)] += o.flops;
    }
  }
  std::array<double, op_kind_count> rate{};
  for (int k = 0; k < op_kind_count; ++k) rate[k] = seconds[k] > 0 && flops[k] > 0 ? flops[k] / seconds[k] : 0;
  return rate;
}

/// Transfer latency (producer end → consumer start of a tiny tensor on another device: messages,
/// copy, dispatch) and copy bandwidth (a 16 MB tensor copied between two devices), on the runtime.
std::pair<double, double> transfer_costs(int rounds) {
  cluster two = make_preset("cpu:2");
  engine e(two);
  graph_builder tiny("latency-chain");
  tiny.input("x0", {1, 16});
  for (int i = 1; i <= 64; ++i) tiny.scale("x" + std::to_string(i), "x" + std::to_string(i - 1), 1.0);
  graph gl = std::move(tiny).build();
  placement pl;
  for (op_index i = 0; i < gl.size(); ++i) pl.device.push_back(i % 2);
  std::vector<double> gaps;
  for (int r = 0; r < rounds + 1; ++r) {
    auto res = e.run(gl, pl);
    if (r == 0) continue;  // warm-up
    std::vector<double> start(gl.size()), end(gl.size());
    for (const auto& ev : res.runs[0].events)
      if (ev.what == trace_event::kind::op) start[ev.id] = ev.start, end[ev.id] = ev.end;
    for (op_index i = 1; i < gl.size(); ++i) gaps.push_back(start[i] - end[i - 1]);
  }
  graph_builder big("bandwidth");
  big.input("x", {1024, 4096});
  big.scale("y", "x", 1.0);
  graph gb = std::move(big).build();
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
  return {median(gaps), median(bw)};
}

void calibrate_command(const calibrate_flags& f) {
  if (f.rounds < 1) throw error(errc::bad_argument, "", "--rounds", "must be at least 1");
  cluster c = load_cluster_or_preset(f.cluster_spec);
  std::size_t n = c.device_count();
  std::cout << fmt::format("calibrate: kernels on the default workloads ({} rounds), transfers on the actor runtime\n",
                           f.rounds);
  auto rate = kernel_rates(f.rounds);
  double peak = rate[static_cast<int>(op_kind::matmul)];
  if (!(peak > 0)) throw error(errc::internal, "calibrate: no matmul time was measured");
  cost_model cm;
  std::cout << fmt::format("  {:<11} {:>12}  {:>10}\n", "kind", "GFLOP/s", "efficiency");
  for (op_kind k : all_op_kinds()) {
    double r = rate[static_cast<int>(k)];
    if (r <= 0) continue;  // no FLOPs (input, transpose, concat, slice) or not in the workloads
    double eff = std::clamp(r / peak, 1e-4, 1.0);
    if (k != op_kind::synthetic) cm.set_efficiency(k, eff);
    std::cout << fmt::format("  {:<11} {:>12.2f}  {:>10.4f}\n", to_string(k), r / 1e9, eff);
  }
  auto [latency, bandwidth] = transfer_costs(f.rounds);
  std::string spec = fmt::format("cpu:{}:flops={:.4g}:bw={:.4g}:lat={:.3g}", n, peak, bandwidth, latency);
  std::cout << fmt::format("  transfer latency {:.1f} us, copy bandwidth {:.2f} GB/s\n", latency * 1e6,
                           bandwidth / 1e9);
  write_file_atomic(f.out, cm.to_json_text());
  std::cout << "wrote " << f.out << "\nsimulate this host with --cluster " << spec << " --costs " << f.out << "\n";
  if (!f.cluster_out.empty()) {
    save_cluster(make_preset(spec), f.cluster_out);
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
  cmd->callback([f] { calibrate_command(*f); });
}

}  // namespace doppler::cli
