// The validator and schedule simulator (epoch replay + α-β replay).
#include <doppler/comm/validate.hpp>
#include <doppler/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>

namespace doppler::comm {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw error(errc::bad_value, "", path, why);
}

/// The schedule's chunks must be the demand's.
void check_chunk_bytes(const demand& d, const schedule& s) {
  if (std::abs(s.chunk_bytes - d.chunk_bytes) > 1e-9 * d.chunk_bytes)
    fail("chunk_bytes", fmt::format("is {:.10g} but the demand's chunks are {:.10g} bytes", s.chunk_bytes, d.chunk_bytes));
}

constexpr std::int32_t never = std::numeric_limits<std::int32_t>::max();

struct switch_state {
  int in = 0, out = 0;
  double ready = std::numeric_limits<double>::infinity();  // α-β: earliest arrival into the switch
};

}  // namespace

replay_report validate_schedule(const network& net, const demand& d, const schedule& s,
                                const validate_options& opt) {
  const cluster& c = net.topology();
  const std::size_t D = c.device_count(), C = d.chunks.size();
  if (std::abs(s.epoch_seconds - net.tau()) > 1e-9 * net.tau())
    fail("epoch_seconds", "does not match the network's epoch length");
  check_chunk_bytes(d, s);
  std::unordered_map<std::uint32_t, std::uint32_t> chunk_index;
  for (std::size_t i = 0; i < C; ++i) chunk_index.emplace(d.chunks[i].id, static_cast<std::uint32_t>(i));

  std::vector<std::int32_t> hold(C * D, never);
  std::vector<double> avail(C * D, std::numeric_limits<double>::infinity());
  std::vector<std::int32_t> last_send(C * D, -1);
  for (std::size_t i = 0; i < C; ++i) {
    hold[i * D + d.chunks[i].source] = 0;
    avail[i * D + d.chunks[i].source] = 0;
  }
  std::vector<std::size_t> order(s.sends.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const send &x = s.sends[a], &y = s.sends[b];
    if (x.epoch != y.epoch) return x.epoch < y.epoch;
    return net.is_switch(x.src) < net.is_switch(y.src);
  });
  std::vector<std::vector<std::int32_t>> link_epochs(net.links().size());
  std::vector<double> link_free(net.links().size(), 0.0);
  std::vector<std::uint32_t> send_link(s.sends.size()), send_chunk(s.sends.size());
  replay_report rep;
  rep.sends = s.sends.size();
  rep.bytes_moved = static_cast<double>(s.sends.size()) * d.chunk_bytes;
  rep.send_begin.assign(s.sends.size(), 0.0);
  rep.send_end.assign(s.sends.size(), 0.0);

  auto path_of = [](std::size_t i) { return "sends[" + std::to_string(i) + "]"; };
  auto describe = [&](std::size_t i) {
    const send& x = s.sends[i];
    return "chunk " + std::to_string(x.chunk) + " " + c.node_id(x.src) + " -> " + c.node_id(x.dst) +
           " at epoch " + std::to_string(x.epoch);
  };
  // Link check, capacity and bookkeeping common to device and switch sends.
  auto take_link = [&](std::size_t i) {
    const send& x = s.sends[i];
    auto ci = chunk_index.find(x.chunk);
    if (ci == chunk_index.end()) fail(path_of(i) + ".chunk", "chunk " + std::to_string(x.chunk) + " is not in the demand");
    auto l = net.find_link(x.src, x.dst);
    if (!l) fail(path_of(i), describe(i) + ": there is no link " + c.node_id(x.src) + " -> " + c.node_id(x.dst));
    const te_link& t = net.links()[*l];
    auto& eps = link_epochs[*l];
    auto first = std::lower_bound(eps.begin(), eps.end(), x.epoch - t.window + 1);
    auto used = static_cast<std::int32_t>(eps.end() - first);
    if (used + 1 > t.cap)
      fail(path_of(i), describe(i) + ": link over capacity (" + std::to_string(used + 1) + " chunks within " +
                           std::to_string(t.window) + " epoch(s); it carries " + std::to_string(t.cap) + ")");
    eps.push_back(x.epoch);
    send_link[i] = *l;
    send_chunk[i] = ci->second;
  };
  std::unordered_map<std::uint64_t, switch_state> sw;  // (switch, chunk) within the current epoch
  auto key = [&](node_index n, std::uint32_t ci) { return static_cast<std::uint64_t>(n) * (C + 1) + ci; };
  std::int32_t last_arrival = 0;  // the latest arrival at a device of any send, and that send
  std::size_t latest_send = 0;
  auto arrive = [&](std::size_t i, double start) {
    const send& x = s.sends[i];
    const te_link& t = net.links()[send_link[i]];
    const std::uint32_t ci = send_chunk[i];
    double begin = std::max(start, link_free[send_link[i]]);
    double end = begin + d.chunk_bytes / t.bandwidth;
    link_free[send_link[i]] = end;
    rep.send_begin[i] = begin;
    rep.send_end[i] = end;
    if (net.is_switch(x.dst)) {
      switch_state& st = sw[key(x.dst, ci)];
      ++st.in;
      st.ready = std::min(st.ready, end + t.latency);
    } else {
      if (x.epoch + t.offset > last_arrival) {
        last_arrival = x.epoch + t.offset;
        latest_send = i;
      }
      auto& h = hold[ci * D + x.dst];
      h = std::min(h, x.epoch + t.offset);
      auto& a = avail[ci * D + x.dst];
      a = std::min(a, end + t.latency);
    }
  };

  std::size_t pos = 0;
  std::vector<std::size_t> pending;
  while (pos < order.size()) {
    const std::int32_t e = s.sends[order[pos]].epoch;
    sw.clear();
    pending.clear();
    for (; pos < order.size() && s.sends[order[pos]].epoch == e; ++pos) {
      std::size_t i = order[pos];
      const send& x = s.sends[i];
      if (net.is_switch(x.src)) {
        pending.push_back(i);
        continue;
      }
      take_link(i);
      std::uint32_t ci = send_chunk[i];
      if (hold[ci * D + x.src] > e)
        fail(path_of(i), describe(i) + ": " + c.node_id(x.src) + " does not hold the chunk in that epoch" +
                             (hold[ci * D + x.src] == never
                                  ? std::string(" (it never receives it before)")
                                  : " (it arrives at epoch " + std::to_string(hold[ci * D + x.src]) + ")"));
      last_send[ci * D + x.src] = std::max(last_send[ci * D + x.src], e);
      arrive(i, avail[ci * D + x.src]);
    }
    // Switch sends: each needs the chunk to have entered that switch in this epoch (chains of
    // switches resolve over repeated passes).
    bool progress = true;
    while (!pending.empty() && progress) {
      progress = false;
      std::vector<std::size_t> next;
      for (std::size_t i : pending) {
        const send& x = s.sends[i];
        auto ci = chunk_index.find(x.chunk);
        auto it = ci == chunk_index.end() ? sw.end() : sw.find(key(x.src, ci->second));
        if (it == sw.end() || it->second.in == 0) {
          next.push_back(i);
          continue;
        }
        take_link(i);
        switch_state& st = it->second;
        if (!opt.switch_copy && st.out + 1 > st.in)
          fail(path_of(i), describe(i) + ": switch " + c.node_id(x.src) +
                               " would copy the chunk (it sends it out more often than it entered)");
        ++st.out;
        arrive(i, st.ready);
        progress = true;
      }
      pending.swap(next);
    }
    if (!pending.empty()) {
      std::size_t i = *std::min_element(pending.begin(), pending.end());
      fail(path_of(i), describe(i) + ": the chunk did not enter switch " + c.node_id(s.sends[i].src) +
                           " in that epoch (switches do not store)");
    }
  }
  // Every destination holds every chunk it needs.
  rep.chunk_epochs.assign(C, 0);
  for (std::size_t i = 0; i < C; ++i)
    for (device_index t : d.chunks[i].destinations) {
      std::int32_t h = hold[i * D + t];
      if (h == never)
        fail("sends", c[t].id + " never receives chunk " + std::to_string(d.chunks[i].id) + " (from " +
                          c[d.chunks[i].source].id + ")");
      rep.epochs_used = std::max(rep.epochs_used, h);
      rep.chunk_epochs[i] = std::max(rep.chunk_epochs[i], h);
      rep.simulated_seconds = std::max(rep.simulated_seconds, avail[i * D + t]);
    }
  if (s.epochs < rep.epochs_used)
    fail("epochs", "the header says " + std::to_string(s.epochs) + " epochs but the sends need " +
                       std::to_string(rep.epochs_used));
  if (s.epochs < last_arrival)  // a send after the schedule's end (redundant, but the header must cover it)
    fail(path_of(latest_send), describe(latest_send) + ": arrives at epoch " + std::to_string(last_arrival) +
                                 ", after the header's " + std::to_string(s.epochs) + " epochs");
  rep.transfer_seconds = rep.epochs_used * net.tau();
  rep.output_bytes = d.output_size(D);
  rep.algbw = rep.transfer_seconds > 0 ? rep.output_bytes / rep.transfer_seconds : 0;
  // Peak buffer: chunks a device sources or needs stay; relayed chunks live until their last send.
  std::vector<std::vector<std::pair<std::int32_t, int>>> events(D);
  std::vector<char> keeps(C * D, 0);
  for (std::size_t i = 0; i < C; ++i) {
    keeps[i * D + d.chunks[i].source] = 1;
    for (device_index t : d.chunks[i].destinations) keeps[i * D + t] = 1;
  }
  for (std::size_t i = 0; i < C; ++i)
    for (std::size_t v = 0; v < D; ++v) {
      std::int32_t h = hold[i * D + v];
      if (h == never) continue;
      events[v].push_back({h, +1});
      if (!keeps[i * D + v]) events[v].push_back({std::max(h, last_send[i * D + v]) + 1, -1});
    }
  rep.peak_buffer_bytes.assign(D, 0);
  for (std::size_t v = 0; v < D; ++v) {
    std::sort(events[v].begin(), events[v].end());
    int live = 0, peak = 0;
    for (auto [ep, delta] : events[v]) {
      live += delta;
      peak = std::max(peak, live);
    }
    rep.peak_buffer_bytes[v] = peak * d.chunk_bytes;
  }
  return rep;
}

replay_report validate_schedule(const cluster& c, const demand& d, const schedule& s,
                                const validate_options& opt) {
  // The schedule's epoch length and chunk size must make a bounded time-expanded network.
  check_chunk_bytes(d, s);
  std::optional<network> net;
  try {
    net.emplace(c, s.chunk_bytes, epoch_mode::given, s.epoch_seconds);
  } catch (const error& e) {
    throw error(errc::bad_value, "", e.path() == "tau" ? "epoch_seconds" : e.path(), e.reason());
  }
  return validate_schedule(*net, d, s, opt);
}

}  // namespace doppler::comm
