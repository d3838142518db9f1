#pragma once
/// The device actor: owns one device's buffers and a backend, keeps a ready queue ordered by the
/// placement's priority, runs up to `streams` ops at once on its own worker threads (never on a CAF
/// scheduler thread), copies received tensors on its copy thread, and reports measured times. With
/// device release (wc) it also counts its own ops' inputs, runs each op once they are all in its
/// buffers, and sends finished outputs to the devices that consume them.

#include <doppler/actors/backend.hpp>
#include <doppler/actors/protocol.hpp>

#include <memory>

namespace doppler::actors {

struct device_options {
  device_index index = 0;              ///< this device's index in the cluster
  int streams = 1;                     ///< ops run concurrently (worker threads)
  std::shared_ptr<backend> kernels;    ///< required

  device_options& with_streams(int s) { streams = s; return *this; }
};

/// Spawns a device actor. Its worker threads stop (after their current job) when it exits.
device_actor spawn_device(caf::actor_system& sys, device_options opt);

}  // namespace doppler::actors
