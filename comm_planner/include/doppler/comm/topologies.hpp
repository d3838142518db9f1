#pragma once
/// Large topologies for the comm planner beyond the runtime presets.

#include <doppler/runtime/cluster.hpp>

#include <string>

namespace doppler::comm {

/// `h100-pod:N`: N DGX-H100-like nodes of 8 GPUs (each node's GPUs on its own NVSwitch at 450 GB/s,
/// 0.5 µs per hop) plus one NIC per GPU (50 GB/s, 2.5 µs per hop) into one non-blocking network
/// switch — `h100-2x8` generalized; N in 1..256 (up to 2,048 GPUs).
cluster make_h100_pod(int nodes);

/// A comm-planner cluster spec: `h100-pod:N`, else a cluster file or runtime preset.
cluster load_comm_cluster(const std::string& spec);

}  // namespace doppler::comm
