#pragma once
/// The embedding API: an engine owns an actor system and one device actor per device of a cluster;
/// `run` executes a placed graph on them (work-conserving, or bsp for comparison) N times and returns
/// the outputs, the measured traces and makespans. No CAF (and no Torch) in this header.
///
///   doppler::engine e(doppler::make_preset("cpu:4"));
///   auto r = e.run(g, p, doppler::run_options{}.with_repeat(5));
///   std::cout << r.mean_makespan() << " s\n";

#include <doppler/actors/fwd.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/tensor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace doppler {

/// How a run moves a tensor that several devices consume (or whose route runs through another
/// device): `direct` copies it to each destination; `planned` asks the engine's comm-planner actor
/// (comm_planner.hpp) for a store-and-forward multicast plan and executes it chunk by chunk.
struct transfer_options {
  std::string mode = "direct";      ///< direct | planned
  std::string method = "greedy";    ///< comm planner method for a request not in its cache
  std::string refine;               ///< optional slower method refining cached plans in the background
  double chunk_bytes = 1 << 20;     ///< target chunk size
  std::uint32_t max_chunks = 8;     ///< most chunks per tensor
  double time_limit = 2;            ///< seconds per solve
  std::chrono::milliseconds wait{10000};  ///< a run waits this long for plans, then copies directly
};

struct engine_options {
  int streams = 1;                   ///< ops each device runs at once (its worker threads)
  std::string backend = "cpu";       ///< backend by name: cpu, null, emulate
  cost_model costs;                  ///< what `emulate` holds kernels and transfers for
  std::shared_ptr<actors::backend> custom_backend;  ///< overrides `backend` (tests, other devices)
  std::chrono::milliseconds timeout{120000};        ///< default per-run timeout
  /// A worker's devices serve one run at a time. When a run finds one serving another engine's run,
  /// it gives back the devices it took, waits (randomized, growing back-off: 2 ms to 50 ms) and tries
  /// again, for up to this long; then it fails with the device's refusal. 0: fail at once. Engines
  /// take turns of at least 0.2 s on a device when several want it (docs/runtime.md).
  std::chrono::milliseconds busy_wait{60000};
  std::size_t scheduler_threads = 0; ///< CAF scheduler threads (0: CAF's default, one per core)
  /// CAF scheduler: `stealing` (CAF's default: per-thread queues, workers poll and sleep) or
  /// `sharing` (one queue, waiters notified: about half the cross-device wait on an idle host).
  std::string scheduler = "stealing";
  bool network = false;              ///< load CAF's middleman: devices in other processes (`attach_worker`, `worker`)
  transfer_options transfers;        ///< direct or planned multicast transfers
  /// Devices made slower by a factor (make_straggler_backend around the backend): device → factor in [1, 1e6] (a device's factors multiply; their product too).
  std::vector<std::pair<device_index, double>> stragglers;
  /// TLS for `network` (CAF's openssl module): this side's PEM certificate and key, and the CA file
  /// peers' certificates must verify against (mutual authentication). All empty: plain TCP.
  std::string tls_certificate, tls_key, tls_cafile;

  engine_options& with_streams(int s) { streams = s; return *this; }
  engine_options& with_backend(std::string name) { backend = std::move(name); return *this; }
  engine_options& with_costs(cost_model cm) { costs = std::move(cm); return *this; }
  engine_options& with_custom_backend(std::shared_ptr<actors::backend> b) { custom_backend = std::move(b); return *this; }
  engine_options& with_timeout(std::chrono::milliseconds t) { timeout = t; return *this; }
  engine_options& with_busy_wait(std::chrono::milliseconds t) { busy_wait = t; return *this; }
  engine_options& with_scheduler_threads(std::size_t n) { scheduler_threads = n; return *this; }
  engine_options& with_network(bool on = true) { network = on; return *this; }
  engine_options& with_scheduler(std::string name) { scheduler = std::move(name); return *this; }
  engine_options& with_transfers(transfer_options t) { transfers = std::move(t); return *this; }
  engine_options& with_straggler(device_index d, double factor) {
    stragglers.emplace_back(d, factor);
    return *this;
  }
  engine_options& with_tls(std::string certificate, std::string key, std::string cafile) {
    tls_certificate = std::move(certificate), tls_key = std::move(key), tls_cafile = std::move(cafile);
    return *this;
  }
  bool tls() const noexcept { return !tls_certificate.empty() || !tls_key.empty() || !tls_cafile.empty(); }
};

struct run_options {
  exec_mode mode = exec_mode::wc;
  int repeat = 1;                    ///< runs of the same placement
  std::uint64_t seed = 0;            ///< fills inputs (the reference run with this seed must agree)
  bool trace = true;                 ///< record events (for chrome_trace)
  actors::keep_outputs keep = actors::keep_outputs::exits;
  std::optional<std::chrono::milliseconds> timeout;  ///< overrides engine_options::timeout
  /// When a worker is lost mid-run, re-place its devices' ops on the surviving devices and run that
  /// repeat again from the start (instead of throwing); also re-places ops of devices lost earlier.
  bool failover = false;

  run_options& with_mode(exec_mode m) { mode = m; return *this; }
  run_options& with_repeat(int n) { repeat = n; return *this; }
  run_options& with_seed(std::uint64_t s) { seed = s; return *this; }
  run_options& with_trace(bool on = true) { trace = on; return *this; }
  run_options& keep_all() { keep = actors::keep_outputs::all; return *this; }
  run_options& with_timeout(std::chrono::milliseconds t) { timeout = t; return *this; }
  run_options& with_failover(bool on = true) { failover = on; return *this; }
};

