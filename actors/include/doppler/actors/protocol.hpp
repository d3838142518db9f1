#pragma once
/// The whole conversation of one graph run, in one place (STYLE habit 3).
///
///   engine ──run──▶ dispatcher ──begin / execute / send / collect / end──▶ device (one per device)
///   (with device release, wc: execute only for the entries, no send / relay; devices send each other
///   finished outputs as tensor messages and release their own ops)
///   (execute, send, op_done and transfer_done carry batches: what piled up while the sender's mailbox
///   was busy; an idle sender sends at once; a device sends one tensor message per send order and
///   destination)
///                       ▲                                                    │  ▲
///                       └──────── op_done / transfer_done / op_failed ───────┘  │ tensor (peer copy)
///                                                                  worker threads ──kernel/copy done──┘
///
/// - The dispatcher owns one run: the begin handshake, the per-run timeout, a monitor on every device
///   (a device that dies ends the run), the completions (trace, busy time, the run's end), and in
///   `bsp` mode the barrier with its dependency counters.
/// - A device owns its buffers and a backend. `execute(op)` means "every input of op is in your
///   buffers": the op joins a ready queue ordered by the placement's priority and runs on one of the
///   device's `streams` worker threads (never on a CAF scheduler thread). `send(op, dst)` hands the
///   output of op to the device dst, which copies it into its own buffer on its copy thread.
/// - Device release (`wc`, run_plan::device_release, the default): each device holds the dependency
///   counters of its own ops. The dispatcher sends `execute` for the entries only; a device runs an
///   op when its last producer's output is in its buffers (computed there, or arrived by `tensor`),
///   and when an op finishes it sends the output to every other consuming device itself (`tensor`,
///   batched per destination; or the planned transfer's legs) — no `send` or `relay` from the
///   dispatcher. op_done / transfer_done still go to the dispatcher, batched. With device_release =
///   false (and always in `bsp`), the dispatcher holds the counters and sends every `execute`,
///   `send` and `relay` itself.
/// - Planned transfers (`transfers = planned`): for an op whose output has a `transfer_plan` in the run
///   plan, the dispatcher sends `relay(op)` to its device instead of `send`; chunks then travel device
///   to device along the plan's legs (`chunk`), each receiver copying the chunk into its own buffer on
///   its copy thread and forwarding it to the next legs; a destination reports `transfer_done` once it
///   holds every chunk.
/// - Times travel as steady-clock nanoseconds; the dispatcher makes them relative to its start.
///
/// Across processes a `worker` process publishes one *worker* actor on one TCP port (CAF's
/// middleman); an engine connects, says `hello(token)` and gets the worker's device handles back:
///
///   engine ──hello(token)──▶ worker ──worker_info{devices}──▶ engine   (then devices as above)
///   engine ──peer(host, port)──▶ worker ──"" or why not──▶ engine         (once per other worker)
///   engine ──probe(engine id)──▶ device ──"" or why not──▶ engine         (while it waits its turn)
///
/// - A worker's device serves one run at a time; `begin` from another engine's dispatcher is refused
///   (`device_busy`) while a run holds it, and after a 0.2 s turn of one engine while another
///   waits. The refused engine backs off and probes until every device would take its run.
/// - `peer`: the engine introduces each worker it attaches to every other worker it holds, and the
///   worker connects to that one itself. Devices of different workers then send tensors to each other
///   over their own connection; without it CAF routes their messages through the engine's process,
///   a route that ends with that process, so the next `doppler run` lost every tensor between workers.
///
/// - The learner actor (learner.hpp) serves any `learner_interface` (runtime/learner.hpp) by the
///   same protocol: `place` (greedy or exploring), `observe` (a measured makespan; the learner updates
///   before it answers), `train` (episodes in the simulator), `save` / `load` (state files), `name`.
///   Online learning (online.hpp) asks it for a placement, runs it, reports the makespan, repeats.
///
/// Every message type is registered in the `doppler_actors` type-id block below. The run plan (a
/// pointer to the immutable graph, placement and precomputed tables) is process-local; devices in
/// other processes get it as `plan_text` and build their own.

