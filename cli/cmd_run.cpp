// `doppler run`: execute a placed graph on the actor runtime (CPU backend) and print the measured
// makespan next to the simulator's prediction for the same placement. `doppler worker` serves device
// actors to a `doppler run --workers` in another process.

#include "commands.hpp"
#include "run_setup.hpp"
#include "summary.hpp"

#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/actors/online.hpp>
#include <doppler/comm/multicast.hpp>
#include <doppler/comm/planner.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/host_buffers.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/learner.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>
#ifdef DOPPLER_HAVE_CUDA
#include <doppler/cuda/actor_backend.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace doppler::cli {

void add_calibrate_command(CLI::App& app);  // cmd_calibrate.cpp

namespace {

struct run_flags {
  std::string graph_file, cluster_spec = default_cluster, placement_file, method = "cp", mode = "wc", trace_file,
      costs_file, backend = "cpu", scheduler = "stealing", transfers = "direct", plan_method = "greedy", refine;
  std::string learner, policy_file, save_policy;  // --learner: placements from a learner actor
  bool online = false;
  double explore = 0.1;
  double chunk_bytes = 1 << 20;
  std::uint32_t max_chunks = 8;
  std::vector<std::string> workers;  // HOST:PORT
  std::vector<std::string> stragglers;  // DEVICE:FACTOR
  std::string token, tls_cert, tls_key, tls_ca;
  int repeat = 5, warmup = 1, streams = 1;
  std::uint64_t seed = 0;
  double timeout = 600;
  double busy_wait = 60;  // seconds a run waits for worker devices serving another engine's run
  CLI::Option* cluster_option = nullptr;  // to tell a defaulted --cluster from a given one
  bool json = false, failover = false;
};

/// A device by id or index.
device_index device_arg(const cluster& c, const std::string& s, const std::string& flag) {
  if (auto d = c.find_device(s)) return *d;
  try {
    std::size_t used = 0;
    unsigned long i = std::stoul(s, &used);
    if (used == s.size() && i < c.device_count()) return static_cast<device_index>(i);
  } catch (const std::exception&) {
  }
  throw error(errc::bad_argument, "", flag, "no device '" + s + "' in cluster '" + c.name() + "'");
}

}  // namespace

/// "HOST:PORT" (PORT 0..65535; 0 only where `allow_zero`).
std::pair<std::string, std::uint16_t> host_port(const std::string& s, const std::string& flag, bool allow_zero) {
  auto colon = s.rfind(':');
  std::string host = colon == std::string::npos ? "" : s.substr(0, colon);
  std::string port = colon == std::string::npos ? "" : s.substr(colon + 1);
  if (host.empty() || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    throw error(errc::bad_argument, "", flag, "'" + s + "': expected HOST:PORT");
  unsigned long n = std::stoul(port);
  if (n > 65535 || (n == 0 && !allow_zero))
    throw error(errc::bad_argument, "", flag, "'" + s + "': port must be " + (allow_zero ? "0" : "1") + "..65535");
  return {host, static_cast<std::uint16_t>(n)};
}

/// `--backend NAME`: the actor layer's backends by name, and `cuda` (this machine's GPU; each device of
/// the cluster a virtual device on it) when doppler was built with CUDA — a clear error otherwise.
engine_options with_named_backend(engine_options o, const std::string& name, std::size_t devices,
                                  const std::string& flag) {
  if (name != "cuda") {
    const auto names = actors::backend_names();  // the engine's own; cuda is attached here
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw error(errc::bad_argument, "", flag,
                  "unknown backend '" + name + "' (backends: " + fmt::format("{}", fmt::join(names, ", ")) + ", cuda)");
    return o.with_backend(name);
  }
#ifdef DOPPLER_HAVE_CUDA
  std::string why;
  if (!cuda::gpu_available(&why))
    throw error(errc::infeasible, "", flag, "cuda: no usable GPU on this machine (" + why + ")");
  return o.with_backend("cuda").with_custom_backend(
      std::make_shared<cuda::actor_backend>(static_cast<int>(devices), cuda::device_options{}));
#elif defined(DOPPLER_CUDA_IN_TWIN)
  (void)devices;
  (void)flag;
  forward_to_learn_twin();  // the twin links the CUDA libraries; this binary starts without them
#else
  (void)devices;
  throw error(errc::bad_argument, "", flag, "cuda: this doppler was built without CUDA (nvcc not found)");
#endif
}

/// The shared token: the flag, else $DOPPLER_TOKEN.
std::string token_or_env(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  const char* env = std::getenv("DOPPLER_TOKEN");
  return env ? env : "";
}

std::chrono::milliseconds busy_wait_flag(double seconds, const std::string& flag) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || seconds > 1e9)
    throw error(errc::bad_argument, "", flag, "must be a number of seconds in [0, 1e9]");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

