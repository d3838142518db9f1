// The embedding API: an actor system, one device actor per device, a dispatcher per run; devices of
// `worker`s (worker.cpp) attached over CAF's middleman.

#include <doppler/actors/comm_planner.hpp>
#include <doppler/actors/device.hpp>
#include <doppler/actors/dispatcher.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/actors/learner.hpp>
#include <doppler/actors/run_plan.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/sim.hpp>

#include "system_config.hpp"

#include <caf/io/all.hpp>
#ifdef DOPPLER_HAVE_CAF_OPENSSL
#include <caf/openssl/all.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <thread>

namespace doppler {

namespace {
/// A random nonzero 64-bit id (an engine's, and where its run ids start).
std::uint64_t random_id() {
  std::random_device rd;
  std::uint64_t v = 0;
  while (v == 0) v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return v;
}
}  // namespace

struct engine::impl {
  engine_options opt;
  std::shared_ptr<const cluster> c;
  std::shared_ptr<actors::backend> kernels;
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::mutex mutex;  // guards devices, where
  std::vector<actors::device_actor> devices;
  std::vector<std::string> where;  // per device: "" (here) or "worker HOST:PORT"
  std::vector<bool> lost;          // a worker's device that no longer answers (until attached again)
  std::map<std::string, std::pair<std::string, std::uint16_t>> workers;  // "worker HOST:PORT" -> its address
  std::vector<actors::device_actor> stand_in;  // per lost device: a local device of failover runs (no ops)
  /// Run ids start at a random value: a worker's device drops messages of runs other than its current
  /// one by this id, and a kernel left running by another engine's (killed or timed-out) run must not
  /// pass for this engine's run of the same number. Engines that all started at 1 collided on their
  /// first run: a dead coordinator's matmul finished into the next coordinator's run.
  std::atomic<std::uint64_t> next_run{(random_id() >> 1) | 1};  // nonzero, with room to count up
  std::atomic<bool> suspect{false};  // a device may be dead (killed, or a run failed)
  std::optional<actors::comm_planner_actor> planner;  // transfers = planned
  std::vector<actors::learner_actor> learners;         // spawn_learner: stopped with the engine
  /// The last run's plan (guarded by mutex): a run of the same graph and placement copies its tables
  /// instead of checking and computing them again (declared after sys: released before it).
  std::shared_ptr<const actors::run_plan> last_plan;
  std::minstd_rand backoff_rng{std::random_device{}()};  // guarded by mutex
  /// This engine's id in its plans: a worker's devices take turns between engines (device.cpp).
  const std::uint64_t id = random_id();

