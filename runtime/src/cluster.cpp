// The cluster model: validation, duplex expansion and all-pairs device routes.
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/tolerance.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <queue>
#include <unordered_map>

namespace doppler {

std::string_view to_string(device_kind k) noexcept {
  switch (k) {
    case device_kind::gpu: return "gpu";
    case device_kind::cpu: return "cpu";
  }
  return "gpu";
}

std::optional<device_kind> parse_device_kind(std::string_view s) noexcept {
  if (s == "gpu") return device_kind::gpu;
  if (s == "cpu") return device_kind::cpu;
  return std::nullopt;
}

double route::time(double bytes) const noexcept { return latency + bytes / bandwidth; }

namespace {

[[noreturn]] void fail(errc code, std::string path, std::string reason) {
  throw error(code, {}, std::move(path), std::move(reason));
}

std::string path_of(const char* array, std::size_t i, const char* field) {
  std::string p = std::string(array) + "[" + std::to_string(i) + "]";
  if (field) p += std::string(".") + field;
  return p;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// A finite value within [lo, hi] (`unit` names it in the message; cluster_limits).
void check_within(double v, double lo, double hi, const char* unit, const char* array, std::size_t i,
                  const char* field) {
  if (!std::isfinite(v)) fail(errc::bad_value, path_of(array, i, field), "must be finite");
  if (!(v >= lo && v <= hi))
    fail(errc::bad_value, path_of(array, i, field),
         "must be between " + num(lo) + " and " + num(hi) + " " + unit + ", got " + num(v));
}

/// Route quality: lower latency, then fewer hops, then wider bottleneck. Latencies within a relative
/// 1e-9 count as equal (nearly_equal), so sums taken in different orders do not decide a tie by rounding.
struct route_key {
  double latency = std::numeric_limits<double>::infinity();
  std::uint32_t hops = 0;
  double bandwidth = 0;
};

bool better(const route_key& a, const route_key& b) {
  if (!nearly_equal(a.latency, b.latency)) return a.latency < b.latency;
  if (a.hops != b.hops) return a.hops < b.hops;
  return a.bandwidth > b.bandwidth;
}

/// The same order without tolerance: a strict weak order, as the heap requires.
bool exactly_better(const route_key& a, const route_key& b) {
  if (a.latency != b.latency) return a.latency < b.latency;
  if (a.hops != b.hops) return a.hops < b.hops;
  return a.bandwidth > b.bandwidth;
}

}  // namespace

cluster::cluster(std::string name, std::vector<device> devices, std::vector<std::string> switches,
                 std::vector<link_spec> links)
    : name_(std::move(name)),
      devices_(std::move(devices)),
      switches_(std::move(switches)),
      specs_(std::move(links)) {
  if (devices_.empty()) fail(errc::bad_value, "devices", "a cluster needs at least one device");

  // Ids: non-empty and unique across devices and switches.
  std::unordered_map<std::string_view, node_index> ids;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const device& d = devices_[i];
    if (d.id.empty()) fail(errc::bad_value, path_of("devices", i, "id"), "must not be empty");
    auto [it, fresh] = ids.emplace(d.id, static_cast<node_index>(i));
    if (!fresh)
      fail(errc::duplicate_id, path_of("devices", i, "id"),
                  "\"" + d.id + "\" is already the id of devices[" + std::to_string(it->second) + "]");
    if (d.kind != device_kind::gpu && d.kind != device_kind::cpu)
      fail(errc::unknown_kind, path_of("devices", i, "kind"), "unknown device kind");
    check_within(d.flops, cluster_limits::min_flops, cluster_limits::max_flops, "FLOP/s", "devices", i, "flops");
    check_within(d.memory, 1, cluster_limits::max_memory, "bytes", "devices", i, "memory");
  }
  const auto device_count = static_cast<node_index>(devices_.size());
  for (std::size_t i = 0; i < switches_.size(); ++i) {
    const std::string& s = switches_[i];
    if (s.empty()) fail(errc::bad_value, path_of("switches", i, nullptr), "must not be empty");
    auto [it, fresh] = ids.emplace(s, static_cast<node_index>(device_count + i));
    if (!fresh) {
      std::string other = it->second < device_count
                              ? "devices[" + std::to_string(it->second) + "]"
                              : "switches[" + std::to_string(it->second - device_count) + "]";
      fail(errc::duplicate_id, path_of("switches", i, nullptr),
                  "\"" + s + "\" is already the id of " + other);
    }
  }