void attach_workers(engine& e, const cluster& c, const std::vector<std::string>& addresses, const std::string& flag,
                    const std::string& token_flag, std::ostream* report, const std::string& prefix) {
  const std::string token = token_or_env(token_flag);
  // Every address is checked before the first connection. The engine maps a worker it already holds
  // onto the same devices again (how it reconnects one): listed twice, it would serve those devices
  // once and leave the rest of the cluster unmapped.
  std::vector<std::pair<std::string, std::uint16_t>> parsed;
  for (const auto& w : addresses) {
    parsed.push_back(host_port(w, flag, false));
    if (std::count(parsed.begin(), parsed.end(), parsed.back()) > 1)
      throw error(errc::bad_argument, "", flag,
                  "worker " + parsed.back().first + ":" + std::to_string(parsed.back().second) + " is listed twice");
  }
  for (const auto& [host, port] : parsed) {
    auto ds = e.attach_worker(host, port, token);
    if (!report) continue;
    *report << prefix << "worker " << host << ":" << port << " serves";
    for (device_index d : ds) *report << " " << c[d].id;
    *report << "\n";
  }
}

namespace {

/// `--online`: every measured run asks the learner actor for a placement (greedy, or exploring within
/// the --explore budget), runs it, and reports the measured makespan for the learner to update.
void online_command(const run_flags& f, engine& e, learner_client& l, std::shared_ptr<const graph> g,
                    const cost_model& cm, const run_options& ro) {
  online_learning ol(e, l, g, online_options{}.with_explore(f.explore).with_seed(f.seed).with_run(
                                  run_options(ro).with_repeat(1).with_trace(false)));
  nlohmann::json runs = nlohmann::json::array();
  if (!f.json)
    std::cout << fmt::format("online learning: learner {}, explore at most {:.0f}% of runs\n"
                             " run  explored  makespan (s)  best so far (s)  latest greedy (s)  placement\n",
                             l.name(), 100 * f.explore);
  nlohmann::json failovers = nlohmann::json::array();  // as `run --failover` reports them, with the run
  int updates = 0;  // observations that completed an update of the learner's parameters
  for (int k = 0; k < f.repeat; ++k) {
    online_step s = ol.step();
    updates += s.update.updated ? 1 : 0;
    for (const auto& why : s.failovers) failovers.push_back({{"run", s.run}, {"failover", why}});
    if (f.json) {
      runs.push_back({{"run", s.run}, {"explored", s.explored}, {"makespan_s", s.makespan}, {"best_s", s.best},
                      {"greedy_s", s.greedy}, {"method", s.used.method}, {"updated", s.update.updated}});
      continue;
    }
    std::cout << fmt::format("{:4d}  {:<8}  {:12.6f}  {:15.6f}  {:17.6f}  {}\n", s.run, s.explored ? "yes" : "no",
                             s.makespan, s.best, s.greedy, s.used.method);
    for (const auto& why : s.failovers)
      std::cout << "      failover (ops re-placed on the surviving devices; not told to the learner) after: " << why << "\n";
  }
  double final_sim = simulate(*g, e.cluster_model(), l.place(g), cm, sim_options{}).makespan;
  if (f.json) {
    std::cout << nlohmann::json{{"graph", graph_label(f.graph_file)}, {"cluster", e.cluster_model().name()}, {"learner", l.name()},
                                {"explore", f.explore}, {"runs", runs}, {"explored", ol.explored()},
                                {"updates", updates}, {"best_s", ol.best_makespan()}, {"final_greedy_simulated_s", final_sim},
                                {"failovers", failovers}}
                     .dump()
              << "\n";
    return;
  }
  std::cout << fmt::format("{} runs, {} explored; best measured {:.6f} s; the learner's greedy placement now "
                           "simulates to {:.6f} s\n",
                           ol.runs(), ol.explored(), ol.best_makespan(), final_sim);
}

/// Returns f(). A failed run — past --timeout, an op that threw, a lost worker — may leave kernels
/// running on other devices, and kernels cannot be cancelled: destroying the engine would wait for
/// them (seconds for a big matmul), so the failure is reported as main() reports errors and the
/// process ends at once, without unwinding to the engine's destructor.
template <class F>
decltype(auto) exit_at_failure(F&& f) {
  try {
    return f();
  } catch (const run_failure& x) {
    std::cout.flush();
    std::cerr << "doppler: error: " << x.what() << " (exiting without waiting for kernels still running)\n";
    std::cerr.flush();
    std::_Exit(1);
  }
}

void run_command(const run_flags& f) {
  if (f.repeat < 1) throw error(errc::bad_argument, "", "--repeat", "must be at least 1");
  if (f.warmup < 0) throw error(errc::bad_argument, "", "--warmup", "must be at least 0");
  check_streams_flag(f.streams);
  if (!(f.timeout > 0) || !(f.timeout <= 1e9))  // also NaN and inf: milliseconds(int64) would overflow
    throw error(errc::bad_argument, "", "--timeout", "must be a number of seconds in (0, 1e9]");
  const auto busy_wait = busy_wait_flag(f.busy_wait);
  if (f.learner.empty() && (f.online || !f.policy_file.empty() || !f.save_policy.empty()))
    throw error(errc::bad_argument, "", "--learner", "--online, --policy and --save-policy need --learner");
  if (f.online && !f.trace_file.empty())  // a trace is one run's; --online runs another placement each time
    throw error(errc::bad_argument, "", "--trace",
                "records one placement's run; --online runs a placement per run (drop --online to trace the "
                "learner's placement: run --learner L --trace FILE)");
  if (!f.learner.empty() && !f.placement_file.empty())
    throw error(errc::bad_argument, "", "--learner", "give either --placement or --learner, not both");
  may_explore(1, 0, f.explore);  // validates --explore
  // The DOPPLER learner lives in the LibTorch twin doppler-learn: hand the whole command over to it.
  if (f.learner == "doppler" && !has_learner("doppler")) forward_to_learn_twin();
  exec_mode mode = exec_mode::wc;
  if (f.mode == "bsp") mode = exec_mode::bsp;
  else if (f.mode != "wc") throw error(errc::bad_argument, "", "--mode", "unknown mode '" + f.mode + "' (wc, bsp)");

  auto g = std::make_shared<const graph>(load_graph_or_default(f.graph_file));
  const std::string graph_name = graph_label(f.graph_file);
  note_default_cluster(f.cluster_option);
  cluster c = load_cluster_or_preset(f.cluster_spec);
  cost_model cm = f.costs_file.empty() ? cost_model() : cost_model::load(f.costs_file);
  learner_config lc;
  lc.policy = f.policy_file;
  lc.costs = cm;
  lc.seed = f.seed;
  std::unique_ptr<learner_interface> learner;
  if (!f.learner.empty()) learner = make_learner(f.learner, lc);  // before the engine: errors come first
  placement p;
  std::string method;
  if (learner) {
    method = "learner " + f.learner;
  } else if (!f.placement_file.empty()) {
    p = load_placement(f.placement_file, *g, c);
    method = p.method.empty() ? "file" : p.method;
  } else {
    placer_options po;
    po.seed = f.seed;
    p = make_placer(f.method)->place(*g, c, cm, po);
    method = f.method;
  }

  transfer_options to;
  to.mode = f.transfers;
  to.method = f.plan_method;
  to.refine = f.refine;
  check_chunk_bytes_flag(f.chunk_bytes);
  check_max_chunks_flag(f.max_chunks);
  to.chunk_bytes = f.chunk_bytes;
  to.max_chunks = f.max_chunks;
  engine_options eo = with_named_backend(engine_options{}, f.backend, c.device_count());
  eo.stragglers = parse_stragglers(f.stragglers, c);
  engine e(c, eo.with_transfers(to)
                  .with_network(!f.workers.empty())
                  .with_tls(f.tls_cert, f.tls_key, f.tls_ca)
                  .with_scheduler(f.scheduler)
                  .with_streams(f.streams)
                  .with_costs(cm)
                  .with_timeout(std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(f.timeout * 1000))))
                  .with_busy_wait(busy_wait));
  attach_workers(e, c, f.workers, "--workers", f.token, f.json ? nullptr : &std::cout);
  std::optional<learner_client> lc_actor;
  if (learner) {
    lc_actor.emplace(e.spawn_learner(std::move(learner)));
    p = lc_actor->place(g);  // greedy: what the learner deploys now
  }
  if (!f.json)
    std::cout << fmt::format("run: graph {} ({} ops), cluster {} ({} devices), placement {}, mode {}, "
                             "streams {}, backend {}, scheduler {}, {} warm-up + {} measured runs\n",
                             graph_name, g->size(), c.name(), c.device_count(), method, f.mode, f.streams,
                             f.backend, f.scheduler, f.warmup, f.repeat);
  run_options ro;
  ro.mode = mode;
  ro.seed = f.seed;
  ro.failover = f.failover;
  // The simulator's prediction first: a placement it cannot time (an op that would take forever on
  // its device) is an error before anything runs.
  double simulated = 0;
  if (!f.online) {
    sim_options so;
    so.mode = mode;
    so.streams = f.streams;
    if (f.transfers == "planned")  // the prediction moves tensors the same way (and plans the same)
      so.transfers = std::make_shared<comm::multicast_planner>(
          std::make_shared<const cluster>(c),
          comm::multicast_options{}.with_method(f.plan_method).with_chunk_bytes(f.chunk_bytes).with_max_chunks(f.max_chunks));
    simulated = simulate(*g, c, p, cm, so).makespan;
  }
  // waiting for worker devices another engine's run held (warm-up included): seconds, refused runs, probes
  double busy_waited = 0;
  std::size_t busy_tries = 0, busy_probes = 0;
  auto add_waits = [&](const run_result& r) {
    busy_waited += r.busy_waited, busy_tries += r.busy_tries, busy_probes += r.busy_probes;
  };
  if (f.warmup > 0)
    add_waits(exit_at_failure([&] { return e.run(g, p, run_options(ro).with_repeat(f.warmup).with_trace(false)); }));
  if (f.online) {
    exit_at_failure([&] { online_command(f, e, *lc_actor, g, cm, ro); });
    if (!f.save_policy.empty()) {
      lc_actor->save(f.save_policy);
      if (!f.json) std::cout << "wrote learner state " << f.save_policy << "\n";
    }
    return;
  }
  reset_host_cache_counters();  // the counts below are the measured runs' (docs/cpu_backend.md, "Tensor memory")
  auto r = exit_at_failure(
      [&] { return e.run(g, p, run_options(ro).with_repeat(f.repeat).with_trace(!f.trace_file.empty())); });
  const host_cache_stats hc = host_cache_statistics();
  add_waits(r);

  auto ms = r.makespans();
  const auto st = summarize(ms);
  const double m = st.mean, sd = st.std;
  const sim_result& last = r.runs.back();
  // FORMATS.md's source is "cpu" or "cuda" for a run; `backend` says whether its op times were measured (cpu,
  // cuda), modelled (emulate) or empty (null). Devices on --workers run the worker's own --backend.
  if (!f.trace_file.empty())
    write_file_atomic(f.trace_file, chrome_trace(*g, c, last, f.backend == "cuda" ? "cuda" : "cpu", f.backend));
  if (lc_actor && !f.save_policy.empty()) lc_actor->save(f.save_policy);
  std::vector<double> util;
  for (device_index d = 0; d < c.device_count(); ++d) util.push_back(last.utilization(d));
  double bytes = static_cast<double>(r.bytes_moved.back());

  if (f.json) {
    nlohmann::json j{{"graph", graph_name},       {"cluster", c.name()},   {"method", method},
                     {"mode", f.mode},              {"streams", f.streams},  {"repeat", f.repeat},
                     {"makespan_s", m},             {"makespan_std_s", sd},  {"makespan_min_s", r.min_makespan()},
                     {"makespan_max_s", r.max_makespan()}, {"makespans_s", ms}, {"simulated_s", simulated},
                     {"utilization", util},         {"bytes_moved", bytes},  {"transfers", r.transfers.back()},
                     {"transfer_mode", f.transfers}, {"planned_tensors", r.planned_tensors}, {"backend", f.backend}};
    if (!f.trace_file.empty()) j["trace"] = f.trace_file;
    if (!r.failovers.empty()) j["failovers"] = r.failovers;
    j["busy_waited_s"] = busy_waited;
    j["busy_tries"] = busy_tries;
    j["busy_probes"] = busy_probes;
    j["blas_core"] = cpu::blas_core();  // the OpenBLAS kernels the cpu backend's matmuls ran (kernels.cpp)
    j["host_cache"] = {{"hits", hc.hits}, {"misses", hc.misses}, {"cached_bytes", hc.cached_bytes},
                       {"limit_bytes", hc.limit_bytes}};
    std::cout << j.dump() << "\n";
    return;
  }
  std::cout << fmt::format("measured makespan: mean {:.6f} s  std {:.6f}  min {:.6f}  max {:.6f}  (n={})\n", m, sd,
                           r.min_makespan(), r.max_makespan(), ms.size());
  std::cout << fmt::format("simulated makespan: {:.6f} s  (measured / simulated = {:.2f})\n", simulated,
                           simulated > 0 ? m / simulated : 0.0);
  std::cout << "utilization:";
  for (device_index d = 0; d < c.device_count(); ++d) std::cout << fmt::format(" {} {:.0f}%", c[d].id, 100 * util[d]);
  std::cout << fmt::format("\nmoved {:.0f} bytes in {} transfers ({}", bytes, r.transfers.back(), f.transfers);
  if (f.transfers == "planned") std::cout << fmt::format(": {} tensors by plan", r.planned_tensors);
  std::cout << ")\n";
  if (hc.hits + hc.misses > 0)
    std::cout << fmt::format("host buffers: {} of {} large buffers reused in the measured runs, {:.1f} MiB cached\n", hc.hits,
                             hc.hits + hc.misses, static_cast<double>(hc.cached_bytes) / (1024.0 * 1024.0));
  if (busy_waited > 0)
    std::cout << fmt::format("waited {:.2f} s for worker devices that were serving another engine's run ({} runs "
                             "refused, {} probes)\n", busy_waited, busy_tries, busy_probes);
  for (const auto& why : r.failovers) std::cout << "failover (ops re-placed on the surviving devices) after: " << why << "\n";
  if (!f.trace_file.empty()) std::cout << "wrote trace " << f.trace_file << "\n";
  if (lc_actor && !f.save_policy.empty()) std::cout << "wrote learner state " << f.save_policy << "\n";
}

}  // namespace

