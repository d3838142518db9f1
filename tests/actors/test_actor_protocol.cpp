// The dispatcher's conversation, stepped deterministically by CAF's test coordinator (one message at
// a time, simulated clock): the exact message sequence of a 3-op graph across two devices (dispatcher
// release, then device release), the same graph on real device actors (null backend), and the
// timeout firing on the simulated clock.
//
//   x [4,4] (dev0) ──▶ y = silu(x) (dev1) ──▶ z = add(x, y) (dev0)
#include <doppler/actors/device.hpp>
#include <doppler/actors/dispatcher.hpp>
#include <doppler/actors/run_plan.hpp>

#include <caf/scheduler/test_coordinator.hpp>
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace doppler;
using namespace doppler::actors;

namespace {

struct fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;

  fixture() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.console", caf::atom("none"));
    cfg.add_message_types<caf::id_block::doppler_actors>();
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
  }

  /// Real device actors 0..n-1 with the `null` backend.
  std::vector<device_actor> null_devices(device_index n) {
    std::vector<device_actor> devs;
    for (device_index d = 0; d < n; ++d) {
      device_options o;
      o.index = d;
      o.kernels = make_backend("null");
      devs.push_back(spawn_device(*sys, o));
    }
    return devs;
  }

  /// Spawns a dispatcher for `plan`, starts it and runs the coordinator until nothing is left to do;
  /// returns the run's report. Bounded both ways, so a broken dispatcher fails here instead of hanging
  /// the test: at most a million message deliveries (these graphs need a few dozen), and the report
  /// must be waiting once the coordinator is idle (everything ran; nothing else could send it).
  run_report run_to_report(std::shared_ptr<run_plan> plan) {
    auto disp = spawn_dispatcher(*sys, std::move(plan));
    caf::scoped_actor self{*sys, true};
    self->send(disp, run_atom::value);
    sched->run(1'000'000);
    run_report rep;
    bool reported = false;
    self->receive([&](run_report& r) {
                    rep = std::move(r);
                    reported = true;
                  },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    const bool idle = sched->jobs.empty();
    // A broken run leaves actors that will never finish: the system must not wait for them when the
    // failed check below ends the test.
    if (!idle || !reported) sys->await_actors_before_shutdown(false);
    REQUIRE_MESSAGE(idle, "the actors were still busy after a million messages");
    REQUIRE_MESSAGE(reported, "the dispatcher went idle without a report");
    return rep;
  }
};

graph three_ops() {
  graph_builder b("three");
  b.input("x", {4, 4});
  b.unary(op_kind::silu, "y", "x");
  b.binary(op_kind::add, "z", "x", "y");
  return std::move(b).build();
}

std::shared_ptr<run_plan> make_plan(std::vector<device_actor> devs, bool device_release = true) {
  auto plan = std::make_shared<run_plan>();
  plan->device_release = device_release;
  plan->run = 7;
  plan->g = std::make_shared<const graph>(three_ops());
  plan->c = std::make_shared<const cluster>(make_preset("cpu:2"));
  plan->p.device = {0, 1, 0};
  plan->devices = std::move(devs);
  plan->timeout = std::chrono::milliseconds(1000);
  finish_plan(*plan);
  return plan;
}

using log_t = std::shared_ptr<std::vector<std::string>>;

/// A device that logs what the dispatcher tells it and answers at once, as if every kernel and copy
/// took no time (transfers are acknowledged by the source, standing in for the peer).
device_actor::behavior_type fake_device(device_actor::pointer self, device_index me, log_t log,
                                        const graph* g) {
  auto name = "dev" + std::to_string(me) + " ";
  return {
      [=](begin_atom, const plan_ref&) {
        log->push_back(name + "begin");
        return caf::ok_atom::value;
      },
      [=](begin_atom, const plan_text&) {
        log->push_back(name + "begin (text)");
        return caf::ok_atom::value;
      },
      [=](probe_atom, std::uint64_t) { return std::string(); },
      [=](execute_atom, std::uint64_t run, std::vector<op_index>& ops) {
        std::vector<op_done_msg> done;
        for (op_index i : ops) {
          log->push_back(name + "execute " + (*g)[i].id);
          done.push_back(op_done_msg{run, i, me, 0, 0});
        }
        self->send(caf::actor_cast<dispatcher_actor>(self->current_sender()), std::move(done));
      },
      [=](send_atom, std::uint64_t run, const std::vector<op_index>& ops, const std::vector<device_index>& dsts) {
        std::vector<transfer_done_msg> done;
        for (std::size_t k = 0; k < ops.size(); ++k) {
          log->push_back(name + "send " + (*g)[ops[k]].id + " to dev" + std::to_string(dsts[k]));
          done.push_back(transfer_done_msg{run, ops[k], me, dsts[k], 0, 0, 64});
        }
        self->send(caf::actor_cast<dispatcher_actor>(self->current_sender()), std::move(done));
      },
      [=](tensor_atom, std::uint64_t, device_index, std::vector<op_index>&, std::vector<tensor_ref>&) {},
      [=](relay_atom, std::uint64_t, const std::vector<op_index>&) {},  // planned transfers: not used here
      [=](chunk_atom, std::uint64_t, op_index, std::uint32_t, tensor_ref&) {}, [=](chunk_copied_msg&) {},
      [=](kernel_done_msg&) {}, [=](op_failed_msg&) {}, [=](copy_done_msg&) {},
      [=](collect_atom, std::uint64_t) {
        log->push_back(name + "collect");
        return std::vector<op_output>{};
      },
      [=](end_atom, std::uint64_t) { log->push_back(name + "end"); },
      [=](bytes_atom) { return std::uint64_t{0}; },
  };
}

