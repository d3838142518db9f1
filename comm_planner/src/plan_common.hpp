#pragma once
// Private pieces shared by the planning methods: a per-link slot table with β windows, a path
// scheduler (store-and-forward at devices, same epoch through switches), schedule finishing.
#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/planner.hpp>
#include <doppler/comm/schedule.hpp>

#include <cstdint>
#include <vector>

namespace doppler::comm::detail {

/// Sends per link per epoch, with the window rule of the schedule contract.
class slot_table {
 public:
  explicit slot_table(const network& net) : net_(net), used_(net.links().size()) {}
  /// Whether one more send fits on link l at epoch e (every window containing e stays in capacity).
  bool fits(std::uint32_t l, std::int32_t e) const;
  void take(std::uint32_t l, std::int32_t e);
  /// First epoch ≥ e where l has room.
  std::int32_t first_fit(std::uint32_t l, std::int32_t e) const;
  /// Sends on link l starting at epoch e.
  int count(std::uint32_t l, std::int32_t e) const {
    const auto& u = used_[l];
    return e >= 0 && static_cast<std::size_t>(e) < u.size() ? u[static_cast<std::size_t>(e)] : 0;
  }

 private:
  const network& net_;
  std::vector<std::vector<std::uint16_t>> used_;
};

/// A slot table holding `fixed` (sends on links of `net`; unknown links are ignored).
slot_table slots_with(const network& net, const std::vector<send>* fixed);

/// The links of the cluster route a → b in the network (empty if a removed link breaks it; then
/// a fewest-epoch path is searched instead). Throws infeasible when b is unreachable.
std::vector<std::uint32_t> device_path(const network& net, device_index a, device_index b);

/// Schedules chunk `chunk_id` along `path` (links from a device, through devices and switches, to
/// a device) starting no earlier than `ready` at the first node, at the earliest free slots;
/// appends the sends and returns the epoch the last node holds it. `hold` (per device, may be
/// null) gives epochs the chunk is already held, to skip hops already covered (multicast trees).
std::int32_t schedule_path(const network& net, slot_table& slots, std::uint32_t chunk_id,
                           const std::vector<std::uint32_t>& path, std::int32_t ready,
                           std::vector<send>& out, std::vector<std::int32_t>* hold = nullptr);

/// Drops sends into devices that never use the chunk (not a destination, never forwarding it)
/// and switch inflows that go nowhere, until none is left. Sends before `keep_before` (a re-plan's
/// history: they happened) are never dropped.
void prune_unused(const network& net, const demand& d, std::vector<send>& sends, std::int32_t keep_before = 0);

/// Fills the schedule header (topology, demand, τ, epochs from the sends) around `sends`.
schedule make_schedule(const network& net, const demand& d, std::string method, std::vector<send> sends);

/// Throws infeasible naming the first (chunk, destination) no path reaches.
void check_reachable(const network& net, const demand& d);

}  // namespace doppler::comm::detail
