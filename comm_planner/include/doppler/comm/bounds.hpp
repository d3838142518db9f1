#pragma once
/// Lower bounds on the transfer time of a demand: cut bounds (every chunk that starts inside a node
/// set S and is needed outside must cross the links leaving S at least once) and a latency bound.

#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>

#include <cstdint>
#include <string>

namespace doppler::comm {

struct lower_bound {
  double cut_seconds = 0;      ///< max over cuts S of chunks leaving S × chunk bytes / bandwidth out of S
  double latency_seconds = 0;  ///< max over (chunk, destination) of the fewest epochs to get there, × τ
  double seconds = 0;          ///< the larger of the two
  std::int32_t epochs = 0;     ///< the same bounds in whole epochs of the network (a floor for K)
  bool exact_cuts = false;     ///< every node subset was enumerated (≤ 16 nodes)
  bool fixed_aware = false;    ///< the epoch bound counts only link capacity fixed sends leave
  std::string cut;             ///< the binding cut, e.g. "{gpu0,gpu1,...}"
};

/// Exact cut enumeration up to 16 nodes; above, singletons, their complements, host groups and a
/// local search from each of them.
lower_bound compute_lower_bound(const network& net, const demand& d);

/// The same bound for planning `d` around `fixed` sends (other chunks already on the links:
/// re-planning's kept prefix, earlier tenants): in the epoch form a cut link carries in K epochs
/// only the sends its fixed sends leave room for, so the bound can only grow. Evaluated on the
/// best cuts by time and on every device's in- and out-cut. Null or empty `fixed`: the plain bound.
lower_bound compute_lower_bound(const network& net, const demand& d, const std::vector<send>* fixed);

}  // namespace doppler::comm
