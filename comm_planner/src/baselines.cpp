// Baselines: NCCL-style ring allgather, direct (unicast) sends, shortest-path multicast trees.
#include "methods.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <functional>

namespace doppler::comm::detail {

namespace {

/// A ring over the devices using direct device-to-device links where one exists (depth-first search
/// for a Hamiltonian cycle, widest links first, bounded effort); device order otherwise.
std::vector<device_index> find_ring(const network& net, const std::vector<device_index>& members) {
  const std::size_t n = members.size();
  std::vector<device_index> ring{members[0]}, best;
  std::vector<char> used(net.node_count(), 0);
  used[members[0]] = 1;
  std::vector<char> member(net.node_count(), 0);
  for (device_index m : members) member[m] = 1;
  auto bw = [&](node_index a, node_index b) {
    auto l = net.find_link(a, b);
    return l ? net.links()[*l].bandwidth : 0.0;
  };
  std::size_t effort = 0;
  std::function<bool()> dfs = [&]() -> bool {
    if (++effort > 200000) return false;
    if (ring.size() == n) return bw(ring.back(), ring.front()) > 0;
    std::vector<std::pair<double, node_index>> next;
    for (std::uint32_t l : net.out_links(ring.back())) {
      node_index v = net.links()[l].dst;
      if (member[v] && !used[v]) next.push_back({net.links()[l].bandwidth, v});
    }
    std::sort(next.rbegin(), next.rend());
    for (auto [b, v] : next) {
      used[v] = 1;
      ring.push_back(v);
      if (dfs()) return true;
      ring.pop_back();
      used[v] = 0;
    }
    return false;
  };
  if (n > 2 && dfs()) return ring;
  return members;
}

}  // namespace

method_result plan_ring(const network& net, const demand& d) {
  // Ring applies to allgather-shaped demands: every chunk needed by every other participant.
  std::vector<device_index> members;
  std::vector<char> is_member(net.device_count(), 0);
  for (const chunk& c : d.chunks)
    if (!is_member[c.source]) {
      is_member[c.source] = 1;
      members.push_back(c.source);
    }
  for (const chunk& c : d.chunks)
    if (c.destinations.size() + 1 != members.size())
      throw error(errc::bad_argument, "the ring method plans allgather demands only (chunk " +
                                          std::to_string(c.id) + " is not needed by every other device)");
  std::sort(members.begin(), members.end());
  std::vector<device_index> ring = find_ring(net, members);
  const std::size_t n = ring.size();
  std::vector<std::size_t> pos(net.device_count(), 0);
  for (std::size_t i = 0; i < n; ++i) pos[ring[i]] = i;
  std::vector<std::vector<std::uint32_t>> hop(n);
  for (std::size_t i = 0; i < n; ++i) hop[i] = device_path(net, ring[i], ring[(i + 1) % n]);
  slot_table slots(net);
  method_result r;
  // hold[c] = epoch the chunk reached its current ring position.
  std::vector<std::int32_t> ready(d.chunks.size(), 0);
  for (std::size_t step = 0; step + 1 < n; ++step)
    for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) {
      std::size_t at = (pos[d.chunks[ci].source] + step) % n;
      ready[ci] = schedule_path(net, slots, d.chunks[ci].id, hop[at], ready[ci], r.sends);
    }
  r.note = "ring";
  for (device_index v : ring) r.note += " " + net.topology()[v].id;
  return r;
}

method_result plan_direct(const network& net, const demand& d) {
  slot_table slots(net);
  method_result r;
  // Round-robin over chunks so that no source's chunks all go first.
  std::size_t most = 0;
  for (const chunk& c : d.chunks) most = std::max(most, c.destinations.size());
  for (std::size_t k = 0; k < most; ++k)
    for (const chunk& c : d.chunks) {
      if (k >= c.destinations.size()) continue;
      device_index t = c.destinations[(k + c.source) % c.destinations.size()];
      schedule_path(net, slots, c.id, device_path(net, c.source, t), 0, r.sends);
    }
  return r;
}

method_result plan_tree(const network& net, const demand& d) {
  slot_table slots(net);
  method_result r;
  std::vector<std::int32_t> hold(net.device_count(), unreachable_epochs);
  // Destinations nearest first, so that farther ones branch off the tree already built.
  for (const chunk& c : d.chunks) {
    std::fill(hold.begin(), hold.end(), unreachable_epochs);
    hold[c.source] = 0;
    std::vector<device_index> dsts = c.destinations;
    std::stable_sort(dsts.begin(), dsts.end(), [&](device_index a, device_index b) {
      return net.topology().route_between(c.source, a).links.size() <
             net.topology().route_between(c.source, b).links.size();
    });
    for (device_index t : dsts) schedule_path(net, slots, c.id, device_path(net, c.source, t), 0, r.sends, &hold);
  }
  return r;
}

}  // namespace doppler::comm::detail