void add_run_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Execute a placed graph on the actor runtime (real CPU kernels) and compare "
                                        "the measured makespan with the simulator's");
  auto f = std::make_shared<run_flags>();
  f->cluster_option = add_graph_cluster_options(cmd, f->graph_file, f->cluster_spec);
  cmd->add_option("--placement", f->placement_file, "Placement (doppler-placement/1); default: place with --method");
  cmd->add_option("--method", f->method, "Placer when no --placement is given")->capture_default_str();
  cmd->add_option("--mode", f->mode, "wc (work-conserving) or bsp (barrier per level)")->capture_default_str();
  cmd->add_option("--repeat", f->repeat, "Measured runs")->capture_default_str();
  cmd->add_option("--warmup", f->warmup, "Unmeasured runs first")->capture_default_str();
  cmd->add_option("--streams", f->streams, "Concurrent ops per device (1 to 256)")->capture_default_str();
  cmd->add_option("--seed", f->seed, "Input fill (and placer) seed")
      ->transform(non_negative())
      ->capture_default_str();
  cmd->add_option("--backend", f->backend, "Kernel backend: cpu (real kernels), emulate (hold each op and transfer for its modeled time), "
                                         "null (no work), cuda (this machine's GPU, each device a virtual device on "
                                         "it; outputs stay in GPU memory, copied device to device)")->capture_default_str();
  cmd->add_option("--costs", f->costs_file, "Cost table for the simulated prediction (doppler-costs/1)");
  cmd->add_option("--timeout", f->timeout, "Seconds before a run fails, in (0, 1e9] (the process then exits at once: a kernel still running is abandoned, not waited for)")->capture_default_str();
  cmd->add_option("--busy-wait", f->busy_wait, busy_wait_help)->capture_default_str();
  cmd->add_option("--trace", f->trace_file, "Write the last run's Chrome trace here");
  cmd->add_option("--scheduler", f->scheduler, "CAF scheduler: stealing or sharing")->capture_default_str();
  cmd->add_option("--transfers", f->transfers,
                  "direct: a copy per consumer device; planned: a tensor several devices need (or one routed "
                  "through another device) moves chunk by chunk as the comm-planner actor's multicast plan says")
      ->capture_default_str();
  cmd->add_option("--plan-method", f->plan_method, "planned transfers: comm planner method answering at once")
      ->capture_default_str();
  cmd->add_option("--refine", f->refine, "planned transfers: a slower method (milp, auto, ...) refining cached "
                                         "plans in the background for later runs");
  cmd->add_option("--chunk-bytes", f->chunk_bytes, "planned transfers: target chunk size")->capture_default_str();
  cmd->add_option("--max-chunks", f->max_chunks, "planned transfers: most chunks per tensor")->capture_default_str();
  cmd->add_option("--workers", f->workers,
                  "HOST:PORT[,HOST:PORT...]: run on the devices of these `doppler worker`s (CAF middleman over "
                  "TCP). Anonymous worker devices (--devices cpu:N) take the cluster's devices in order, "
                  "worker by worker; named ones (--devices ids, --name HOST) the devices of the same id")
      ->delimiter(',');
  cmd->add_option("--token", f->token, "Shared token the workers require (default: $DOPPLER_TOKEN)");
  cmd->add_option("--tls-cert", f->tls_cert, "TLS to the workers (CAF's openssl module): this side's PEM certificate "
                                             "(needs --tls-key and --tls-ca; workers must also use TLS)");
  cmd->add_option("--tls-key", f->tls_key, "TLS: the PEM key of --tls-cert");
  cmd->add_option("--tls-ca", f->tls_ca, "TLS: PEM CA file the peer's certificate must verify against");
  cmd->add_option("--straggler", f->stragglers,
                  "DEVICE:FACTOR (FACTOR in [1, 1e6]): make this (local) device FACTOR times slower — it waits (FACTOR-1) x each op's "
                  "time after the op; the simulated prediction is not told (simulate --straggler is). Repeatable");
  cmd->add_flag("--failover", f->failover, "When a worker is lost mid-run, re-place its ops on the surviving "
                                           "devices and run again instead of failing");
  cmd->add_flag("--json", f->json, "Print one JSON object");
  cmd->add_option("--learner", f->learner,
                  "Place with a learner actor instead: doppler (a trained policy; runs in doppler-learn), cp, heft, "
                  "or a registered learner")
      ->check([](const std::string& n) { return n.empty() ? std::string("empty learner name") : std::string(); });
  cmd->add_option("--policy", f->policy_file, "--learner: state to start from (doppler: a `doppler train` checkpoint)");
  cmd->add_flag("--online", f->online,
                "--learner: learn during deployment: each of the --repeat runs asks the learner for a placement "
                "(greedy, or exploring within --explore), runs it and reports the measured makespan; the learner "
                "updates between runs");
  cmd->add_option("--explore", f->explore,
                  "--online: exploration budget: after n runs at most ceil(EXPLORE x n) tried a non-greedy "
                  "placement (0..1; the first run is greedy)")
      ->capture_default_str();
  cmd->add_option("--save-policy", f->save_policy, "--learner: write the learner's state here afterwards (atomically)");
  cmd->callback([f, cmd] {
    check_outputs(*cmd, {{f->save_policy, "--save-policy"}, {f->trace_file, "--trace"}},  // before the runs
                  {{f->graph_file, "--graph"}, {f->cluster_spec, "--cluster"}, {f->placement_file, "--placement"},
                   {f->costs_file, "--costs"}});  // not --policy: --save-policy may update it in place
    if (cmd->count("--explore") > 0 && !f->online)
      throw error(errc::bad_argument, "", "--explore", "the exploration budget needs --online");
    // Values the engine would refuse without naming the flag, named here.
    if (f->scheduler != "stealing" && f->scheduler != "sharing")
      throw error(errc::bad_argument, "", "--scheduler", "unknown scheduler '" + f->scheduler + "' (stealing, sharing)");
    check_comm_method_flag(f->plan_method, "--plan-method");
    if (!f->refine.empty()) check_comm_method_flag(f->refine, "--refine");
    for (const char* flag : {"--tls-cert", "--tls-key", "--tls-ca"})
      if (cmd->count(flag) > 0 && f->workers.empty())
        throw error(errc::bad_argument, "", flag, "TLS secures the connections to --workers; no --workers given");
    // Planned transfers' options do nothing with direct transfers: said, as train says its own.
    if (f->transfers != "planned")
      for (const char* flag : {"--plan-method", "--refine", "--chunk-bytes", "--max-chunks"})
        if (cmd->count(flag) > 0) std::cerr << "doppler run: note: " << flag << " has no effect without --transfers planned\n";
    run_command(*f);
  });
  add_calibrate_command(app);

  auto* wk = app.add_subcommand("worker", "Serve device actors to `doppler run --workers` over TCP (CAF's middleman) "
                                          "until killed; prints `listening on HOST:PORT`");
  struct worker_flags {
    std::string listen = "127.0.0.1:0", cluster_spec, name, token, backend = "cpu", tls_cert, tls_key, tls_ca;
    std::vector<std::string> devices;
    int streams = 1;
  };
  auto w = std::make_shared<worker_flags>();
  wk->add_option("--listen", w->listen, "HOST:PORT to listen on (port 0: a free one, printed); loopback by default")
      ->capture_default_str();
  wk->add_option("--devices", w->devices,
                 "Devices to serve: a spec such as cpu:2 (that many anonymous devices, which take a run's devices "
                 "in order) or ids / indexes of --cluster (matched by id)")
      ->delimiter(',');
  wk->add_option("--cluster", w->cluster_spec, "Cluster (doppler-cluster/1 file or preset; default cpu:4) the --devices "
                                               "ids or --name refer to; the run must use the same one");
  wk->add_option("--name", w->name, "This worker's name; with --cluster and no --devices it serves the devices "
                                    "whose `host` is this name");
  wk->add_option("--token", w->token, "Refuse runs that do not present this token (default: $DOPPLER_TOKEN)");
  wk->add_option("--streams", w->streams, "Concurrent ops per device (1 to 256)")->capture_default_str();
  wk->add_option("--backend", w->backend, "Kernel backend: cpu, emulate (needs named devices), null, cuda")->capture_default_str();
  wk->add_option("--tls-cert", w->tls_cert, "Serve over TLS (CAF's openssl module): this worker's PEM certificate "
                                            "(needs --tls-key and --tls-ca; runs must present a certificate --tls-ca verifies)");
  wk->add_option("--tls-key", w->tls_key, "TLS: the PEM key of --tls-cert");
  wk->add_option("--tls-ca", w->tls_ca, "TLS: PEM CA file a run's certificate must verify against");
  wk->callback([w] {
    check_streams_flag(w->streams);
    auto [host, port] = host_port(w->listen, "--listen", true);
    bool spec = w->devices.size() == 1 && w->devices[0].find(':') != std::string::npos;
    cluster c = spec ? make_preset(w->devices[0]) : load_cluster_or_preset(w->cluster_spec.empty() ? "cpu:4" : w->cluster_spec);
    if (spec && !w->cluster_spec.empty())
      throw error(errc::bad_argument, "", "--devices", "'" + w->devices[0] + "' is a device spec; with --cluster give device ids");
    std::vector<device_index> ds;
    if (spec) {
      for (device_index d = 0; d < c.device_count(); ++d) ds.push_back(d);
    } else if (!w->devices.empty()) {
      for (const auto& d : w->devices) ds.push_back(device_arg(c, d, "--devices"));
    } else if (!w->name.empty() && !w->cluster_spec.empty()) {
      for (device_index d = 0; d < c.device_count(); ++d)
        if (c[d].host == w->name) ds.push_back(d);
      if (ds.empty())
        throw error(errc::bad_argument, "", "--name", "no device of cluster '" + c.name() + "' has host '" + w->name + "'");
    } else {
      throw error(errc::bad_argument, "", "--devices", "give --devices (cpu:N or ids of --cluster) or --cluster and --name");
    }
    worker served(c, ds,
                  with_named_backend(engine_options{}, w->backend, c.device_count()).with_streams(w->streams)
                      .with_tls(w->tls_cert, w->tls_key, w->tls_ca),
                  worker_options{}.with_host(host).with_port(port).with_token(token_or_env(w->token))
                      .with_name(w->name).with_named(!spec));
    std::cout << fmt::format("listening on {}:{}{}\n", host, served.port(), w->tls_cert.empty() ? "" : " (TLS)");
    if (spec) {
      std::cout << fmt::format("serving {} anonymous devices (they take a run's devices in order)\n", ds.size());
    } else {
      std::cout << "serving devices";
      for (const auto& id : served.device_ids()) std::cout << " " << id;
      std::cout << " of cluster " << c.name() << " (matched by id)\n";
    }
    std::cout << std::flush;
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  });
}

}  // namespace doppler::cli