  /// How long to wait before try `tries` + 1 of one run for devices another engine's run holds: 2 ms
  /// doubling to 50 ms, times a random factor in [0.5, 1.5) so that two engines that collided do not
  /// collide again. (A device's turn passes when the waiting engine tries: device.cpp.)
  std::chrono::steady_clock::duration busy_backoff(std::size_t tries) {
    double base = 0.002 * std::pow(2.0, static_cast<double>(std::min<std::size_t>(tries, 16) - 1));
    double factor;
    {
      std::lock_guard lock(mutex);
      factor = std::uniform_real_distribution<double>(0.5, 1.5)(backoff_rng);
    }
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::min(base, 0.05) * factor));
  }

  /// True when every live device of a worker would take a run of this engine now (probe; a device
  /// that does not answer counts as free: the run itself then reports what is wrong with it).
  bool workers_free() {
    std::vector<actors::device_actor> remote;
    {
      std::lock_guard lock(mutex);
      for (device_index d = 0; d < devices.size(); ++d)
        if (!where[d].empty() && !lost[d]) remote.push_back(devices[d]);
    }
    caf::scoped_actor self{sys};
    bool all_free = true;
    for (auto& d : remote)
      self->request(d, std::chrono::seconds(1), actors::probe_atom::value, id)
          .receive([&](const std::string& why) { all_free = all_free && why.empty(); }, [](caf::error&) {});
    return all_free;
  }

  /// A run found a worker's device busy and the wait that began at `since` is not over: backs off and
  /// probes until every worker device would take a run of this engine (rather than sending the plan
  /// again) or opt.busy_wait has passed since `since` (the next try then fails and reports). `tries`
  /// counts this wait's back-offs; `probes` the probes sent.
  void wait_for_turn(std::chrono::steady_clock::time_point since, std::size_t& tries, std::size_t& probes) {
    for (;;) {
      ++tries;  // >= 1 from here: the caller is waiting
      auto left = opt.busy_wait - (std::chrono::steady_clock::now() - since);
      if (left <= std::chrono::steady_clock::duration::zero()) return;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(busy_backoff(tries), left));
      ++probes;
      if (workers_free()) return;
    }
  }

  impl(cluster cl, engine_options o)
      : opt(std::move(o)),
        c(std::make_shared<const cluster>(std::move(cl))),
        kernels(opt.custom_backend ? opt.custom_backend : actors::make_backend(opt.backend, c, opt.costs)),
        sys(actors::configure(cfg, opt)) {
    for (auto [d, f] : opt.stragglers)
      if (d >= c->device_count())
        throw error(errc::bad_argument, "engine: straggler device index " + std::to_string(d) + " is not in cluster '" +
                                            c->name() + "'");
    if (!opt.stragglers.empty()) kernels = actors::make_straggler_backend(kernels, opt.stragglers);
    if (opt.busy_wait.count() < 0) throw error(errc::bad_argument, "engine: busy_wait must be >= 0");
    if (opt.streams < 1 || opt.streams > max_streams)  // each stream is a worker thread per device
      throw error(errc::bad_argument, "engine: streams must be in [1, " + std::to_string(max_streams) + "], got " +
                                          std::to_string(opt.streams));
    const auto& t = opt.transfers;
    if (t.mode == "planned") {
      auto known = comm::method_names();
      for (const std::string& m : {t.method, t.refine})
        if (!m.empty() && std::find(known.begin(), known.end(), m) == known.end())
          throw error(errc::bad_argument, "engine: unknown comm planner method \"" + m + "\"");
      actors::comm_planner_config pc;
      pc.multicast = comm::multicast_options{}
                         .with_method(t.method)
                         .with_chunk_bytes(t.chunk_bytes)
                         .with_max_chunks(t.max_chunks)
                         .with_time_limit(t.time_limit);
      pc.refine = t.refine;
      planner = actors::spawn_comm_planner(sys, c, pc);
    } else if (t.mode != "direct") {
      throw error(errc::bad_argument, "engine: unknown transfers mode \"" + t.mode + "\" (direct, planned)");
    }
    for (device_index d = 0; d < c->device_count(); ++d) devices.push_back(spawn(d));
    where.assign(c->device_count(), {});
    lost.assign(c->device_count(), false);
    stand_in.resize(c->device_count());
  }

  /// Asks the comm planner for the planned transfers of a run (tensors with several destination
  /// devices, or routed through another device). Devices in other processes, a planner that does
  /// not answer in time or fails: every tensor is copied directly (with a warning).
  void plan_transfers(actors::run_plan& plan) {
    if (!planner) return;
    caf::scoped_actor self{sys};
    for (const auto& d : plan.devices)
      if (d.node() != self->node()) return;  // plans are process-local
    const graph& g = *plan.g;
    std::vector<actors::transfer_request> reqs;
    std::vector<op_index> ops;
    for (op_index i = 0; i < g.size(); ++i) {
      auto dests = plan.remote_dests(i);
      if (g[i].bytes <= 0 || !wants_plan(*c, plan.device_of(i), dests)) continue;
      reqs.push_back({plan.device_of(i), std::vector<device_index>(dests.begin(), dests.end()), g[i].bytes});
      ops.push_back(i);
    }
    if (reqs.empty()) return;
    self->request(*planner, opt.transfers.wait, actors::plan_atom::value, reqs)
        .receive(
            [&](actors::transfer_plans& tp) {
              plan.transfer_plans.assign(g.size(), nullptr);
              for (std::size_t k = 0; k < ops.size() && k < tp.plans.size(); ++k) {
                const auto& p = tp.plans[k];
                if (p && p->source == reqs[k].src && p->destinations == reqs[k].dsts) plan.transfer_plans[ops[k]] = p;
              }
            },
            [&](caf::error& err) {
              std::cerr << "doppler: warning: the comm planner did not answer (" << sys.render(err)
                        << "); copying tensors directly\n";
            });
  }

  ~impl() {  // only the devices of this process: a worker's devices outlive the engine
    for (device_index d = 0; d < devices.size(); ++d) {
      if (where[d].empty()) caf::anon_send_exit(devices[d], caf::exit_reason::user_shutdown);
      if (stand_in[d]) caf::anon_send_exit(stand_in[d], caf::exit_reason::user_shutdown);
    }
    if (planner) caf::anon_send_exit(*planner, caf::exit_reason::user_shutdown);
    for (auto& l : learners) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
  }

  actors::device_actor spawn(device_index d) {
    actors::device_options o;
    o.index = d;
    o.streams = opt.streams;
    o.kernels = kernels;
    return actors::spawn_device(sys, std::move(o));
  }

  /// Respawns every local device actor that no longer answers, and marks a worker's device that no
  /// longer answers as lost (it stays lost — a run on it fails naming the worker — until
  /// `attach_worker` reconnects it). Returns the devices newly found lost.
  std::vector<device_index> heal() {
    caf::scoped_actor self{sys};
    std::lock_guard lock(mutex);
    std::vector<device_index> newly_lost;
    for (device_index d = 0; d < devices.size(); ++d) {
      if (lost[d]) continue;
      bool alive = false;
      if (where[d].empty()) {
        self->request(devices[d], std::chrono::seconds(5), actors::bytes_atom::value)
            .receive([&](std::uint64_t) { alive = true; }, [&](caf::error&) { alive = false; });
      } else {
        // A proxy whose connection is gone drops requests silently (CAF 0.17): ask for its down
        // message instead, which a dead actor's monitor delivers at once.
        alive = true;
        self->monitor(devices[d]);
        self->receive([&](caf::down_msg&) { alive = false; }, caf::after(std::chrono::milliseconds(0)) >> [] {});
        self->demonitor(devices[d].address());
      }
      if (alive) continue;
      if (where[d].empty()) {
        devices[d] = spawn(d);
      } else {
        lost[d] = true;
        newly_lost.push_back(d);
      }
    }
    return newly_lost;
  }

  /// Failover: the ops of lost devices go to the surviving devices, the k-th lost device's ops all to
  /// the k-th survivor (cyclically), so that what ran together stays together.
  placement without_lost(const placement& p, const std::string& why) {
    std::lock_guard lock(mutex);
    std::vector<device_index> survivors, moved(lost.size());
    for (device_index d = 0; d < lost.size(); ++d)
      if (!lost[d]) survivors.push_back(d);
    if (survivors.empty()) throw run_failure("failover: no device survives (" + why + ")", std::nullopt, std::nullopt);
    std::size_t k = 0;
    for (device_index d = 0; d < lost.size(); ++d) moved[d] = lost[d] ? survivors[k++ % survivors.size()] : d;
    placement q = p;
    for (auto& d : q.device) d = moved[d];
    return q;
  }

  bool uses_lost(const placement& p) {
    std::lock_guard lock(mutex);
    for (auto d : p.device)
      if (d < lost.size() && lost[d]) return true;
    return false;
  }
};

