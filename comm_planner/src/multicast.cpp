// The comm planner behind the runtime's planned transfers (multicast.hpp).
#include <doppler/comm/multicast.hpp>
#include <doppler/runtime/error.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace doppler::comm {

demand tensor_demand(const cluster& c, device_index src, std::span<const device_index> dsts, double bytes,
                     std::uint32_t chunks) {
  if (!(bytes > 0)) throw error(errc::bad_argument, "tensor demand: bytes must be positive");
  if (chunks == 0) throw error(errc::bad_argument, "tensor demand: needs at least one chunk");
  demand d;
  d.name = "tensor-" + c[src].id + "x" + std::to_string(dsts.size());
  d.chunk_bytes = bytes / chunks;
  for (std::uint32_t k = 0; k < chunks; ++k)
    d.chunks.push_back(chunk{k, src, std::vector<device_index>(dsts.begin(), dsts.end()), 0});
  d.validate(c, "<tensor demand>");
  return d;
}

transfer_plan to_transfer_plan(const schedule& s, const demand& d, const cluster& c) {
  if (d.chunks.empty()) throw error(errc::bad_argument, "transfer plan: empty demand");
  const device_index source = d.chunks.front().source;
  transfer_plan tp;
  tp.source = source;
  tp.destinations = d.chunks.front().destinations;
  std::sort(tp.destinations.begin(), tp.destinations.end());
  tp.chunks = static_cast<std::uint32_t>(d.chunks.size());
  tp.method = s.method;
  // The fastest directed link from node a to node b.
  const auto links = c.links();
  auto link_of = [&](node_index a, node_index b) {
    link_index best = std::numeric_limits<link_index>::max();
    for (link_index l = 0; l < links.size(); ++l)
      if (links[l].src == a && links[l].dst == b && (best == std::numeric_limits<link_index>::max() ||
                                                     links[l].bandwidth > links[best].bandwidth))
        best = l;
    return best;
  };
  // Sends in epoch order; within an epoch a send waits for the one bringing its chunk (switches
  // forward within the epoch), so repeat until no pending send can be placed.
  std::vector<send> pending = s.sends;
  std::stable_sort(pending.begin(), pending.end(), [](const send& a, const send& b) { return a.epoch < b.epoch; });
  const std::size_t nodes = c.node_count();
  std::vector<std::int32_t> holder(nodes * tp.chunks, -1);  // hop that first brought chunk k to node n
  auto at = [&](node_index n, std::uint32_t k) -> std::int32_t& { return holder[static_cast<std::size_t>(n) * tp.chunks + k]; };
  std::vector<std::int32_t> hop_epoch;
  while (!pending.empty()) {
    std::vector<send> later;
    bool progress = false;
    for (const send& x : pending) {
      auto k = d.find_chunk(x.chunk);
      if (!k) throw error(errc::bad_argument, "transfer plan: the schedule sends unknown chunk " + std::to_string(x.chunk));
      const auto ck = static_cast<std::uint32_t>(*k);
      if (x.src >= nodes || x.dst >= nodes)
        throw error(errc::bad_argument, "transfer plan: a send names a node out of range");
      std::int32_t after = -1;
      if (x.src != source) {
        after = at(x.src, ck);
        if (after < 0 || hop_epoch[static_cast<std::size_t>(after)] > x.epoch) {
          later.push_back(x);
          continue;
        }
      }
      progress = true;
      if (x.dst == source || at(x.dst, ck) >= 0) continue;  // already there: a repeated delivery
      link_index l = link_of(x.src, x.dst);
      if (l == std::numeric_limits<link_index>::max())
        throw error(errc::bad_argument, "transfer plan: no link " + c.node_id(x.src) + " -> " + c.node_id(x.dst));
      at(x.dst, ck) = static_cast<std::int32_t>(tp.hops.size());
      tp.hops.push_back(transfer_hop{ck, l, after, 0});
      hop_epoch.push_back(x.epoch);
    }
    if (!progress)
      throw error(errc::bad_argument, "transfer plan: the schedule sends chunk " + std::to_string(later.front().chunk) +
                                          " from " + c.node_id(later.front().src) + ", which never holds it");
    pending = std::move(later);
  }
  // Drop hops whose chunk goes nowhere useful (into a switch and no further), back to front.
  const std::size_t devices = c.device_count();
  std::vector<char> useful(tp.hops.size(), 0);
  for (std::size_t h = tp.hops.size(); h-- > 0;) {
    if (links[tp.hops[h].link].dst < devices) useful[h] = 1;
    if (useful[h] && tp.hops[h].after >= 0) useful[static_cast<std::size_t>(tp.hops[h].after)] = 1;
  }
  std::vector<std::int32_t> renumber(tp.hops.size(), -1);
  std::vector<transfer_hop> kept;
  for (std::size_t h = 0; h < tp.hops.size(); ++h) {
    if (!useful[h]) continue;
    transfer_hop x = tp.hops[h];
    if (x.after >= 0) x.after = renumber[static_cast<std::size_t>(x.after)];
    renumber[h] = static_cast<std::int32_t>(kept.size());
    kept.push_back(x);
  }
  tp.hops = std::move(kept);
  tp.finish(c);
  return tp;
}

