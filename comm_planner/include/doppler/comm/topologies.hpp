#pragma once
/// Large topologies for the comm planner beyond the runtime presets.

#include <doppler/runtime/cluster.hpp>

#include <string>

namespace doppler::comm {

/// `h100-pod:N`: N DGX-H100-like nodes of 8 GPUs (each node's GPUs on its own NVSwitch at 450 GB/s,
/// 0.5 µs per hop) plus one NIC per GPU (50 GB/s, 2.5 µs per hop) into one non-blocking network
/// switch — `h100-2x8` generalized; N in 1..256 (up to 2,048 GPUs).
cluster make_h100_pod(int nodes);

/// `dgx2-2`: TE-CCL's 2-chassis DGX-2 model (`teccl/topologies/dgx2.py`): per chassis 16 V100 on one
/// NVSwitch (`nvswitch0`, `nvswitch1`) at 125 GB/s, 0.35 µs per hop; odd GPU k of a chassis sends to
/// GPU k−1 of the other one over a one-way 12.5 GB/s NIC link, 2.6 µs. The runtime preset
/// `make_preset("dgx2-2")`.
cluster make_dgx2_2();

/// `ndv2-N` (N = 3..16 chassis): TE-CCL's multi-chassis NDv2 model (`teccl/topologies/ndv2.py`):
/// each chassis the DGX-1V NVLink matrix (25/50 GB/s, 0.7 µs); GPU 0 of every chassis sends to one
/// InfiniBand switch `ib`, which sends to GPU 1 of every chassis, each link 12.5 GB/s and 1.3 µs.
/// (`ndv2-2` is the runtime preset: two direct one-way links.)
cluster make_ndv2(int chassis);

/// A comm-planner cluster spec: `ndv2-N` (N ≥ 3), `h100-pod:N`, else a cluster file or runtime
/// preset (dgx2-2 among them).
cluster load_comm_cluster(const std::string& spec);

}  // namespace doppler::comm