engine::engine(cluster c, engine_options opt) : impl_(std::make_unique<impl>(std::move(c), std::move(opt))) {}
engine::~engine() = default;

const cluster& engine::cluster_model() const noexcept { return *impl_->c; }
const engine_options& engine::options() const noexcept { return impl_->opt; }

run_result engine::run(const graph& g, const placement& p, const run_options& opt) {
  return run(std::make_shared<const graph>(g), p, opt);
}

run_result engine::run(std::shared_ptr<const graph> g, const placement& p, const run_options& opt) {
  if (opt.repeat < 1) throw error(errc::bad_argument, "run: repeat must be >= 1");
  if (impl_->suspect.exchange(false)) impl_->heal();
  run_result result;
  placement cur = p;
  if (opt.failover && impl_->uses_lost(cur)) {
    cur = impl_->without_lost(cur, "devices lost before this run");
    result.failovers.push_back("devices of a lost worker were re-placed before the run");
  }
  // This repeat's wait for worker devices busy with another engine's run: since when, and its back-offs
  // (tries = 0: not waiting).
  std::chrono::steady_clock::time_point busy_since{};
  std::size_t tries = 0;
  for (int k = 0; k < opt.repeat; ++k) {
    auto plan = std::make_shared<actors::run_plan>();
    plan->engine = impl_->id;
    plan->run = impl_->next_run++;
    plan->g = g;
    plan->c = impl_->c;
    plan->p = cur;
    {
      std::lock_guard lock(impl_->mutex);
      plan->devices = impl_->devices;
      plan->where = impl_->where;
      if (opt.failover)  // lost devices get no ops: a local stand-in answers begin / collect / end
        for (device_index d = 0; d < plan->devices.size(); ++d)
          if (impl_->lost[d]) {
            if (!impl_->stand_in[d]) impl_->stand_in[d] = impl_->spawn(d);
            plan->devices[d] = impl_->stand_in[d];
          }
    }
    plan->mode = opt.mode;
    plan->seed = opt.seed;
    plan->keep = opt.keep;
    plan->record_trace = opt.trace;
    plan->timeout = opt.timeout.value_or(impl_->opt.timeout);
    std::shared_ptr<const actors::run_plan> previous;
    {
      std::lock_guard lock(impl_->mutex);
      previous = impl_->last_plan;
    }
    actors::finish_plan(*plan, previous.get());
    previous.reset();
    {
      std::lock_guard lock(impl_->mutex);
      impl_->last_plan = plan;
    }
    impl_->plan_transfers(*plan);
    result.planned_tensors = static_cast<std::size_t>(std::count_if(
        plan->transfer_plans.begin(), plan->transfer_plans.end(), [](const auto& tp) { return tp != nullptr; }));
    auto rep = actors::execute_plan(impl_->sys, plan);
    if (!rep.ok && rep.devices_busy) {  // another engine's run holds a worker's device: wait, try again
      auto now = std::chrono::steady_clock::now();
      if (tries == 0) busy_since = now;
      if (now - busy_since < impl_->opt.busy_wait) {
        ++result.busy_tries;
        impl_->wait_for_turn(busy_since, tries, result.busy_probes);
        --k;
        continue;
      }
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", std::chrono::duration<double>(now - busy_since).count());
      rep.failure += std::string(" (waited ") + secs + " s for it: engine_options::busy_wait, --busy-wait)";
    }
    if (tries > 0) {
      result.busy_waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since).count();
      tries = 0;
    }
    if (!rep.ok) {
      auto newly_lost = impl_->heal();
      if (opt.failover && !newly_lost.empty()) {  // run this repeat again without the lost devices
        cur = impl_->without_lost(cur, rep.failure);
        result.failovers.push_back(rep.failure);
        --k;
        continue;
      }
      bool names_op = rep.failure.rfind("op '", 0) == 0;
      bool names_device = names_op || rep.failure.rfind("device ", 0) == 0;
      throw run_failure(rep.failure, names_op ? std::optional<op_index>(rep.failed_op) : std::nullopt,
                        names_device ? std::optional<device_index>(rep.failed_device) : std::nullopt,
                        rep.timed_out);
    }
    sim_result s;
    s.makespan = rep.makespan;
    s.busy = std::move(rep.busy);
    s.link_bytes = std::move(rep.link_bytes);
    s.events = std::move(rep.events);
    s.event_count = s.events.size();
    result.runs.push_back(std::move(s));
    result.bytes_moved.push_back(rep.bytes_moved);
    result.transfers.push_back(rep.transfers);
    if (k + 1 == opt.repeat) {
      result.outputs.assign(g->size(), tensor{});
      for (auto& o : rep.outputs)
        if (o.value.ptr) result.outputs[o.op] = *o.value.ptr;
    }
  }
  return result;
}

