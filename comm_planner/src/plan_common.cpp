// Shared planning pieces: slot table, path scheduling, pruning, schedule headers, reachability.
#include "plan_common.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>

namespace doppler::comm::detail {

bool slot_table::fits(std::uint32_t l, std::int32_t e) const {
  const te_link& t = net_.links()[l];
  const std::int32_t w = t.window;
  int sum = 0;
  for (std::int32_t i = e - w + 1; i <= e; ++i) sum += count(l, i);
  if (sum + 1 > t.cap) return false;
  for (std::int32_t j = e + 1; j <= e + w - 1; ++j) {  // slide the window to the later ones holding e
    sum += count(l, j) - count(l, j - w);
    if (sum + 1 > t.cap) return false;
  }
  return true;
}

void slot_table::take(std::uint32_t l, std::int32_t e) {
  auto& u = used_[l];
  if (u.size() <= static_cast<std::size_t>(e)) u.resize(static_cast<std::size_t>(e) + 64, 0);
  ++u[static_cast<std::size_t>(e)];
}

std::int32_t slot_table::first_fit(std::uint32_t l, std::int32_t e) const {
  while (!fits(l, e)) ++e;
  return e;
}

slot_table slots_with(const network& net, const std::vector<send>* fixed) {
  slot_table t(net);
  if (fixed)
    for (const send& x : *fixed)
      if (auto l = net.find_link(x.src, x.dst)) t.take(*l, x.epoch);
  return t;
}

std::vector<std::uint32_t> device_path(const network& net, device_index a, device_index b) {
  std::vector<std::uint32_t> path;
  if (a == b) return path;
  const route& r = net.topology().route_between(a, b);
  bool ok = true;
  for (link_index cl : r.links) {
    const link& k = net.topology().links()[cl];
    auto l = net.find_link(k.src, k.dst);
    if (!l) {
      ok = false;
      break;
    }
    path.push_back(*l);
  }
  if (ok && !path.empty()) return path;
  // Fewest epochs over what is left of the network.
  path.clear();
  const std::size_t N = net.node_count();
  std::vector<std::int32_t> dist(N, unreachable_epochs);
  std::vector<std::uint32_t> via(N, std::numeric_limits<std::uint32_t>::max());
  using item = std::pair<std::int32_t, node_index>;
  std::priority_queue<item, std::vector<item>, std::greater<>> q;
  dist[a] = 0;
  q.push({0, a});
  while (!q.empty()) {
    auto [du, u] = q.top();
    q.pop();
    if (du != dist[u]) continue;
    for (std::uint32_t l : net.out_links(u)) {
      const te_link& t = net.links()[l];
      if (du + t.offset < dist[t.dst]) {
        dist[t.dst] = du + t.offset;
        via[t.dst] = l;
        q.push({dist[t.dst], t.dst});
      }
    }
  }
  if (dist[b] == unreachable_epochs)
    throw error(errc::infeasible, net.topology()[b].id + " cannot be reached from " + net.topology()[a].id);
  for (node_index v = b; v != a; v = net.links()[via[v]].src) path.push_back(via[v]);
  std::reverse(path.begin(), path.end());
  return path;
}

std::int32_t schedule_path(const network& net, slot_table& slots, std::uint32_t chunk_id,
                           const std::vector<std::uint32_t>& path, std::int32_t ready,
                           std::vector<send>& out, std::vector<std::int32_t>* hold) {
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = i;  // the segment i..j ends at a device
    while (net.is_switch(net.links()[path[j]].dst)) ++j;
    const node_index v = net.links()[path[j]].dst;
    if (hold && (*hold)[v] != unreachable_epochs) {
      ready = (*hold)[v];
      i = j + 1;
      continue;
    }
    std::int32_t e = ready;
    for (bool moved = true; moved;) {
      moved = false;
      for (std::size_t k = i; k <= j; ++k) {
        std::int32_t f = slots.first_fit(path[k], e);
        if (f != e) {
          e = f;
          moved = true;
        }
      }
    }
    for (std::size_t k = i; k <= j; ++k) {
      slots.take(path[k], e);
      const te_link& t = net.links()[path[k]];
      out.push_back({chunk_id, t.src, t.dst, e});
    }
    ready = e + net.links()[path[j]].offset;
    if (hold) (*hold)[v] = ready;
    i = j + 1;
  }
  return ready;
}

void prune_unused(const network& net, const demand& d, std::vector<send>& sends, std::int32_t keep_before) {
  std::map<std::uint32_t, std::size_t> index;
  for (std::size_t i = 0; i < d.chunks.size(); ++i) index.emplace(d.chunks[i].id, i);
  for (bool changed = true; changed;) {
    changed = false;
    // Earliest arrival per (chunk, device); outgoing sends per (chunk, device) and (chunk, switch, epoch).
    std::map<std::pair<std::uint32_t, node_index>, std::pair<std::int32_t, std::size_t>> first;
    std::set<std::pair<std::uint32_t, node_index>> sends_from;
    std::set<std::tuple<std::uint32_t, node_index, std::int32_t>> switch_out;
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const send& x = sends[i];
      if (net.is_switch(x.src)) switch_out.insert({x.chunk, x.src, x.epoch});
      else sends_from.insert({x.chunk, x.src});
      if (!net.is_switch(x.dst)) {
        auto l = net.find_link(x.src, x.dst);
        std::int32_t h = x.epoch + (l ? net.links()[*l].offset : 1);
        auto [it, fresh] = first.try_emplace({x.chunk, x.dst}, h, i);
        if (!fresh && h < it->second.first) it->second = {h, i};
      }
    }
    std::vector<send> kept;
    kept.reserve(sends.size());
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const send& x = sends[i];
      bool useful = true;
      if (x.epoch < keep_before) {
        // history: kept as it happened
      } else if (net.is_switch(x.dst)) {
        useful = switch_out.count({x.chunk, x.dst, x.epoch}) > 0;
      } else {
        const chunk& c = d.chunks[index.at(x.chunk)];
        bool dest = std::find(c.destinations.begin(), c.destinations.end(), x.dst) != c.destinations.end();
        if (x.dst == c.source || first.at({x.chunk, x.dst}).second != i) useful = false;
        else if (!dest && !sends_from.count({x.chunk, x.dst})) useful = false;
      }
      if (useful) kept.push_back(x);
      else changed = true;
    }
    sends.swap(kept);
  }
}

schedule make_schedule(const network& net, const demand& d, std::string method, std::vector<send> sends) {
  schedule s;
  s.topology = net.topology().name();
  s.demand_name = d.name;
  s.method = std::move(method);
  s.epoch_seconds = net.tau();
  s.chunk_bytes = d.chunk_bytes;
  for (const send& x : sends)
    if (!net.is_switch(x.dst)) {
      auto l = net.find_link(x.src, x.dst);
      s.epochs = std::max(s.epochs, x.epoch + (l ? net.links()[*l].offset : 1));
    }
  s.sends = std::move(sends);
  canonicalize(s);
  s.transfer_seconds = s.epochs * net.tau();
  return s;
}

void check_reachable(const network& net, const demand& d) {
  for (const chunk& c : d.chunks)
    for (device_index t : c.destinations)
      if (net.epochs_between(c.source, t) >= unreachable_epochs)
        throw error(errc::infeasible, net.topology()[t].id + " cannot be reached from " +
                                          net.topology()[c.source].id + " (chunk " + std::to_string(c.id) +
                                          "): no path in the network; every method would fail");
}

}  // namespace doppler::comm::detail