double direct_seconds(const cluster& c, device_index src, std::span<const device_index> dsts, double bytes) {
  std::vector<double> load(c.links().size(), 0.0);
  double latency = 0;
  for (device_index d : dsts) {
    const route& rt = c.route_between(src, d);
    latency = std::max(latency, rt.latency);
    for (link_index l : rt.links) load[l] += bytes;
  }
  double busiest = 0;
  for (link_index l = 0; l < load.size(); ++l) busiest = std::max(busiest, load[l] / c.links()[l].bandwidth);
  return busiest + latency;
}

multicast_planner::multicast_planner(std::shared_ptr<const cluster> c, multicast_options opt)
    : c_(std::move(c)), opt_(std::move(opt)) {
  if (!c_) throw error(errc::bad_argument, "multicast_planner: no cluster");
  if (!(opt_.chunk_bytes > 0)) throw error(errc::bad_argument, "multicast_planner: chunk_bytes must be positive");
  if (opt_.max_chunks == 0) throw error(errc::bad_argument, "multicast_planner: max_chunks must be at least 1");
}

std::shared_ptr<const transfer_plan> multicast_planner::solve(device_index src, std::span<const device_index> dsts,
                                                              double bytes, const std::string& method) const {
  const std::uint32_t k = chunk_count(bytes, opt_.chunk_bytes, opt_.max_chunks);
  demand d = tensor_demand(*c_, src, dsts, bytes, k);
  plan_result r = comm::plan(*c_, d, plan_options{}.with_method(method).with_time_limit(opt_.time_limit));
  auto tp = std::make_shared<transfer_plan>(to_transfer_plan(r.sched, d, *c_));
  tp->planned_seconds = r.report.simulated_seconds > 0 ? r.report.simulated_seconds : r.report.transfer_seconds;
  return tp;
}

std::pair<bool, std::shared_ptr<const transfer_plan>> multicast_planner::cached(
    device_index src, std::span<const device_index> dsts, double bytes) const {
  std::lock_guard lock(mutex_);
  auto it = cache_.find(key{src, std::vector<device_index>(dsts.begin(), dsts.end()), bytes});
  if (it == cache_.end()) return {false, nullptr};
  return {true, it->second};
}

void multicast_planner::store(device_index src, std::span<const device_index> dsts, double bytes,
                              std::shared_ptr<const transfer_plan> p) {
  std::lock_guard lock(mutex_);
  cache_[key{src, std::vector<device_index>(dsts.begin(), dsts.end()), bytes}] = std::move(p);
}

std::shared_ptr<const transfer_plan> multicast_planner::plan(device_index src, std::span<const device_index> dsts,
                                                             double bytes) {
  if (auto [found, p] = cached(src, dsts, bytes); found) {
    ++hits_;
    return p;
  }
  ++misses_;
  std::shared_ptr<const transfer_plan> p;
  if (bytes > 0 && opt_.method != "direct") {
    try {
      p = solve(src, dsts, bytes, opt_.method);
      if (!opt_.keep_slower && p->planned_seconds >= direct_seconds(*c_, src, dsts, bytes)) p = nullptr;
    } catch (const error& e) {
      // Chunks too small for the time-expanded network (latency of ≥ max_hop_epochs epochs): a tiny
      // tensor, copied directly as a matter of course, not a failure.
      if (e.path() != "chunk_bytes") {
        ++failures_;
        spdlog::warn("comm planner: {} bytes from {} to {} device(s): {}; copying directly", bytes, (*c_)[src].id,
                     dsts.size(), e.what());
      }
      p = nullptr;
    } catch (const std::exception& e) {
      ++failures_;
      spdlog::warn("comm planner: {} bytes from {} to {} device(s): {}; copying directly", bytes, (*c_)[src].id,
                   dsts.size(), e.what());
      p = nullptr;
    }
  }
  store(src, dsts, bytes, p);
  return p;
}

}  // namespace doppler::comm
