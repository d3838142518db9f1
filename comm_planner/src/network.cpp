// The time-expanded network: τ, per-link windows, capacities, arrival offsets and epoch distances.
#include <doppler/comm/network.hpp>
#include <doppler/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <queue>

namespace doppler::comm {

std::optional<epoch_mode> parse_epoch_mode(std::string_view s) noexcept {
  if (s == "fast") return epoch_mode::fast;
  if (s == "slow") return epoch_mode::slow;
  if (s == "given") return epoch_mode::given;
  return std::nullopt;
}

namespace {

/// δ = ⌈α/τ⌉, or 0 when α/τ ≤ 0.1 (latency small against an epoch).
std::int32_t latency_epochs(double alpha, double tau) {
  double r = alpha / tau;
  if (r <= 0.1) return 0;
  return static_cast<std::int32_t>(std::ceil(r - 1e-9));
}

/// β = ⌈chunk/(bw·τ)⌉ − 1.
std::int32_t extra_epochs(double chunk, double bw, double tau) {
  double r = chunk / (bw * tau);
  return std::max<std::int32_t>(0, static_cast<std::int32_t>(std::ceil(r - 1e-9)) - 1);
}

}  // namespace

network::network(const cluster& c, double chunk_bytes, epoch_mode mode, double tau,
                 const std::vector<link_index>& removed)
    : cluster_(&c), chunk_bytes_(chunk_bytes), devices_(c.device_count()) {
  if (!(chunk_bytes >= min_chunk_bytes && chunk_bytes <= max_chunk_bytes))
    throw error(errc::bad_argument, "", "chunk_bytes",
                fmt::format("{:.10g} is not a chunk size: chunks are {:.10g} to {:.10g} bytes (1 TiB)", chunk_bytes,
                            min_chunk_bytes, max_chunk_bytes));
  std::vector<bool> gone(c.links().size(), false);
  for (link_index l : removed)
    if (l < gone.size()) gone[l] = true;
  double lo = 0, hi = 0;
  for (link_index l = 0; l < c.links().size(); ++l) {
    if (gone[l]) continue;
    double bw = c.links()[l].bandwidth;
    lo = lo == 0 ? bw : std::min(lo, bw);
    hi = std::max(hi, bw);
  }
  if (mode == epoch_mode::given) {
    if (!(tau > 0) || !std::isfinite(tau))
      throw error(errc::bad_argument, "", "tau", fmt::format("{:g} is not a positive number of seconds", tau));
    tau_ = tau;
  } else if (hi == 0) {
    tau_ = 1;  // no links: nothing will be sent
  } else {
    tau_ = chunk_bytes / (mode == epoch_mode::fast ? hi : lo);
  }
  out_.resize(c.node_count());
  in_.resize(c.node_count());
  for (link_index l = 0; l < c.links().size(); ++l) {
    if (gone[l]) continue;
    const link& k = c.links()[l];
    // A shape the model cannot express, refused rather than planned wrong: a switch's onward send
    // leaves in the epoch the chunk entered it, and its link's offset counts the α into that switch:
    // one switch between devices. Along a chain of switches the earlier hops' α would be dropped (a
    // leaf-spine path planned 21 epochs where its α alone took 40). (A send names its link by its two
    // ends; the cluster itself refuses two links with the same ends.)
    if (is_switch(k.src) && is_switch(k.dst))
      throw error(errc::bad_argument, "", "links",
                  fmt::format("{}: link {} -> {} joins two switches; the comm planner models one switch between "
                              "devices (a switch forwards in the epoch a chunk enters it), not chains of switches: "
                              "model the fabric as one switch",
                              c.name(), c.node_id(k.src), c.node_id(k.dst)));
    te_link t;
    t.src = k.src;
    t.dst = k.dst;
    t.cluster_link = l;
    t.bandwidth = k.bandwidth;
    t.latency = k.latency;
    auto id = static_cast<std::uint32_t>(links_.size());
    links_.push_back(t);
    out_[k.src].push_back(id);
    in_[k.dst].push_back(id);
  }
  // Windows and capacities, then offsets (a link out of a switch accounts for the in-hop too).
  // The limits are checked in doubles before anything is cast to an epoch count.
  const std::string tau_text =
      fmt::format("an epoch of {:.4g} s{}", tau_,
                  mode == epoch_mode::given ? "" : mode == epoch_mode::fast ? " (fast: one chunk on the fastest link)"
                                                                            : " (slow: one chunk on the slowest link)");
  auto link_text = [&](const te_link& t) { return "link " + c.node_id(t.src) + " -> " + c.node_id(t.dst); };
  for (te_link& t : links_) {
    const double occupy = chunk_bytes / (t.bandwidth * tau_);  // epochs one chunk occupies the link
    if (!(occupy <= max_hop_epochs))
      throw error(errc::bad_argument, "", "tau",
                  fmt::format("{} is too short for {:.10g}-byte chunks on {}: {} would take {:.4g} epochs per chunk "
                              "(at most {})", tau_text, chunk_bytes, c.name(), link_text(t), occupy, max_hop_epochs));
    std::int32_t beta = extra_epochs(chunk_bytes, t.bandwidth, tau_);
    t.window = beta + 1;
    const double per_window = std::floor(t.window * t.bandwidth * tau_ / chunk_bytes + 1e-9);
    if (!(per_window <= max_epoch_chunks))
      throw error(errc::bad_argument, "", "tau",
                  fmt::format("{} is too long for {:.10g}-byte chunks on {}: {} would carry {:.4g} chunks per epoch "
                              "(at most {})", tau_text, chunk_bytes, c.name(), link_text(t), per_window / t.window,
                              max_epoch_chunks));
    t.cap = std::max<std::int32_t>(1, static_cast<std::int32_t>(per_window));
  }
  for (te_link& t : links_) {
    if (is_switch(t.dst)) {
      t.offset = 0;
      continue;
    }
    double alpha = t.latency;
    std::int32_t beta = t.window - 1;
    if (is_switch(t.src)) {
      double in_alpha = 0;
      for (std::uint32_t i : in_[t.src]) {
        in_alpha = std::max(in_alpha, links_[i].latency);
        beta = std::max(beta, links_[i].window - 1);
      }
      alpha += in_alpha;
    }
    if (!(alpha / tau_ + beta + 1 <= max_hop_epochs)) {
      // Fast/slow τ follows the chunk size: there tiny chunks make the latency many epochs.
      const bool given = mode == epoch_mode::given;
      throw error(errc::bad_argument, "", given ? "tau" : "chunk_bytes",
                  fmt::format("{}{} is too short for the latency of {} on {} ({:.4g} s): a hop would take {:.4g} "
                              "epochs (at most {})",
                              given ? "" : fmt::format("{:.10g}-byte chunks are too small: ", chunk_bytes), tau_text,
                              link_text(t), c.name(), alpha, alpha / tau_ + beta + 1, max_hop_epochs));
    }
    t.offset = latency_epochs(alpha, tau_) + beta + 1;
  }
}

std::optional<std::uint32_t> network::find_link(node_index src, node_index dst) const {
  if (src >= out_.size()) return std::nullopt;
  for (std::uint32_t l : out_[src])
    if (links_[l].dst == dst) return l;
  return std::nullopt;
}

void network::compute_distances() const {
  const std::size_t n = node_count(), d = devices_;
  to_node_.assign(d * n, unreachable_epochs);
  from_node_.assign(n * d, unreachable_epochs);
  using item = std::pair<std::int32_t, node_index>;
  std::vector<std::int32_t> dist(n);
  auto dijkstra = [&](node_index start, bool forward) {
    std::fill(dist.begin(), dist.end(), unreachable_epochs);
    std::priority_queue<item, std::vector<item>, std::greater<>> q;
    dist[start] = 0;
    q.push({0, start});
    while (!q.empty()) {
      auto [du, u] = q.top();
      q.pop();
      if (du != dist[u]) continue;
      for (std::uint32_t l : forward ? out_[u] : in_[u]) {
        const te_link& t = links_[l];
        node_index v = forward ? t.dst : t.src;
        // A switch can only forward what entered it: backwards, a switch is not a starting holder.
        std::int32_t nd = du + t.offset;
        if (nd < dist[v]) {
          dist[v] = nd;
          q.push({nd, v});
        }
      }
    }
  };
  for (device_index a = 0; a < d; ++a) {
    dijkstra(a, true);
    std::copy(dist.begin(), dist.end(), to_node_.begin() + static_cast<std::ptrdiff_t>(a * n));
  }
  for (device_index b = 0; b < d; ++b) {
    dijkstra(b, false);
    for (node_index v = 0; v < n; ++v) from_node_[v * d + b] = dist[v];
  }
}

std::int32_t network::epochs_between(device_index a, device_index b) const {
  if (to_node_.empty()) compute_distances();
  return to_node_[a * node_count() + b];
}

std::int32_t network::epochs_to_node(device_index a, node_index n) const {
  if (to_node_.empty()) compute_distances();
  return to_node_[a * node_count() + n];
}

std::int32_t network::epochs_from_node(node_index n, device_index b) const {
  if (to_node_.empty()) compute_distances();
  return from_node_[n * devices_ + b];
}

}  // namespace doppler::comm
