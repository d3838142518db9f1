// Comm planner: planning time per method, with the baselines (ring, tree) in the same harness, and
// the validator/bounds. Counters report the schedule quality next to the time: epochs and % of the
// lower bound. `bench_comm --benchmark_filter=greedy_pod` runs the 1,024-GPU allgather.
#include <doppler/comm/planner.hpp>
#include <doppler/comm/tenants.hpp>
#include <doppler/comm/topologies.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

using namespace doppler;
using namespace doppler::comm;

namespace {

void report(benchmark::State& st, const plan_result& r) {
  st.counters["epochs"] = r.sched.epochs;
  st.counters["pct_of_bound"] = 100 * r.fraction_of_bound();
  st.counters["algbw_GBps"] = r.report.algbw / 1e9;
}

void plan_bench(benchmark::State& st, const cluster& c, const demand& d, const std::string& method, double limit = 30) {
  plan_options o;
  o.with_method(method).with_time_limit(limit);
  plan_result r;
  for (auto _ : st) {
    r = plan(c, d, o);
    benchmark::DoNotOptimize(r.sched.sends.data());
  }
  report(st, r);
}

/// DGX-1 allgather, k chunks per GPU of 1 MiB: milp vs greedy vs ring vs tree.
void dgx1_allgather(benchmark::State& st, const std::string& method) {
  static const cluster c = make_preset("dgx1-v100");
  demand d = make_collective(c, collective::allgather, 1 << 20, static_cast<int>(st.range(0)));
  plan_bench(st, c, d, method);
}

/// NDv2 2-chassis allgather, 1 GB output (TE-CCL's case): greedy, lp, ring.
void ndv2_allgather(benchmark::State& st, const std::string& method) {
  static const cluster c = make_preset("ndv2-2");
  demand d = make_collective(c, collective::allgather, 62.5e6, 1);
  plan_bench(st, c, d, method);
}

/// NDv2 2-chassis alltoall, 1 GB output at fast τ (TE-CCL's case): telp (its LP on coarse epochs,
/// refined on τ) vs the fluid lp and greedy.
void ndv2_alltoall(benchmark::State& st, const std::string& method) {
  static const cluster c = make_preset("ndv2-2");
  demand d = make_collective(c, collective::alltoall, 62.5e6, 1);
  plan_bench(st, c, d, method, 200);
}

/// Allgather on h100-pod:N (8N GPUs), greedy; N = 128 is the 1,024-GPU case.
void greedy_pod(benchmark::State& st) {
  cluster c = make_h100_pod(static_cast<int>(st.range(0)));
  demand d = make_collective(c, collective::allgather, 1 << 20, 1);
  plan_bench(st, c, d, "greedy");
  st.counters["gpus"] = static_cast<double>(c.device_count());
}

void validate_pod(benchmark::State& st) {
  cluster c = make_h100_pod(static_cast<int>(st.range(0)));
  demand d = make_collective(c, collective::allgather, 1 << 20, 1);
  plan_result r = plan(c, d, plan_options{}.with_method("greedy"));
  network net(c, d.chunk_bytes);
  for (auto _ : st) benchmark::DoNotOptimize(validate_schedule(net, d, r.sched).epochs_used);
  st.counters["sends"] = static_cast<double>(r.sched.sends.size());
}

void bound_ndv2(benchmark::State& st) {
  cluster c = make_preset("ndv2-2");
  demand d = make_collective(c, collective::alltoall, 62.5e6, 1);
  network net(c, d.chunk_bytes);
  for (auto _ : st) benchmark::DoNotOptimize(compute_lower_bound(net, d).seconds);
}

/// Re-planning on a DGX-1 when a second job arrives next to a running allgather (2 chunks per
/// GPU): cold (the joint demand planned from scratch) vs warm (from the allgather's old plan).
/// Jobs: a gather to gpu5 (4 chunks per GPU), a scatter from gpu0 (4 per GPU), a broadcast of 8
/// chunks from gpu3. Warm: `t0` ≥ 0 re-plans at that epoch (sends before it kept, the rest from the
/// state there); t0 = -1 is the older mode (milp: MIP start; auto: every old send fixed). One
/// benchmark runs both, alternating which goes first (a noisy host), `rounds` times each, and
/// reports the median times, their ratio and both epoch counts. At t0 > 0 cold is a reference
/// (the joint plan had the job been known at the start), not a re-plan.
demand joining(const cluster& c, const std::string& job) {
  if (job == "gather") return make_collective(c, collective::gather, 1 << 20, 4, 5);
  if (job == "scatter") return make_collective(c, collective::scatter, 1 << 20, 4, 0);
  return make_collective(c, collective::broadcast, 1 << 20, 8, 3);
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
void replan(benchmark::State& st, const std::string& job, const std::string& method, std::int32_t t0, int rounds) {
  static const cluster c = make_preset("dgx1-v100");
  demand a = make_collective(c, collective::allgather, 1 << 20, 2);
  plan_options o;
  o.with_method(method).with_time_limit(5);
  static std::map<std::string, plan_result> first;
  if (!first.count(method)) first[method] = plan(c, merge_jobs({a}, {1.0}), o);
  demand both = merge_jobs({a, joining(c, job)}, {1.0, 1.0});
  plan_options w = o;
  w.warm_start = &first[method].sched;
  w.replan_epoch = t0;
  // BENCH_REPLAN_ROUNDS=n: n rounds of each instead (steadier medians on a loaded host).
  if (const char* n = std::getenv("BENCH_REPLAN_ROUNDS")) rounds = std::max(1, std::atoi(n));
  plan_result cold, warm;
  std::vector<double> tc, tw;
  auto timed = [&](const plan_options& p, plan_result& r, std::vector<double>& t) {
    auto s = std::chrono::steady_clock::now();
    r = plan(c, both, p);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  };
  for (auto _ : st)
    for (int i = 0; i < rounds; ++i) {
      if (i % 2 == 0) {
        timed(o, cold, tc);
        timed(w, warm, tw);
      } else {
        timed(w, warm, tw);
        timed(o, cold, tc);
      }
    }
  report(st, warm);
  st.counters["cold_ms"] = median(tc);
  st.counters["warm_ms"] = median(tw);
  st.counters["warm_over_cold"] = median(tw) / std::max(1e-9, median(tc));
  st.counters["cold_epochs"] = cold.sched.epochs;
  st.counters["warm_epochs"] = warm.sched.epochs;
  st.counters["warm_bound"] = warm.bound.epochs;
  st.counters["warm_proved"] = warm.sched.proved_optimal ? 1 : 0;
  // BENCH_COMM_NOTES=1: how each plan got there (the schedule notes) on stderr.
  if (std::getenv("BENCH_COMM_NOTES"))
    std::fprintf(stderr, "%s %s t0=%d\n  cold: %s\n  warm: %s\n", job.c_str(), method.c_str(), t0,
                 cold.sched.note.c_str(), warm.sched.note.c_str());
}

/// The MILP on a DGX-1 allgather (2 chunks per GPU) from scratch vs with a MIP start (its own
/// previous schedule, as when re-planning after a change that left the plan feasible).
void milp_start(benchmark::State& st, bool hinted) {
  static const cluster c = make_preset("dgx1-v100");
  static const demand d = make_collective(c, collective::allgather, 1 << 20, 2);
  plan_options o;
  o.with_method("milp").with_time_limit(30);
  static const plan_result first = plan(c, d, o);
  if (hinted) o.hint_sends = &first.sched.sends;
  plan_result r;
  for (auto _ : st) r = plan(c, d, o);
  report(st, r);
}

/// Two tenants on a DGX-1 (allgather + broadcast): joint vs alone vs first-come-first-served.
void tenants(benchmark::State& st) {
  static const cluster c = make_preset("dgx1-v100");
  demand both = merge_jobs({make_collective(c, collective::allgather, 1 << 20, 1),
                            make_collective(c, collective::broadcast, 1 << 20, 2, 5)},
                           {1.0, 1.0});
  plan_options o;
  o.with_method("milp").with_time_limit(30);
  tenant_comparison t;
  for (auto _ : st) t = compare_tenants(c, both, o);
  st.counters["weighted_joint"] = t.weighted_joint;
  st.counters["weighted_alone"] = t.weighted_alone;
  st.counters["weighted_fcfs"] = t.weighted_fcfs;
  st.counters["makespan_joint"] = t.joint.report.epochs_used;
  st.counters["makespan_fcfs"] = t.fcfs.epochs;
}

}  // namespace

BENCHMARK_CAPTURE(replan, gather_milp_mipstart, std::string("gather"), std::string("milp"), -1, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, gather_auto_fixed, std::string("gather"), std::string("auto"), -1, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, gather_auto_t0, std::string("gather"), std::string("auto"), 0, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, gather_auto_t2, std::string("gather"), std::string("auto"), 2, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, gather_greedy_t0, std::string("gather"), std::string("greedy"), 0, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, gather_greedy_t2, std::string("gather"), std::string("greedy"), 2, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, scatter_milp_mipstart, std::string("scatter"), std::string("milp"), -1, 2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, scatter_auto_fixed, std::string("scatter"), std::string("auto"), -1, 2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, scatter_auto_t0, std::string("scatter"), std::string("auto"), 0, 2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, scatter_auto_t2, std::string("scatter"), std::string("auto"), 2, 2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, scatter_greedy_t0, std::string("scatter"), std::string("greedy"), 0, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, scatter_greedy_t2, std::string("scatter"), std::string("greedy"), 2, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, broadcast_milp_mipstart, std::string("broadcast"), std::string("milp"), -1, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, broadcast_auto_fixed, std::string("broadcast"), std::string("auto"), -1, 2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, broadcast_auto_t0, std::string("broadcast"), std::string("auto"), 0, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, broadcast_auto_t2, std::string("broadcast"), std::string("auto"), 2, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, broadcast_greedy_t0, std::string("broadcast"), std::string("greedy"), 0, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(replan, broadcast_greedy_t2, std::string("broadcast"), std::string("greedy"), 2, 100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(milp_start, scratch, false)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(milp_start, hinted, true)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(tenants)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(dgx1_allgather, greedy, std::string("greedy"))->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(dgx1_allgather, ring, std::string("ring"))->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(dgx1_allgather, tree, std::string("tree"))->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(dgx1_allgather, milp, std::string("milp"))->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(dgx1_allgather, telp, std::string("telp"))->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(ndv2_allgather, greedy, std::string("greedy"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ndv2_allgather, lp, std::string("lp"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ndv2_allgather, ring, std::string("ring"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ndv2_alltoall, telp, std::string("telp"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(ndv2_alltoall, lp, std::string("lp"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(ndv2_alltoall, greedy, std::string("greedy"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(greedy_pod)->Arg(16)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(validate_pod)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(bound_ndv2)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
