// What `doppler run`, phase III of `doppler train` and `doppler calibrate --workers` share when they set
// up an engine: worker addresses, the token, the busy wait, a backend by name (cmd_run.cpp). Only with
// the actor layer.
#pragma once

#include <doppler/actors/engine.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace doppler::cli {

/// "HOST:PORT" (PORT 0..65535; 0 only where `allow_zero`); errc::bad_argument naming `flag` otherwise.
std::pair<std::string, std::uint16_t> host_port(const std::string& s, const std::string& flag, bool allow_zero);

/// `--backend NAME`: the actor layer's backends by name, and `cuda` (this machine's GPU; each of
/// `devices` a virtual device on it) when doppler was built with CUDA — a clear error naming `flag`
/// otherwise.
engine_options with_named_backend(engine_options o, const std::string& name, std::size_t devices,
                                  const std::string& flag = "--backend");

/// The shared token: the flag, else $DOPPLER_TOKEN.
std::string token_or_env(const std::string& flag_value);

/// `--busy-wait SECONDS` (engine_options::busy_wait: how long a run waits its turn on workers another
/// engine's run is using); errc::bad_argument naming `flag` unless in [0, 1e9].
std::chrono::milliseconds busy_wait_flag(double seconds, const std::string& flag = "--busy-wait");

/// Attaches the `doppler worker`s at `addresses` (HOST:PORT, the value of `flag`) to `e` with the token
/// `token_flag` or $DOPPLER_TOKEN. When `report` is given, writes "PREFIXworker HOST:PORT serves cpu0
/// cpu1" per worker to it.
void attach_workers(engine& e, const cluster& c, const std::vector<std::string>& addresses, const std::string& flag,
                    const std::string& token_flag, std::ostream* report = nullptr, const std::string& prefix = "");

}  // namespace doppler::cli