#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/learner.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/tensor.hpp>
#include <doppler/runtime/transfer_plan.hpp>

#include <doppler/actors/tensor_ref.hpp>

#include <caf/all.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace doppler::actors {

struct run_plan;  // run_plan.hpp: graph, placement, device handles, per-op tables (process-local)

/// A process-local, shared, immutable run plan.
struct plan_ref {
  std::shared_ptr<const run_plan> ptr;
};

/// The plan as data, for a device actor in another process (`worker`): the graph and the cluster in
/// their JSON formats, the placement, the device handles and the run's settings.
struct plan_text {
  std::uint64_t engine = 0;          ///< run_plan::engine
  std::uint64_t run = 0;
  std::string graph_json, cluster_json;
  std::vector<device_index> device;  ///< placement: device per op
  std::vector<op_index> order;       ///< placement: priority order (may be empty)
  std::vector<caf::actor> devices;   ///< the device actors of the run (typed handles, type-erased)
  std::uint8_t mode = 0, keep = 0;   ///< exec_mode, keep_outputs
  std::uint64_t seed = 0;
  bool record_trace = true;
  std::int64_t timeout_ms = 0;
  bool device_release = true;        ///< run_plan::device_release
};


/// A device finished op `op`: measured steady-clock interval on that device.
struct op_done_msg {
  std::uint64_t run = 0;
  op_index op = 0;
  device_index device = 0;
  std::int64_t start_ns = 0, end_ns = 0;
};

/// Device `dst` holds a copy of op's output that device `src` sent.
struct transfer_done_msg {
  std::uint64_t run = 0;
  op_index op = 0;
  device_index src = 0, dst = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint64_t bytes = 0;
};

/// Op `op` failed on `device` (its kernel threw, or the device could not run it).
struct op_failed_msg {
  std::uint64_t run = 0;
  op_index op = 0;
  device_index device = 0;
  std::string what;
};

/// A worker thread finished a kernel (device-internal: worker → its device actor).
struct kernel_done_msg {
  std::uint64_t run = 0;
  op_index op = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  tensor_ref out;
};

/// A worker thread finished copying a received tensor (device-internal).
struct copy_done_msg {
  std::uint64_t run = 0;
  op_index op = 0;
  device_index src = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  tensor_ref copy;
};

/// A worker thread copied chunk `leg`'s range of a planned transfer into the device's buffer
/// (device-internal).
struct chunk_copied_msg {
  std::uint64_t run = 0;
  op_index op = 0;
  std::uint32_t leg = 0;
  std::int64_t start_ns = 0, end_ns = 0;
};

/// What a tensor's planned transfer needs from the comm planner: source, destinations, bytes.
struct transfer_request {
  device_index src = 0;
  std::vector<device_index> dsts;  ///< sorted, distinct
  double bytes = 0;
};

/// The comm planner's answer for a batch of requests (process-local: plans are shared, immutable;
/// nullptr = copy directly).
struct transfer_plans {
  std::vector<std::shared_ptr<const transfer_plan>> plans;
};

/// One output a device hands back at the end of a run.
struct op_output {
  op_index op = 0;
  tensor_ref value;
};

/// The error code of a worker's device refusing a plan because it serves another engine's run (the
/// message says why: "device busy: ..."). The dispatcher marks such a run `devices_busy`; the engine
/// then waits and tries again.
inline constexpr caf::sec device_busy = caf::sec::unavailable_or_would_block;