/// What a device playing device release keeps of its run.
struct releasing_run {
  std::shared_ptr<const run_plan> plan;
  dispatcher_actor dispatcher;
  std::vector<std::uint32_t> pending;  // producers not yet here, per op of this device
};

/// Runs op i at once (no time), as a real device with device release does: report it, send the output
/// to every other device that consumes it, run the local consumers it releases.
void releasing_run_op(device_actor::pointer self, device_index me, const log_t& log, releasing_run& r, op_index i) {
  const auto& p = *r.plan;
  const auto& g = *p.g;
  auto name = "dev" + std::to_string(me) + " ";
  log->push_back(name + "run " + g[i].id);
  self->send(r.dispatcher, std::vector<op_done_msg>{op_done_msg{p.run, i, me, 0, 0}});
  for (device_index d : p.remote_dests(i)) {
    log->push_back(name + "tensor " + g[i].id + " to dev" + std::to_string(d));
    self->send(p.devices[d], tensor_atom::value, p.run, me, std::vector<op_index>{i}, std::vector<tensor_ref>{tensor_ref{}});
  }
  for (op_index s : g.succs(i))
    if (p.device_of(s) == me && --r.pending[s] == 0) releasing_run_op(self, me, log, r, s);
}

/// A device that logs what it is told and plays device release with kernels and copies of no time.
device_actor::behavior_type releasing_device(device_actor::pointer self, device_index me, log_t log) {
  auto r = std::make_shared<releasing_run>();
  auto name = "dev" + std::to_string(me) + " ";
  return {
      [=](begin_atom, const plan_ref& ref) {
        log->push_back(name + "begin");
        r->plan = ref.ptr;
        r->dispatcher = caf::actor_cast<dispatcher_actor>(self->current_sender());
        r->pending.assign(ref.ptr->size(), 0);
        for (op_index i = 0; i < ref.ptr->size(); ++i)
          if (ref.ptr->device_of(i) == me) r->pending[i] = static_cast<std::uint32_t>(ref.ptr->g->preds(i).size());
        return caf::ok_atom::value;
      },
      [=](begin_atom, const plan_text&) { return caf::ok_atom::value; },
      [=](probe_atom, std::uint64_t) { return std::string(); },
      [=](execute_atom, std::uint64_t, std::vector<op_index>& ops) {
        for (op_index i : ops) {
          log->push_back(name + "execute " + (*r->plan->g)[i].id);
          releasing_run_op(self, me, log, *r, i);
        }
      },
      [=](send_atom, std::uint64_t, const std::vector<op_index>& ops, const std::vector<device_index>&) {
        for (op_index i : ops) log->push_back(name + "send " + (*r->plan->g)[i].id);  // must not happen
      },
      [=](tensor_atom, std::uint64_t run, device_index src, std::vector<op_index>& ops, std::vector<tensor_ref>&) {
        const auto& p = *r->plan;
        std::vector<transfer_done_msg> done;
        for (op_index i : ops) {
          log->push_back(name + "got " + (*p.g)[i].id);
          done.push_back(transfer_done_msg{run, i, src, me, 0, 0, 64});
        }
        self->send(r->dispatcher, std::move(done));
        for (op_index i : ops)
          for (op_index s : p.g->succs(i))
            if (p.device_of(s) == me && --r->pending[s] == 0) releasing_run_op(self, me, log, *r, s);
      },
      [=](relay_atom, std::uint64_t, const std::vector<op_index>&) {},
      [=](chunk_atom, std::uint64_t, op_index, std::uint32_t, tensor_ref&) {}, [=](chunk_copied_msg&) {},
      [=](kernel_done_msg&) {}, [=](op_failed_msg&) {}, [=](copy_done_msg&) {},
      [=](collect_atom, std::uint64_t) {
        log->push_back(name + "collect");
        return std::vector<op_output>{};
      },
      [=](end_atom, std::uint64_t) {
        log->push_back(name + "end");
        r->plan.reset();
        r->dispatcher = nullptr;
      },
      [=](bytes_atom) { return std::uint64_t{0}; },
  };
}

}  // namespace

