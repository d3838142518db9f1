// Planned transfers (transfer_plan.hpp): checking a plan against its cluster and deriving the views
// the executors need (children per hop, device-to-device legs).
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/transfer_plan.hpp>

#include <algorithm>
#include <cmath>

namespace doppler {

namespace {

error bad_hop(std::size_t h, const std::string& why) {
  return error(errc::bad_argument, "", "hops[" + std::to_string(h) + "]", "transfer plan: " + why);
}

}  // namespace

void transfer_plan::finish(const cluster& c) {
  const std::size_t devices = c.device_count();
  if (source >= devices) throw error(errc::bad_argument, "", "source", "transfer plan: source device out of range");
  if (chunks == 0) throw error(errc::bad_argument, "", "chunks", "transfer plan: needs at least one chunk");
  for (std::size_t i = 0; i < destinations.size(); ++i) {
    device_index d = destinations[i];
    if (d >= devices || d == source || (i > 0 && destinations[i - 1] >= d))
      throw error(errc::bad_argument, "", "destinations[" + std::to_string(i) + "]",
                  "transfer plan: destinations must be distinct devices other than the source, sorted");
  }
  const auto links = c.links();
  auto is_device = [&](node_index n) { return n < devices; };
  // Where each hop's chunk ends up; a hop may start only where its chunk is.
  for (std::size_t h = 0; h < hops.size(); ++h) {
    const transfer_hop& x = hops[h];
    if (x.chunk >= chunks) throw bad_hop(h, "chunk " + std::to_string(x.chunk) + " out of range");
    if (x.link >= links.size()) throw bad_hop(h, "link " + std::to_string(x.link) + " out of range");
    node_index at = links[x.link].src;
    if (x.after < 0) {
      if (at != source)
        throw bad_hop(h, "starts at " + c.node_id(at) + ", which does not hold chunk " + std::to_string(x.chunk));
    } else {
      if (static_cast<std::size_t>(x.after) >= h) throw bad_hop(h, "waits for a later hop");
      const transfer_hop& prev = hops[static_cast<std::size_t>(x.after)];
      if (prev.chunk != x.chunk || links[prev.link].dst != at)
        throw bad_hop(h, "its `after` hop does not bring chunk " + std::to_string(x.chunk) + " to " + c.node_id(at));
    }
  }
  // children and roots
  child_off.assign(hops.size() + 1, 0);
  roots.clear();
  for (const auto& x : hops)
    if (x.after >= 0) ++child_off[static_cast<std::size_t>(x.after) + 1];
  for (std::size_t h = 0; h < hops.size(); ++h) child_off[h + 1] += child_off[h];
  children.assign(child_off.back(), 0);
  {
    auto fill = child_off;
    for (std::size_t h = 0; h < hops.size(); ++h) {
      if (hops[h].after < 0) roots.push_back(static_cast<std::uint32_t>(h));
      else children[fill[static_cast<std::size_t>(hops[h].after)]++] = static_cast<std::uint32_t>(h);
    }
  }
  // toward: the device a hop's leg ends at (back to front: a switch hop takes its first child's)
  for (std::size_t k = hops.size(); k-- > 0;) {
    node_index to = links[hops[k].link].dst;
    if (is_device(to)) {
      hops[k].toward = to;
    } else {
      if (child_off[k] == child_off[k + 1])
        throw bad_hop(k, "chunk " + std::to_string(hops[k].chunk) + " stops at switch " + c.node_id(to) +
                             " (switches do not store)");
      hops[k].toward = hops[children[child_off[k]]].toward;
    }
  }
  // legs: every hop that ends at a device, its `from` the device before the switches
  legs.clear();
  std::vector<std::int32_t> leg_of(hops.size(), -1);  // hop ending at a device → its leg
  std::vector<char> delivered(static_cast<std::size_t>(devices) * chunks, 0);
  for (std::size_t h = 0; h < hops.size(); ++h) {
    node_index to = links[hops[h].link].dst;
    if (!is_device(to)) continue;
    // walk back through switches to the device the chunk left from
    std::int32_t back = static_cast<std::int32_t>(h);
    while (!is_device(links[hops[static_cast<std::size_t>(back)].link].src))
      back = hops[static_cast<std::size_t>(back)].after;  // a switch always has an `after` (checked above)
    const transfer_hop& first = hops[static_cast<std::size_t>(back)];
    transfer_leg leg;
    leg.chunk = hops[h].chunk;
    leg.from = links[first.link].src;
    leg.to = to;
    leg.after = first.after < 0 ? -1 : leg_of[static_cast<std::size_t>(first.after)];
    if (to == source) throw bad_hop(h, "brings chunk " + std::to_string(leg.chunk) + " back to the source");
    char& seen = delivered[static_cast<std::size_t>(to) * chunks + leg.chunk];
    if (seen) throw bad_hop(h, "delivers chunk " + std::to_string(leg.chunk) + " to " + c[to].id + " twice");
    seen = 1;
    leg_of[h] = static_cast<std::int32_t>(legs.size());
    legs.push_back(leg);
  }
  for (device_index d : destinations)
    for (std::uint32_t k = 0; k < chunks; ++k)
      if (!delivered[static_cast<std::size_t>(d) * chunks + k])
        throw error(errc::bad_argument, "", "destinations",
                    "transfer plan: chunk " + std::to_string(k) + " never reaches " + c[d].id);
}

std::uint32_t transfer_plan::chunks_reaching(device_index d) const {
  return static_cast<std::uint32_t>(
      std::count_if(legs.begin(), legs.end(), [d](const transfer_leg& l) { return l.to == d; }));
}

bool wants_plan(const cluster& c, device_index src, std::span<const device_index> dsts) noexcept {
  if (dsts.size() >= 2) return true;
  if (dsts.empty()) return false;
  for (link_index l : c.route_between(src, dsts[0]).links)
    if (c.links()[l].dst < c.device_count() && c.links()[l].dst != dsts[0]) return true;  // via a device
  return false;
}

std::uint32_t chunk_count(double bytes, double chunk_bytes, std::uint32_t max_chunks) noexcept {
  if (!(bytes > 0) || !(chunk_bytes > 0) || max_chunks <= 1) return 1;
  double k = std::ceil(bytes / chunk_bytes);
  return k >= max_chunks ? max_chunks : std::max<std::uint32_t>(1, static_cast<std::uint32_t>(k));
}

}  // namespace doppler