/// What a run produced: the measured trace and its summary, the outputs, or why it failed.
struct run_report {
  bool ok = false;
  std::string failure;            ///< empty when ok: "op 'h' (index 7) on device cpu1: <reason>"
  std::uint32_t failed_op = 0;    ///< meaningful when !ok and failure names an op
  std::uint32_t failed_device = 0;
  bool timed_out = false;         ///< the run failed because it passed its timeout
  /// The run failed before it began because a worker's device was serving another engine's run
  /// (`device_busy`): the engine tries again (engine_options::busy_wait).
  bool devices_busy = false;
  double makespan = 0;                  ///< seconds, first dispatch → last completion
  std::vector<double> busy;             ///< per device: seconds with ≥ 1 op running
  /// Bytes as the graph sizes each tensor (op::bytes; what the simulator counts): per directed link
  /// of the cluster, and in all (a planned transfer: every leg's chunk).
  std::vector<double> link_bytes;
  std::uint64_t bytes_moved = 0;
  std::uint64_t transfers = 0;          ///< tensor copies between devices
  std::vector<trace_event> events;      ///< when the run records a trace
  std::vector<op_output> outputs;
};

/// A worker's answer to `hello`: the devices it serves, or why it refused the caller.
struct worker_info {
  bool ok = false;
  std::string refusal;                ///< when !ok: e.g. "wrong token"
  std::string name;                   ///< the worker's name (`--name`; default: its cluster's name)
  /// true: `ids` are device ids of a cluster both sides load (mapped by id); false: the worker serves
  /// `cpu:N`-style anonymous devices, which take the run's devices in order.
  bool named = false;
  std::vector<std::string> ids;       ///< one per served device
  std::vector<caf::actor> devices;    ///< the device actors (device_actor handles, type-erased)
  /// Non-empty when the worker's kernels are emulated: its own cluster (doppler-cluster/1 text), whose
  /// rates time them; a run on another cluster is refused (its devices would be timed wrongly).
  std::string emulated_cluster;
};

/// What the learner actor is asked about: a graph on a cluster (process-local, shared, immutable).
struct learn_problem {
  std::shared_ptr<const graph> g;
  std::shared_ptr<const cluster> c;
};

}  // namespace doppler::actors

// ---- atoms (≤ 10 characters each) ---------------------------------------------------------------
CAF_ADD_ATOM(doppler_actors, doppler::actors, begin_atom, "dp_begin")
CAF_ADD_ATOM(doppler_actors, doppler::actors, execute_atom, "dp_exec")
CAF_ADD_ATOM(doppler_actors, doppler::actors, send_atom, "dp_send")
CAF_ADD_ATOM(doppler_actors, doppler::actors, tensor_atom, "dp_tensor")
CAF_ADD_ATOM(doppler_actors, doppler::actors, collect_atom, "dp_collect")
CAF_ADD_ATOM(doppler_actors, doppler::actors, end_atom, "dp_end")
CAF_ADD_ATOM(doppler_actors, doppler::actors, run_atom, "dp_run")
CAF_ADD_ATOM(doppler_actors, doppler::actors, timeout_atom, "dp_timeout")
CAF_ADD_ATOM(doppler_actors, doppler::actors, bytes_atom, "dp_bytes")
CAF_ADD_ATOM(doppler_actors, doppler::actors, relay_atom, "dp_relay")
CAF_ADD_ATOM(doppler_actors, doppler::actors, chunk_atom, "dp_chunk")
CAF_ADD_ATOM(doppler_actors, doppler::actors, plan_atom, "dp_plan")
CAF_ADD_ATOM(doppler_actors, doppler::actors, stats_atom, "dp_stats")
CAF_ADD_ATOM(doppler_actors, doppler::actors, hello_atom, "dp_hello")
CAF_ADD_ATOM(doppler_actors, doppler::actors, peer_atom, "dp_peer")
CAF_ADD_ATOM(doppler_actors, doppler::actors, probe_atom, "dp_probe")
CAF_ADD_ATOM(doppler_actors, doppler::actors, place_atom, "dp_place")
CAF_ADD_ATOM(doppler_actors, doppler::actors, observe_atom, "dp_observe")
CAF_ADD_ATOM(doppler_actors, doppler::actors, train_atom, "dp_train")
CAF_ADD_ATOM(doppler_actors, doppler::actors, save_atom, "dp_save")
CAF_ADD_ATOM(doppler_actors, doppler::actors, load_atom, "dp_load")
CAF_ADD_ATOM(doppler_actors, doppler::actors, name_atom, "dp_name")

