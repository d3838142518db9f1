// Baselines: NCCL-style ring and multi-ring allgather, direct (unicast) sends, shortest-path multicast trees.
#include "methods.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <functional>

namespace doppler::comm::detail {

namespace {

/// A ring over the devices using direct device-to-device links where one exists (depth-first search
/// for a Hamiltonian cycle, widest links first, bounded effort), skipping links marked in `banned`;
/// device order when none is found (`found` says which).
std::vector<device_index> find_ring(const network& net, const std::vector<device_index>& members,
                                    const std::vector<char>* banned = nullptr, bool* found = nullptr) {
  const std::size_t n = members.size();
  std::vector<device_index> ring{members[0]};
  std::vector<char> used(net.node_count(), 0);
  used[members[0]] = 1;
  std::vector<char> member(net.node_count(), 0);
  for (device_index m : members) member[m] = 1;
  auto usable = [&](std::uint32_t l) { return !banned || !(*banned)[l]; };
  auto closes = [&](node_index a, node_index b) {
    for (std::uint32_t l : net.out_links(a))
      if (net.links()[l].dst == b && usable(l)) return true;
    return false;
  };
  std::size_t effort = 0;
  std::function<bool()> dfs = [&]() -> bool {
    if (++effort > 200000) return false;
    if (ring.size() == n) return closes(ring.back(), ring.front());
    std::vector<std::pair<double, node_index>> next;
    for (std::uint32_t l : net.out_links(ring.back())) {
      node_index v = net.links()[l].dst;
      if (member[v] && !used[v] && usable(l)) next.push_back({net.links()[l].bandwidth, v});
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
  bool ok = n > 2 && dfs();
  if (found) *found = ok;
  return ok ? ring : members;
}

/// The devices of an allgather-shaped demand (every chunk needed by every other source), sorted;
/// throws for any other demand, naming `method`.
std::vector<device_index> allgather_members(const network& net, const demand& d, const std::string& method) {
  std::vector<device_index> members;
  std::vector<char> is_member(net.device_count(), 0);
  for (const chunk& c : d.chunks)
    if (!is_member[c.source]) {
      is_member[c.source] = 1;
      members.push_back(c.source);
    }
  for (const chunk& c : d.chunks) {
    // Destinations are distinct and never the source (the demand reader checks), so N − 1 of them
    // that are all sources are exactly the other sources.
    bool others = c.destinations.size() + 1 == members.size();
    for (device_index v : c.destinations) others = others && is_member[v];
    if (!others)
      throw error(errc::bad_argument, "the " + method + " method plans allgather demands only (chunk " +
                                          std::to_string(c.id) + " is not needed by every other device)");
  }
  std::sort(members.begin(), members.end());
  return members;
}

/// Passes every chunk around its ring (rings[ring_of[chunk index]]) N−1 hops, pipelined: a chunk
/// moves on as soon as it arrived and the next hop's links are free.
method_result pass_around(const network& net, const demand& d, const std::vector<std::vector<device_index>>& rings,
                          const std::vector<std::size_t>& ring_of) {
  slot_table slots(net);
  method_result r;
  const std::size_t n = rings.front().size();
  std::vector<std::vector<std::size_t>> pos(rings.size(), std::vector<std::size_t>(net.device_count(), 0));
  std::vector<std::vector<std::vector<std::uint32_t>>> hop(rings.size());
  for (std::size_t k = 0; k < rings.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) {
      pos[k][rings[k][i]] = i;
      hop[k].push_back(device_path(net, rings[k][i], rings[k][(i + 1) % n]));
    }
  std::vector<std::int32_t> ready(d.chunks.size(), 0);  // epoch the chunk reached its current position
  for (std::size_t step = 0; step + 1 < n; ++step)
    for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) {
      const std::size_t k = ring_of[ci];
      std::size_t at = (pos[k][d.chunks[ci].source] + step) % n;
      ready[ci] = schedule_path(net, slots, d.chunks[ci].id, hop[k][at], ready[ci], r.sends);
    }
  return r;
}

}  // namespace

method_result plan_ring(const network& net, const demand& d) {
  std::vector<device_index> ring = find_ring(net, allgather_members(net, d, "ring"));
  method_result r = pass_around(net, d, {ring}, std::vector<std::size_t>(d.chunks.size(), 0));
  r.note = "ring";
  for (device_index v : ring) r.note += " " + net.topology()[v].id;
  return r;
}

method_result plan_rings(const network& net, const demand& d) {
  // NCCL's channels: as many link-disjoint rings as the topology offers (each found ring and its
  // reverse), a source's j-th chunk on ring j mod R. With one chunk per GPU only the first ring
  // carries data (NCCL would split the buffer; a demand's chunks are the unit here).
  const std::vector<device_index> members = allgather_members(net, d, "rings");
  // A link carries as many rings as it has multiples of the slowest device-to-device link's
  // bandwidth (DGX-1's doubled NVLinks carry two, as NCCL's channels use them).
  std::vector<std::vector<device_index>> rings;
  const std::size_t links = net.links().size();
  double slowest = 0;
  for (std::size_t l = 0; l < links; ++l)
    if (net.links()[l].src < net.device_count() && net.links()[l].dst < net.device_count())
      slowest = slowest == 0 ? net.links()[l].bandwidth : std::min(slowest, net.links()[l].bandwidth);
  std::vector<int> room(links, 0);
  for (std::size_t l = 0; l < links; ++l)
    room[l] = slowest > 0 ? std::max(1, static_cast<int>(net.links()[l].bandwidth / slowest + 1e-9)) : 1;
  std::vector<char> banned(links, 0);
  auto ban = [&](const std::vector<device_index>& ring) {
    for (std::size_t i = 0; i < ring.size(); ++i)
      if (auto l = net.find_link(ring[i], ring[(i + 1) % ring.size()]))
        if (--room[*l] <= 0) banned[*l] = 1;
  };
  auto free_cycle = [&](const std::vector<device_index>& ring) {
    for (std::size_t i = 0; i < ring.size(); ++i) {
      auto l = net.find_link(ring[i], ring[(i + 1) % ring.size()]);
      if (!l || banned[*l]) return false;
    }
    return true;
  };
  for (int tries = 0; tries < 16; ++tries) {
    bool found = false;
    auto ring = find_ring(net, members, &banned, &found);
    if (!found) break;
    rings.push_back(ring);
    ban(ring);
    std::vector<device_index> back(ring.rbegin(), ring.rend());
    if (free_cycle(back)) {
      rings.push_back(back);
      ban(back);
    }
  }
  if (rings.empty()) rings.push_back(find_ring(net, members));  // no direct-link ring: routed, one ring
  std::vector<std::size_t> ring_of(d.chunks.size(), 0), seen(net.device_count(), 0);
  for (std::size_t ci = 0; ci < d.chunks.size(); ++ci) ring_of[ci] = seen[d.chunks[ci].source]++ % rings.size();
  method_result r = pass_around(net, d, rings, ring_of);
  r.note = std::to_string(rings.size()) + (rings.size() == 1 ? " ring" : " rings");
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
