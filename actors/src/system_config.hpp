#pragma once
/// The actor system configuration of engines and workers (internal to doppler::actors).

#include <doppler/actors/engine.hpp>
#include <doppler/actors/protocol.hpp>

namespace doppler::actors {

/// Fills `cfg` for `opt`: the doppler_actors message types, the scheduler, and with `network` the
/// middleman (plus the openssl module when TLS files are set). Throws `doppler::error` for a bad
/// scheduler name or incomplete / unreadable TLS files.
caf::actor_system_config& configure(caf::actor_system_config& cfg, const engine_options& opt);

}  // namespace doppler::actors
