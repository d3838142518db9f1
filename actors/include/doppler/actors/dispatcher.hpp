#pragma once
/// The dispatcher of one run: the entries, the completions, the `bsp` barrier (and, without device
/// release, the dependency counters and transfer orders), the timeout, and a monitor on every device.
/// `run` is answered with a report — ok, or a failure naming op and device.

#include <doppler/actors/protocol.hpp>
#include <doppler/actors/run_plan.hpp>

#include <memory>

namespace doppler::actors {

/// Spawns the dispatcher of `plan` (which names the device actors). Send it `run_atom` once.
dispatcher_actor spawn_dispatcher(caf::actor_system& sys, std::shared_ptr<const run_plan> plan);

/// Spawns a dispatcher, runs the plan and waits for its report (the plan's timeout bounds the wait).
run_report execute_plan(caf::actor_system& sys, std::shared_ptr<const run_plan> plan);

}  // namespace doppler::actors