  // Links: ends exist and differ, numbers valid; duplex specs add the reverse direction.
  auto node_of = [&](const std::string& id, std::size_t i, const char* field) {
    auto it = ids.find(id);
    if (it == ids.end())
      fail(errc::unknown_id, path_of("links", i, field),
                  "\"" + id + "\" is neither a device nor a switch");
    return it->second;
  };
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const link_spec& s = specs_[i];
    node_index src = node_of(s.src, i, "src");
    node_index dst = node_of(s.dst, i, "dst");
    if (src == dst)
      fail(errc::bad_value, path_of("links", i, "dst"), "a link from \"" + s.src + "\" to itself");
    check_within(s.bandwidth, cluster_limits::min_bandwidth, cluster_limits::max_bandwidth, "B/s", "links", i,
                 "bandwidth");
    check_within(s.latency, 0, cluster_limits::max_latency, "s", "links", i, "latency");
    auto spec = static_cast<std::uint32_t>(i);
    links_.push_back({src, dst, s.bandwidth, s.latency, spec});
    if (s.duplex) links_.push_back({dst, src, s.bandwidth, s.latency, spec});
  }
  // One directed link per ordered pair: routes take one link between two nodes, so a second one
  // (e.g. two NVLinks written as two links) would be ignored by the simulator, its bandwidth lost
  // silently, and the comm planner names a send by its ends.
  {
    std::unordered_map<std::uint64_t, std::uint32_t> first;  // (src, dst) -> spec of its first link
    for (const link& l : links_) {
      auto [it, fresh] = first.emplace((std::uint64_t{l.src} << 32) | l.dst, l.spec);
      if (!fresh)
        fail(errc::bad_value, path_of("links", l.spec, nullptr),
             "a second link " + node_id(l.src) + " -> " + node_id(l.dst) + " (links[" + std::to_string(it->second) +
                 "] already joins them): merge them into one link with the summed bandwidth");
    }
  }

  // All-pairs device routes: Dijkstra from every device over all nodes with the lexicographic key
  // (latency, hops, -bottleneck). The key is monotone under extension (latency and hops only grow,
  // the bottleneck only shrinks, and a better prefix stays at least as good), so Dijkstra is exact.
  const std::size_t n = node_count();
  std::vector<std::vector<link_index>> out(n);
  for (std::size_t l = 0; l < links_.size(); ++l) out[links_[l].src].push_back(static_cast<link_index>(l));

  constexpr auto none = std::numeric_limits<link_index>::max();
  const double inf = std::numeric_limits<double>::infinity();
  routes_.resize(devices_.size() * devices_.size());
  std::vector<route_key> key(n);
  std::vector<link_index> pred(n);
  std::vector<char> done(n);
  using entry = std::pair<route_key, node_index>;
  auto worse = [](const entry& a, const entry& b) { return exactly_better(b.first, a.first); };

  for (device_index a = 0; a < device_count; ++a) {
    std::fill(key.begin(), key.end(), route_key{});
    std::fill(pred.begin(), pred.end(), none);
    std::fill(done.begin(), done.end(), 0);
    key[a] = {0.0, 0, inf};
    std::priority_queue<entry, std::vector<entry>, decltype(worse)> heap(worse);
    heap.push({key[a], a});
    while (!heap.empty()) {
      auto [k, u] = heap.top();
      heap.pop();
      if (done[u]) continue;
      done[u] = 1;
      for (link_index l : out[u]) {
        const link& e = links_[l];
        if (done[e.dst]) continue;
        route_key cand{k.latency + e.latency, k.hops + 1, std::min(k.bandwidth, e.bandwidth)};
        if (pred[e.dst] == none || better(cand, key[e.dst])) {
          key[e.dst] = cand;
          pred[e.dst] = l;
          heap.push({cand, e.dst});
        }
      }
    }
    for (device_index b = 0; b < device_count; ++b) {
      route& r = routes_[static_cast<std::size_t>(a) * devices_.size() + b];
      if (a == b) {
        r.bandwidth = inf;
        continue;
      }
      if (!done[b])
        fail(errc::unreachable, "links",
                    "device \"" + devices_[a].id + "\" cannot reach device \"" + devices_[b].id + "\"");
      for (node_index v = b; v != a; v = links_[pred[v]].src) r.links.push_back(pred[v]);
      std::reverse(r.links.begin(), r.links.end());
      r.latency = key[b].latency;
      r.bandwidth = key[b].bandwidth;
    }
  }
}

const std::string& cluster::node_id(node_index n) const noexcept {
  return n < devices_.size() ? devices_[n].id : switches_[n - devices_.size()];
}

std::optional<device_index> cluster::find_device(std::string_view id) const {
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].id == id) return static_cast<device_index>(i);
  return std::nullopt;
}

double cluster::total_flops() const noexcept {
  return std::accumulate(devices_.begin(), devices_.end(), 0.0,
                         [](double s, const device& d) { return s + d.flops; });
}

double cluster::max_device_flops() const noexcept {
  double m = 0;
  for (const device& d : devices_) m = std::max(m, d.flops);
  return m;
}

}  // namespace doppler