TEST_CASE("the message sequence of a 3-op graph over two devices (dispatcher release)") {
  fixture f;
  auto log = std::make_shared<std::vector<std::string>>();
  auto g = std::make_shared<const graph>(three_ops());
  std::vector<device_actor> devs{f.sys->spawn(fake_device, device_index{0}, log, g.get()),
                                 f.sys->spawn(fake_device, device_index{1}, log, g.get())};
  run_report rep = f.run_to_report(make_plan(devs, false));
  CHECK(rep.ok);
  CHECK(rep.transfers == 2);
  CHECK(rep.bytes_moved == 128);
  std::vector<std::string> want{
      "dev0 begin", "dev1 begin",
      "dev0 execute x",              // the only entry
      "dev0 send x to dev1",         // y (dev1) needs x; z (dev0) has it locally
      "dev1 execute y",              // the moment x arrived on dev1
      "dev1 send y to dev0",
      "dev0 execute z",              // both inputs on dev0
      "dev0 collect", "dev1 collect", "dev0 end", "dev1 end"};
  CHECK(*log == want);
  for (auto& d : devs) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  f.sched->run();
}

TEST_CASE("the message sequence of a 3-op graph over two devices (device release, wc)") {
  fixture f;
  auto log = std::make_shared<std::vector<std::string>>();
  std::vector<device_actor> devs{f.sys->spawn(releasing_device, device_index{0}, log),
                                 f.sys->spawn(releasing_device, device_index{1}, log)};
  auto plan = make_plan(devs);
  REQUIRE(plan->released_by_devices());
  run_report rep = f.run_to_report(plan);
  CHECK(rep.ok);
  CHECK(rep.transfers == 2);
  CHECK(rep.bytes_moved == 128);
  std::size_t ops = 0;
  for (auto& ev : rep.events) ops += ev.what == trace_event::kind::op ? 1 : 0;
  CHECK(ops == 3);
  std::vector<std::string> want{
      "dev0 begin", "dev1 begin",
      "dev0 execute x",              // the dispatcher starts the only entry; nothing else comes from it
      "dev0 run x",
      "dev0 tensor x to dev1",       // dev0 sends x to y's device itself; z (dev0) has it locally
      "dev1 got x", "dev1 run y",    // dev1 counted y's one producer
      "dev1 tensor y to dev0",
      "dev0 got y", "dev0 run z",    // z's second producer arrived
      "dev0 collect", "dev1 collect", "dev0 end", "dev1 end"};
  CHECK(*log == want);
  for (auto& d : devs) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  f.sched->run();
}

TEST_CASE("real device actors (null backend) under the test coordinator") {
  fixture f;
  std::vector<device_actor> devs = f.null_devices(2);
  auto plan = make_plan(devs);
  std::uint64_t run = 10;
  for (auto [mode, device_release] : {std::pair{exec_mode::wc, true}, std::pair{exec_mode::wc, false},
                                      std::pair{exec_mode::bsp, true}}) {
    CAPTURE(device_release);
    auto pl = std::make_shared<run_plan>(*plan);
    pl->mode = mode;
    pl->device_release = device_release;
    pl->run = ++run;
    run_report rep = f.run_to_report(pl);
    CHECK(rep.ok);
    CHECK(rep.transfers == 2);
    std::size_t ops = 0;
    for (auto& ev : rep.events) ops += ev.what == trace_event::kind::op ? 1 : 0;
    CHECK(ops == 3);
    REQUIRE(rep.outputs.size() == 1);  // the exit z
    CHECK(rep.outputs[0].op == 2);
  }
  for (auto& d : devs) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  f.sched->run();
}

