// The embedding API: an actor system, one device actor per device, a dispatcher per run.

#include <doppler/actors/comm_planner.hpp>
#include <doppler/actors/device.hpp>
#include <doppler/actors/dispatcher.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/actors/learner.hpp>
#include <doppler/actors/run_plan.hpp>
#include <doppler/runtime/error.hpp>

#include <caf/io/all.hpp>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <numeric>

namespace doppler {

namespace {

caf::actor_system_config& configure(caf::actor_system_config& cfg, const engine_options& opt) {
  cfg.add_message_types<caf::id_block::doppler_actors>();
  if (opt.scheduler_threads > 0) cfg.set("scheduler.max-threads", opt.scheduler_threads);
  if (opt.network) cfg.load<caf::io::middleman>();
  if (opt.scheduler == "sharing") cfg.set("scheduler.policy", caf::atom("sharing"));
  else if (opt.scheduler != "stealing")
    throw error(errc::bad_argument, "engine: unknown scheduler \"" + opt.scheduler + "\" (stealing, sharing)");
  cfg.set("logger.console", caf::atom("none"));
  return cfg;
}

}  // namespace

struct engine::impl {
  engine_options opt;
  std::shared_ptr<const cluster> c;
  std::shared_ptr<actors::backend> kernels;
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::mutex mutex;  // guards devices
  std::vector<actors::device_actor> devices;
  std::atomic<std::uint64_t> next_run{1};
  std::atomic<bool> suspect{false};  // a device may be dead (killed, or a run failed)
  std::optional<actors::comm_planner_actor> planner;  // transfers = planned
  std::vector<actors::learner_actor> learners;         // spawn_learner: stopped with the engine

  impl(cluster cl, engine_options o)
      : opt(std::move(o)),
        c(std::make_shared<const cluster>(std::move(cl))),
        kernels(opt.custom_backend ? opt.custom_backend : actors::make_backend(opt.backend, c, opt.costs)),
        sys(configure(cfg, opt)) {
    if (opt.streams < 1) throw error(errc::bad_argument, "engine: streams must be >= 1");
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
  }
  ~impl() {
    for (auto& d : devices) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
    if (planner) caf::anon_send_exit(*planner, caf::exit_reason::user_shutdown);
    for (auto& l : learners) caf::anon_send_exit(l, caf::exit_reason::user_shutdown);
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

  actors::device_actor spawn(device_index d) {
    actors::device_options o;
    o.index = d;
    o.streams = opt.streams;
    o.kernels = kernels;
    return actors::spawn_device(sys, std::move(o));
  }

  /// Respawns every device actor that no longer answers.
  void heal() {
    caf::scoped_actor self{sys};
    std::lock_guard lock(mutex);
    for (device_index d = 0; d < devices.size(); ++d) {
      bool alive = false;
      self->request(devices[d], std::chrono::seconds(5), actors::bytes_atom::value)
          .receive([&](std::uint64_t) { alive = true; }, [&](caf::error&) { alive = false; });
      if (!alive) devices[d] = spawn(d);
    }
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
  for (int k = 0; k < opt.repeat; ++k) {
    auto plan = std::make_shared<actors::run_plan>();
    plan->run = impl_->next_run++;
    plan->g = g;
    plan->c = impl_->c;
    plan->p = p;
    {
      std::lock_guard lock(impl_->mutex);
      plan->devices = impl_->devices;
    }
    plan->mode = opt.mode;
    plan->seed = opt.seed;
    plan->keep = opt.keep;
    plan->record_trace = opt.trace;
    plan->timeout = opt.timeout.value_or(impl_->opt.timeout);
    actors::finish_plan(*plan);
    impl_->plan_transfers(*plan);
    result.planned_tensors = static_cast<std::size_t>(std::count_if(
        plan->transfer_plans.begin(), plan->transfer_plans.end(), [](const auto& p) { return p != nullptr; }));
    auto rep = actors::execute_plan(impl_->sys, plan);
    if (!rep.ok) {
      impl_->heal();
      bool names_op = rep.failure.rfind("op '", 0) == 0;
      bool names_device = names_op || rep.failure.rfind("device ", 0) == 0;
      throw run_failure(rep.failure, names_op ? std::optional<op_index>(rep.failed_op) : std::nullopt,
                        names_device ? std::optional<device_index>(rep.failed_device) : std::nullopt);
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

void engine::attach(device_index d, const std::string& host, std::uint16_t port) {
  if (!impl_->opt.network) throw error(errc::bad_argument, "attach: the engine was built without network");
  if (d >= impl_->c->device_count()) throw error(errc::bad_argument, "attach: no device " + std::to_string(d));
  auto h = impl_->sys.middleman().remote_actor<actors::device_actor>(host, port);
  if (!h)
    throw run_failure("device " + (*impl_->c)[d].id + ": cannot reach " + host + ":" + std::to_string(port) + ": " +
                          impl_->sys.render(h.error()),
                      std::nullopt, d);
  std::lock_guard lock(impl_->mutex);
  caf::anon_send_exit(impl_->devices[d], caf::exit_reason::user_shutdown);
  impl_->devices[d] = std::move(*h);
}

struct worker::impl {
  engine_options opt;
  std::shared_ptr<const cluster> c;
  std::shared_ptr<actors::backend> kernels;
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::vector<std::pair<device_index, std::uint16_t>> ports;
  std::vector<actors::device_actor> devices;

  impl(cluster cl, engine_options o)
      : opt(std::move(o.with_network())),
        c(std::make_shared<const cluster>(std::move(cl))),
        kernels(opt.custom_backend ? opt.custom_backend : actors::make_backend(opt.backend, c, opt.costs)),
        sys(configure(cfg, opt)) {}
  ~impl() {
    for (auto& d : devices) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  }
};

worker::worker(cluster c, std::vector<device_index> devices, engine_options opt, std::string host)
    : impl_(std::make_unique<impl>(std::move(c), std::move(opt))) {
  for (device_index d : devices) {
    if (d >= impl_->c->device_count()) throw error(errc::bad_argument, "worker: no device " + std::to_string(d));
    actors::device_options o;
    o.index = d;
    o.streams = impl_->opt.streams;
    o.kernels = impl_->kernels;
    auto dev = actors::spawn_device(impl_->sys, std::move(o));
    auto port = impl_->sys.middleman().publish(dev, 0, host.c_str());
    if (!port) throw error(errc::io, "worker: cannot publish device " + (*impl_->c)[d].id + ": " + impl_->sys.render(port.error()));
    impl_->ports.emplace_back(d, *port);
    impl_->devices.push_back(std::move(dev));
  }
}

worker::~worker() = default;

std::uint16_t worker::port(device_index d) const {
  for (auto [dev, p] : impl_->ports)
    if (dev == d) return p;
  throw error(errc::bad_argument, "worker: device " + std::to_string(d) + " is not served here");
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