namespace doppler::actors {

/// A device: its buffers, a backend, a ready queue and `streams` worker threads.
using device_actor = caf::typed_actor<
    /// Prepare for run `plan` (buffers, tables); answered once ready.
    caf::replies_to<begin_atom, plan_ref>::with<caf::ok_atom>,
    /// The same for a device in another process: it parses the graph and cluster and builds the plan.
    caf::replies_to<begin_atom, plan_text>::with<caf::ok_atom>,
    /// Would a run of engine `engine` (run_plan::engine) be taken now? "" yes, else why not (the
    /// `device_busy` refusal begin would give; engine then counts as waiting for its turn). An
    /// engine that waits asks this instead of sending its plan again and again.
    caf::replies_to<probe_atom, std::uint64_t>::with<std::string>,
    /// Every input of these ops is in this device's buffers: queue them by priority and run them.
    /// (The dispatcher batches the ops that became ready while its mailbox was busy.)
    caf::reacts_to<execute_atom, std::uint64_t, std::vector<op_index>>,
    /// Send the output of ops[k] (in this device's buffers) to device dsts[k], for every k.
    caf::reacts_to<send_atom, std::uint64_t, std::vector<op_index>, std::vector<device_index>>,
    /// Peer tensors arrive from device src (ops[k]'s output is values[k]; one message per send
    /// order and destination): copy them into this device's buffers, then report transfer_done.
    caf::reacts_to<tensor_atom, std::uint64_t, device_index, std::vector<op_index>, std::vector<tensor_ref>>,
    /// Start the planned transfers of these ops' outputs (the run plan has their transfer plans).
    caf::reacts_to<relay_atom, std::uint64_t, std::vector<op_index>>,
    /// Leg `leg` of op's planned transfer: its chunk is in the sender's tensor; copy, forward, count.
    caf::reacts_to<chunk_atom, std::uint64_t, op_index, std::uint32_t, tensor_ref>,
    caf::reacts_to<chunk_copied_msg>,
    /// Worker threads report back.
    caf::reacts_to<kernel_done_msg>, caf::reacts_to<op_failed_msg>, caf::reacts_to<copy_done_msg>,
    /// Hand over the outputs this device keeps (sinks, or all with keep-all).
    caf::replies_to<collect_atom, std::uint64_t>::with<std::vector<op_output>>,
    /// Release every buffer of run.
    caf::reacts_to<end_atom, std::uint64_t>,
    /// Bytes currently held in buffers (tests check that a finished or failed run frees them).
    caf::replies_to<bytes_atom>::with<std::uint64_t>>;

/// The dispatcher of one run.
using dispatcher_actor = caf::typed_actor<
    /// Run the plan once; answered with the report (ok or failure) — never left unanswered.
    caf::replies_to<run_atom>::with<run_report>,
    /// Ops finished (a device batches the completions it has while its own mailbox is busy).
    caf::reacts_to<std::vector<op_done_msg>>, caf::reacts_to<std::vector<transfer_done_msg>>,
    caf::reacts_to<op_failed_msg>,
    /// The per-run timeout fired.
    caf::reacts_to<timeout_atom, std::uint64_t>>;

/// The comm planner (comm_planner.hpp): plans on one topology, cached; never stalls a run (a miss
/// is answered with a greedy plan at once, a slower method refines it in the background).
using comm_planner_actor = caf::typed_actor<
    /// The planned transfers of a run's tensors, one answer per request (nullptr: copy directly).
    caf::replies_to<plan_atom, std::vector<transfer_request>>::with<transfer_plans>,
    /// A `doppler-demand/1` document planned on the actor's topology: the `doppler-schedule/1` text.
    caf::replies_to<plan_atom, std::string>::with<std::string>,
    /// Cache statistics: hits, misses, planner failures, plans refined in the background.
    caf::replies_to<stats_atom>::with<std::vector<std::uint64_t>>>;
/// The one actor a worker process publishes: the handshake that hands out its device actors.
using worker_actor = caf::typed_actor<
    /// hello(token): the served devices when the token matches the worker's (or it has none).
    caf::replies_to<hello_atom, std::string>::with<worker_info>,
    /// peer(host, port): connect to the worker listening there; "" once connected, else the reason.
    caf::replies_to<peer_atom, std::string, std::uint16_t>::with<std::string>>;

/// The learner (learner.hpp): any `learner_interface`, one request at a time, on its own thread
/// (updates may take a while). A learner's `doppler::error` comes back as a caf::error whose context
/// is (errc as int32, message); `learner_error_text` (learner.hpp) reads it.
using learner_actor = caf::typed_actor<
    /// A placement of the problem: greedy (false) or exploring (true), with an exploration seed.
    caf::replies_to<place_atom, learn_problem, bool, std::uint64_t>::with<placement>,
    /// The measured makespan (seconds) of a placement; answered after the learner has updated, with
    /// what the update did (`learner_interface::last_update`).
    caf::replies_to<observe_atom, learn_problem, placement, double>::with<learner_update>,
    /// Train this many episodes in the simulator.
    caf::replies_to<train_atom, learn_problem, std::int32_t>::with<learner_train_report>,
    /// Write / read the learner's state file.
    caf::replies_to<save_atom, std::string>::with<caf::ok_atom>,
    caf::replies_to<load_atom, std::string>::with<caf::ok_atom>,
    /// The learner's registry name.
    caf::replies_to<name_atom>::with<std::string>>;

// ---- inspect overloads (CAF 0.17 form) ----------------------------------------------------------

/// A tensor travels as its shape and its values as raw bytes (one memcpy each way: CAF 0.17 packs
/// floats one at a time, ~4x slower). Raw floats need hosts of one byte order (little-endian here).
static_assert(std::endian::native == std::endian::little, "tensor_ref sends floats as little-endian bytes");
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tensor_ref& x) {
  shape_t shape;
  std::vector<char> raw;
  if constexpr (Inspector::reads_state) {
    std::shared_ptr<const tensor> host;
    try {
      host = x.host();  // device memory goes as its host copy
    } catch (const std::exception& e) {  // a failed device copy is a failed message, not a crash
      if constexpr (std::is_same_v<typename Inspector::result_type, caf::error>)
        return caf::make_error(caf::sec::invalid_argument, std::string("tensor_ref: device copy failed: ") + e.what());
    }
    if (host) {
      shape = host->shape();
      auto values = host->values();
      raw.resize(values.size() * sizeof(float));
      if (!raw.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    }
  }
  return f(caf::meta::type_name("tensor_ref"), shape, raw,
           caf::meta::load_callback([&]() -> caf::error {
             x.mem.reset();
             if (shape.empty() && raw.empty()) {  // the empty tensor of no-op kernels
               x.ptr = std::make_shared<const tensor>();
               return caf::none;
             }
             if (raw.size() % sizeof(float) != 0)
               return caf::make_error(caf::sec::invalid_argument, "tensor_ref: values are not whole floats");
             std::vector<float> values(raw.size() / sizeof(float));
             if (!values.empty()) std::memcpy(values.data(), raw.data(), raw.size());
             try {  // a shape that does not match its values is a bad message, not a crash
               x.ptr = std::make_shared<const tensor>(std::move(shape), std::move(values));
             } catch (const std::exception&) {
               return caf::make_error(caf::sec::invalid_argument, "tensor_ref: shape does not match values");
             }
             return caf::none;
           }));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plan_text& x) {
  return f(caf::meta::type_name("plan_text"), x.engine, x.run, x.graph_json, x.cluster_json, x.device, x.order,
           x.devices, x.mode, x.keep, x.seed, x.record_trace, x.timeout_ms, x.device_release);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_info& x) {
  return f(caf::meta::type_name("worker_info"), x.ok, x.refusal, x.name, x.named, x.ids, x.devices,
           x.emulated_cluster);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_done_msg& x) {
  return f(caf::meta::type_name("op_done_msg"), x.run, x.op, x.device, x.start_ns, x.end_ns);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_done_msg& x) {
  return f(caf::meta::type_name("transfer_done_msg"), x.run, x.op, x.src, x.dst, x.start_ns,
           x.end_ns, x.bytes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_failed_msg& x) {
  return f(caf::meta::type_name("op_failed_msg"), x.run, x.op, x.device, x.what);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kernel_done_msg& x) {
  return f(caf::meta::type_name("kernel_done_msg"), x.run, x.op, x.start_ns, x.end_ns, x.out);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, copy_done_msg& x) {
  return f(caf::meta::type_name("copy_done_msg"), x.run, x.op, x.src, x.start_ns, x.end_ns, x.copy);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chunk_copied_msg& x) {
  return f(caf::meta::type_name("chunk_copied_msg"), x.run, x.op, x.leg, x.start_ns, x.end_ns);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_request& x) {
  return f(caf::meta::type_name("transfer_request"), x.src, x.dsts, x.bytes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_output& x) {
  return f(caf::meta::type_name("op_output"), x.op, x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_report& x) {
  return f(caf::meta::type_name("run_report"), x.ok, x.failure, x.failed_op, x.failed_device,
           x.timed_out, x.devices_busy, x.makespan, x.busy, x.link_bytes, x.bytes_moved, x.transfers, x.events, x.outputs);
}

}  // namespace doppler::actors

namespace doppler {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trace_event& x) {
  return f(caf::meta::type_name("trace_event"), x.what, x.id, x.where, x.dst, x.start, x.end, x.bytes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, placement& x) {
  return f(caf::meta::type_name("placement"), x.device, x.order, x.method);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, learner_train_report& x) {
  return f(caf::meta::type_name("learner_train_report"), x.episodes, x.best_makespan, x.greedy_makespan);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, learner_update& x) {
  return f(caf::meta::type_name("learner_update"), x.updated, x.loss, x.episodes);
}
}  // namespace doppler

/// The plan is process-local (a pointer to an immutable graph); remote devices get `plan_text`.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(doppler::actors::plan_ref)
/// Transfer plans are process-local too (planned transfers run between devices of one process).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(doppler::actors::transfer_plans)
/// Learner problems are process-local (a learner in another process would need the graph as JSON).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(doppler::actors::learn_problem)

CAF_BEGIN_TYPE_ID_BLOCK(doppler_actors, caf::first_custom_type_id)
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::trace_event))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::tensor_ref))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::plan_text))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::op_done_msg))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<doppler::actors::op_done_msg>))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::transfer_done_msg))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<doppler::actors::transfer_done_msg>))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::op_failed_msg))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::kernel_done_msg))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::copy_done_msg))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::op_output))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<doppler::actors::op_output>))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::run_report))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<doppler::op_index>))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::chunk_copied_msg))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::transfer_request))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<doppler::actors::transfer_request>))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<std::uint64_t>))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::actors::worker_info))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::placement))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::learner_train_report))
  CAF_ADD_TYPE_ID(doppler_actors, (std::vector<doppler::actors::tensor_ref>))
  CAF_ADD_TYPE_ID(doppler_actors, (doppler::learner_update))
CAF_END_TYPE_ID_BLOCK(doppler_actors)