/// What `engine::run` returns.
struct run_result {
  /// One entry per op of the graph, from the last repeat: the op's output where it was kept (the
  /// exits, or all ops with keep_all), else an empty tensor — the layout of `execute_reference`.
  std::vector<tensor> outputs;
  /// One measured run per repeat, as the simulator reports one: makespan, busy seconds per device,
  /// bytes per directed link, and (with trace) the op and transfer events. `chrome_trace(g, c, r,
  /// "cpu")` writes one.
  std::vector<sim_result> runs;
  std::vector<std::uint64_t> bytes_moved;  ///< per repeat: bytes copied between devices
  std::vector<std::uint64_t> transfers;    ///< per repeat: tensor copies between devices
  std::size_t planned_tensors = 0;         ///< tensors moved by a transfer plan (per run)
  /// With `failover`: the failures survived by re-placing a lost worker's ops (empty: none).
  std::vector<std::string> failovers;
  /// Seconds spent waiting for workers' devices that served another engine's run (busy_wait), the
  /// runs refused as busy (each sent its plan), and the probes in between (a few bytes each).
  double busy_waited = 0;
  std::size_t busy_tries = 0;
  std::size_t busy_probes = 0;

  std::vector<double> makespans() const;
  double mean_makespan() const;
  double min_makespan() const;
  double max_makespan() const;
};

/// A run that did not complete: a kernel threw, a device actor died, or the timeout fired.
class run_failure : public std::runtime_error {
 public:
  run_failure(std::string what, std::optional<op_index> op, std::optional<device_index> device,
              bool timed_out = false)
      : std::runtime_error(std::move(what)), op_(op), device_(device), timed_out_(timed_out) {}
  std::optional<op_index> op() const noexcept { return op_; }
  std::optional<device_index> device() const noexcept { return device_; }
  /// The run passed its timeout. A kernel may still be running on a device: kernels cannot be
  /// cancelled, so destroying the engine waits for it (a CLI that is about to exit need not).
  bool timed_out() const noexcept { return timed_out_; }

 private:
  std::optional<op_index> op_;
  std::optional<device_index> device_;
  bool timed_out_ = false;
};

/// Where and how a `worker` serves its devices.
struct worker_options {
  std::string host = "127.0.0.1";  ///< address to listen on (loopback by default)
  std::uint16_t port = 0;          ///< 0: a free port (`worker::port()` tells which)
  std::string token;               ///< non-empty: `hello` must carry it, else the caller is refused
  std::string name;                ///< reported to callers (default: the cluster's name)
  /// false: the devices are anonymous (`doppler worker --devices cpu:2`) and take a run's devices in
  /// order; true: they are the cluster devices of the same id in the run's cluster.
  bool named = true;

  worker_options& with_host(std::string h) { host = std::move(h); return *this; }
  worker_options& with_port(std::uint16_t p) { port = p; return *this; }
  worker_options& with_token(std::string t) { token = std::move(t); return *this; }
  worker_options& with_name(std::string n) { name = std::move(n); return *this; }
  worker_options& with_named(bool on) { named = on; return *this; }
};

/// Device actors served to other processes over TCP (CAF's middleman): a worker process spawns some
/// devices of a cluster and publishes one worker actor on one port; an engine elsewhere
/// `attach_worker`s it (handshake `hello(token)` → the device handles) and uses those devices.
class worker {
 public:
  /// Spawns device actors for `devices` of `c` and publishes the worker actor on w.host:w.port.
  /// Throws `doppler::error` (naming host and port) when it cannot listen there.
  worker(cluster c, std::vector<device_index> devices, engine_options opt = {}, worker_options w = {});
  ~worker();
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;
  /// The TCP port the worker listens on.
  std::uint16_t port() const noexcept;
  /// Ids of the served devices, in order.
  std::vector<std::string> device_ids() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// An actor system with one device actor per device of a cluster. Runs are sequential (one at a
/// time per engine); the engine stays usable after a failed run (dead devices are respawned).
class engine {
 public:
  explicit engine(cluster c, engine_options opt = {});
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// Runs `p` of `g` `opt.repeat` times. Throws `doppler::error` for an invalid placement and
  /// `run_failure` when a run fails (naming the op and the device).
  run_result run(const graph& g, const placement& p, const run_options& opt = {});
  /// The same without copying the graph.
  run_result run(std::shared_ptr<const graph> g, const placement& p, const run_options& opt = {});

  const cluster& cluster_model() const noexcept;
  const engine_options& options() const noexcept;
  /// Bytes the device actors hold in their buffers now (0 between runs).
  std::uint64_t bytes_held();
  /// Connects to the `worker` at host:port (needs `network`), says hello with `token` and uses its
  /// devices in place of local ones: named devices by id, anonymous ones the next devices of the
  /// cluster in order that are not on another worker (devices this worker served before are reused,
  /// so a restarted worker is reattached in place). Returns the cluster devices it now serves.
  /// Throws `run_failure` naming host:port when the worker cannot be reached, does not answer or
  /// refuses the token, and `doppler::error` when its devices do not fit the cluster.
  std::vector<device_index> attach_worker(const std::string& host, std::uint16_t port, const std::string& token = {});
  /// Where device d runs: "" for this process, else "worker HOST:PORT".
  std::string location(device_index d);
  /// Fault injection: kills device d's actor now (a run in flight fails naming it; the next run
  /// respawns it).
  void kill_device(device_index d);
  /// Spawns a learner actor serving `l` in this engine's actor system (online.hpp, learner.hpp);
  /// the engine stops it when it is destroyed. Throws `errc::bad_argument` for a null learner.
  learner_client spawn_learner(std::shared_ptr<learner_interface> l);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace doppler
