#pragma once
/// The learner actor (protocol.hpp, `learner_actor`): any `learner_interface` behind one typed
/// protocol, on its own (detached) thread so that an update or a training run never blocks CAF's
/// scheduler. The actor only turns messages into calls of the learner (STYLE habit 1); which learner
/// it serves is the spawner's choice (a registry name, or a researcher's own class).

#include <doppler/actors/online.hpp>
#include <doppler/actors/protocol.hpp>
#include <doppler/runtime/learner.hpp>

#include <caf/all.hpp>

#include <memory>
#include <string>

namespace doppler::actors {

/// Spawns a learner actor serving `l` (which must not be null).
learner_actor spawn_learner(caf::actor_system& sys, std::shared_ptr<learner_interface> l);

/// A blocking client of learner actor `a` for problems on cluster `c` (what `engine::spawn_learner`
/// returns). The actor system must outlive it.
learner_client make_learner_client(caf::actor_system& sys, learner_actor a, std::shared_ptr<const cluster> c);

/// The message of an error a learner actor answered with (its doppler::error text when it carries one).
std::string learner_error_text(caf::actor_system& sys, const caf::error& err);
/// Rethrows an error a learner actor answered with as the `doppler::error` it was (same errc).
[[noreturn]] void throw_learner_error(caf::actor_system& sys, const caf::error& err);

}  // namespace doppler::actors