TEST_CASE("a device that never answers: the timeout ends the run naming the op") {
  fixture f;
  auto log = std::make_shared<std::vector<std::string>>();
  auto g = std::make_shared<const graph>(three_ops());
  // dev1 swallows execute: y never finishes
  // (an argument on purpose: CAF 0.17 dereferences a null tuple for argument-less spawns, UBSan says)
  auto silent = [](device_actor::pointer, device_index) -> device_actor::behavior_type {
    return {
        [](begin_atom, const plan_ref&) { return caf::ok_atom::value; },
        [](begin_atom, const plan_text&) { return caf::ok_atom::value; },
        [](probe_atom, std::uint64_t) { return std::string(); },
        [](execute_atom, std::uint64_t, std::vector<op_index>&) {},
        [](send_atom, std::uint64_t, const std::vector<op_index>&, const std::vector<device_index>&) {},
        [](tensor_atom, std::uint64_t, device_index, std::vector<op_index>&, std::vector<tensor_ref>&) {},
        [](relay_atom, std::uint64_t, const std::vector<op_index>&) {},
        [](chunk_atom, std::uint64_t, op_index, std::uint32_t, tensor_ref&) {}, [](chunk_copied_msg&) {},
        [](kernel_done_msg&) {}, [](op_failed_msg&) {}, [](copy_done_msg&) {},
        [](collect_atom, std::uint64_t) { return std::vector<op_output>{}; },
        [](end_atom, std::uint64_t) {}, [](bytes_atom) { return std::uint64_t{0}; },
    };
  };
  std::vector<device_actor> devs{f.sys->spawn(fake_device, device_index{0}, log, g.get()), f.sys->spawn(silent, device_index{1})};
  auto plan = make_plan(devs);
  auto disp = spawn_dispatcher(*f.sys, plan);
  caf::scoped_actor self{*f.sys, true};
  self->send(disp, run_atom::value);
  f.sched->run();
  CHECK(self->mailbox().empty());  // stuck: no report yet
  CHECK(f.sched->trigger_timeouts() >= 1);
  f.sched->run();
  run_report rep;
  self->receive([&](run_report& r) { rep = std::move(r); });
  CHECK_FALSE(rep.ok);
  CAPTURE(rep.failure);
  CHECK(rep.failure.find("op 'y'") == 0);
  CHECK(rep.failure.find("cpu1") != std::string::npos);
  CHECK(rep.failure.find("timed out") != std::string::npos);
  CHECK(rep.timed_out);
  for (auto& d : devs) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  f.sched->run();
}

// Devices hold back their completion batches while their mailbox is not empty, counting on the next
// message's handler to send them. A message the device drops — an older run's, or the down message of
// an earlier run's dispatcher, which a worker's device receives late over the network — must still
// send them: otherwise the finished op is never reported and the run hangs until its timeout (once
// in ~12,000 remote runs under load, before this was fixed).
TEST_CASE("a device reports a finished op when a stale message is next in its mailbox") {
  // Each sends one stale message to device `dev` of a run numbered `run`; `gone` is an earlier run's
  // dispatcher.
  using stale_send = std::function<void(caf::scoped_actor&, const caf::actor& dev, const caf::actor_addr& gone,
                                        std::uint64_t run)>;
  const std::vector<std::pair<std::string, stale_send>> stale = {
      {"down message of another dispatcher",
       [](auto& self, auto& dev, auto& gone, auto) { self->send(dev, caf::down_msg{gone, caf::exit_reason::normal}); }},
      {"kernel_done of an older run",
       [](auto& self, auto& dev, auto&, auto run) { self->send(dev, kernel_done_msg{run - 1, 0, 0, 0, tensor_ref{}}); }},
      {"op_failed of an older run",
       [](auto& self, auto& dev, auto&, auto run) { self->send(dev, op_failed_msg{run - 1, 0, 0, "stale"}); }},
      {"copy_done of an older run",
       [](auto& self, auto& dev, auto&, auto run) { self->send(dev, copy_done_msg{run - 1, 0, 1, 0, 0, tensor_ref{}}); }},
      {"end of another run", [](auto& self, auto& dev, auto&, auto run) { self->send(dev, end_atom::value, run + 1); }},
      {"execute of an older run",
       [](auto& self, auto& dev, auto&, auto run) {
         self->send(dev, execute_atom::value, run - 1, std::vector<op_index>{0});
       }},
  };
  for (const auto& [kind, send_stale] : stale) {
    CAPTURE(kind);
    fixture f;
    std::vector<device_actor> devs = f.null_devices(2);
    auto plan = make_plan(devs, false);  // dispatcher release: the device runs what it is told
    caf::scoped_actor self{*f.sys, true};  // plays the dispatcher
    caf::scoped_actor gone{*f.sys, true};  // an earlier run's dispatcher
    self->send(devs[0], begin_atom::value, plan_ref{plan});
    f.sched->run();
    bool begun = false;
    self->receive([&](caf::ok_atom) { begun = true; });
    REQUIRE(begun);
    // Both messages are queued before the device runs: it handles `execute` with the stale one waiting.
    self->send(devs[0], execute_atom::value, plan->run, std::vector<op_index>{0});
    send_stale(self, caf::actor_cast<caf::actor>(devs[0]), gone->address(), plan->run);
    auto* dev = dynamic_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(devs[0]));
    REQUIRE(dev != nullptr);
    REQUIRE(dev->mailbox().count() == 2);  // `execute`, then the stale message
    f.sched->run();
    std::vector<op_index> reported;
    self->receive([&](std::vector<op_done_msg>& batch) {
                    for (auto& m : batch) reported.push_back(m.op);
                  },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    REQUIRE(reported.size() == 1);  // nothing at all before the fix
    CHECK(reported[0] == 0);
    for (auto& d : devs) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
    f.sched->run();
  }
}
