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

/// The bound of a re-plan at epoch t0: `history` (sends before t0, valid for d) has happened, so
/// every device holding (or receiving) a chunk through it counts as a holder, only the remaining
/// (chunk, destination) pairs cross cuts, through the link capacity from t0 on that `fixed` (other
/// jobs' sends; may be null) leaves; latency from the nearest holder, and the history's arrivals.
/// Cuts: every subset up to 16 nodes when `exact` (t0 = 0 without history: the bound above), else
/// only each device's out- and in-cut (cheaper, possibly lower).
lower_bound compute_lower_bound_from(const network& net, const demand& d, std::int32_t t0,
                                     const std::vector<send>& history, const std::vector<send>* fixed,
                                     bool exact = true);

}  // namespace doppler::comm