learner_client engine::spawn_learner(std::shared_ptr<learner_interface> l) {
  if (!l) throw error(errc::bad_argument, "spawn_learner: no learner");
  auto a = actors::spawn_learner(impl_->sys, std::move(l));
  {
    std::lock_guard lock(impl_->mutex);
    impl_->learners.push_back(a);
  }
  return actors::make_learner_client(impl_->sys, a, impl_->c);
}

std::uint64_t engine::bytes_held() {
  caf::scoped_actor self{impl_->sys};
  std::lock_guard lock(impl_->mutex);
  std::uint64_t total = 0;
  for (auto& d : impl_->devices)
    self->request(d, std::chrono::seconds(5), actors::bytes_atom::value)
        .receive([&](std::uint64_t b) { total += b; }, [&](caf::error&) {});
  return total;
}

std::vector<device_index> engine::attach_worker(const std::string& host, std::uint16_t port,
                                               const std::string& token) {
  const cluster& c = *impl_->c;
  std::string where = "worker " + host + ":" + std::to_string(port);
  if (!impl_->opt.network) throw error(errc::bad_argument, "attach_worker " + where + ": the engine was built without network");
  caf::scoped_actor self{impl_->sys};
  // The middleman's connect, as remote_actor does it but with a time limit: remote_actor waits
  // forever for a listener that accepts and never answers (a stopped worker, another program).
  constexpr auto connect_limit = std::chrono::seconds(10);
  const caf::io::middleman_actor mm =
#ifdef DOPPLER_HAVE_CAF_OPENSSL
      impl_->opt.tls() ? impl_->sys.openssl_manager().actor_handle() :
#endif
                       impl_->sys.middleman().actor_handle();
  std::optional<actors::worker_actor> w;
  std::string no_connect;
  self->request(mm, connect_limit, caf::connect_atom::value, host, port)
      .receive(
          [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& ifs) {
            const auto want = impl_->sys.message_types(caf::detail::type_list<actors::worker_actor>{});
            if (!ptr)
              no_connect = "nothing is published at that port";
            else if (!std::includes(ifs.begin(), ifs.end(), want.begin(), want.end()))
              no_connect = "the actor there is not a doppler worker";
            else
              w = caf::actor_cast<actors::worker_actor>(std::move(ptr));
          },
          [&](caf::error& err) {
            no_connect = err == caf::sec::request_timeout
                      ? "no answer within 10 s (is a doppler worker listening there, and running?)"
                      : impl_->sys.render(err);
          });
  if (!w) throw run_failure(where + ": cannot connect: " + no_connect, std::nullopt, std::nullopt);
  actors::worker_info info;
  std::string failed;
  self->request(*w, std::chrono::seconds(10), actors::hello_atom::value, token)
      .receive([&](actors::worker_info& i) { info = std::move(i); },
               [&](caf::error& err) { failed = "no answer to hello: " + impl_->sys.render(err); });
  if (failed.empty() && !info.ok) failed = "refused the connection: " + info.refusal;
  if (failed.empty() && (info.devices.empty() || info.devices.size() != info.ids.size()))
    failed = "serves no devices";
  if (!failed.empty()) throw run_failure(where + ": " + failed, std::nullopt, std::nullopt);
  if (!info.emulated_cluster.empty() && info.emulated_cluster != to_json_text(c))
    throw error(errc::bad_argument, where + " emulates its kernels with the rates of its own cluster '" +
                                        parse_cluster(info.emulated_cluster, where).name() + "', not the run's cluster '" +
                                        c.name() + "': start it with the run's cluster (--cluster) to emulate this run");

  // The same worker reached under another address (localhost and 127.0.0.1): its device actors are
  // ones this engine already holds for another name.
  {
    std::lock_guard lock(impl_->mutex);
    for (device_index d = 0; d < impl_->where.size(); ++d) {
      if (impl_->where[d].empty() || impl_->where[d] == where || impl_->lost[d]) continue;
      for (const auto& served : info.devices)
        if (caf::actor_cast<caf::actor_addr>(served) == caf::actor_cast<caf::actor_addr>(impl_->devices[d]))
          throw error(errc::bad_argument, where + " is " + impl_->where[d] +
                                              ", already attached under that address: list each worker once");
    }
  }

  // Introduce it to the other workers this engine holds (protocol.hpp, `peer`): their devices send
  // tensors to each other over a connection of their own, which outlives this engine's process.
  std::vector<std::pair<std::string, std::pair<std::string, std::uint16_t>>> others;
  {
    std::lock_guard lock(impl_->mutex);
    for (const auto& [other, address] : impl_->workers) {
      bool serving = false;
      for (device_index d = 0; d < impl_->where.size(); ++d) serving |= impl_->where[d] == other && !impl_->lost[d];
      if (other != where && serving) others.emplace_back(other, address);
    }
  }
  for (const auto& [other, address] : others) {
    self->request(*w, std::chrono::seconds(15), actors::peer_atom::value, address.first, address.second)
        .receive([&](std::string& why) { failed = std::move(why); },
                 [&](caf::error& err) { failed = "no answer to peer: " + impl_->sys.render(err); });
    if (!failed.empty())
      throw run_failure(where + " cannot reach " + other + " (the devices of different workers send tensors to each "
                                "other directly: every worker must reach the others at the HOST:PORT given here): " +
                            failed,
                        std::nullopt, std::nullopt);
  }

  std::lock_guard lock(impl_->mutex);
  std::vector<device_index> mapped;
  if (info.named) {  // by id: the worker loaded the same cluster
    for (const auto& id : info.ids) {
      auto d = c.find_device(id);
      if (!d) throw error(errc::unknown_id, where + " serves device '" + id + "', which cluster '" + c.name() + "' does not have");
      if (!impl_->where[*d].empty() && impl_->where[*d] != where && !impl_->lost[*d])
        throw error(errc::bad_argument, where + " serves device '" + id + "', which " + impl_->where[*d] +
                                            " already serves: each device runs on one worker");
      mapped.push_back(*d);
    }
  } else {  // anonymous: the next devices not on another worker, in order
    for (device_index d = 0; d < c.device_count() && mapped.size() < info.ids.size(); ++d)
      if (impl_->where[d].empty() || impl_->where[d] == where) mapped.push_back(d);
    if (mapped.size() < info.ids.size())
      throw error(errc::bad_argument, where + " serves " + std::to_string(info.ids.size()) + " devices but only " +
                                          std::to_string(mapped.size()) + " of cluster '" + c.name() +
                                          "' are not on other workers");
  }
  // A straggler slows the kernels of this process's devices (make_straggler_backend wraps the local
  // backend); a worker runs its own, so the slowdown would silently not happen.
  for (device_index d : mapped)
    for (auto [sd, f] : impl_->opt.stragglers)
      if (sd == d)
        throw error(errc::bad_argument, where + " serves device '" + c[d].id +
                                            "', which the run's stragglers slow: a straggler slows only devices "
                                            "this process runs, not a worker's");
  for (std::size_t k = 0; k < mapped.size(); ++k) {
    device_index d = mapped[k];
    impl_->lost[d] = false;
    if (impl_->where[d].empty()) caf::anon_send_exit(impl_->devices[d], caf::exit_reason::user_shutdown);
    impl_->devices[d] = caf::actor_cast<actors::device_actor>(info.devices[k]);
    impl_->where[d] = where;
  }
  impl_->workers[where] = {host, port};
  return mapped;
}

std::string engine::location(device_index d) {
  std::lock_guard lock(impl_->mutex);
  if (d >= impl_->where.size()) throw error(errc::bad_argument, "location: no device " + std::to_string(d));
  return impl_->where[d];
}

void engine::kill_device(device_index d) {
  std::lock_guard lock(impl_->mutex);
  if (d >= impl_->devices.size()) throw error(errc::bad_argument, "kill_device: no device " + std::to_string(d));
  caf::anon_send_exit(impl_->devices[d], caf::exit_reason::kill);
  impl_->suspect = true;
}

std::vector<double> run_result::makespans() const {
  std::vector<double> m;
  for (auto& r : runs) m.push_back(r.makespan);
  return m;
}
double run_result::mean_makespan() const {
  auto m = makespans();
  return m.empty() ? 0.0 : std::accumulate(m.begin(), m.end(), 0.0) / static_cast<double>(m.size());
}
double run_result::min_makespan() const {
  auto m = makespans();
  return m.empty() ? 0.0 : *std::min_element(m.begin(), m.end());
}
double run_result::max_makespan() const {
  auto m = makespans();
  return m.empty() ? 0.0 : *std::max_element(m.begin(), m.end());
}

}  // namespace doppler
