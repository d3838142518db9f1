// MSCCL XML export: thread blocks per peer, steps in epoch order, dependencies on receives.
#include <doppler/comm/msccl.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/xml.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace doppler::comm {

namespace {

/// A GPU-to-GPU transfer (switch hops collapsed).
struct hop {
  std::uint32_t chunk;  // demand chunk index
  device_index from, to;
  std::int32_t epoch, arrive;
};

struct step {
  char type;  // 's' or 'r'
  std::uint32_t chunk;
  std::int32_t epoch;
  int depid = -1, deps = -1;
  bool hasdep = false;
};

struct tb {
  int send = -1, recv = -1;
  std::vector<step> steps;
};

}  // namespace

std::string to_msccl_xml(const network& net, const demand& d, const schedule& s, const msccl_options& opt) {
  const std::size_t D = net.device_count();
  std::unordered_map<std::uint32_t, std::uint32_t> index;
  for (std::size_t i = 0; i < d.chunks.size(); ++i) index.emplace(d.chunks[i].id, static_cast<std::uint32_t>(i));
  // Collapse switch hops (the network has no switch chains): each send out of a switch continues
  // exactly one send into it of the same chunk in the same epoch — spread evenly over them, never
  // back to its sender — so every delivery becomes one GPU-to-GPU step. (Continuing every send in
  // with every send out made a broadcast through an NVSwitch deliver 15 steps for 7 deliveries.)
  using switch_key = std::tuple<node_index, std::uint32_t, std::int32_t>;
  std::map<switch_key, std::vector<const send*>> into, out_of;
  for (const send& x : s.sends) {
    if (net.is_switch(x.dst)) into[{x.dst, x.chunk, x.epoch}].push_back(&x);
    if (net.is_switch(x.src)) out_of[{x.src, x.chunk, x.epoch}].push_back(&x);
  }
  std::unordered_map<const send*, std::vector<const send*>> continues;
  for (const auto& [key, outs] : out_of) {
    auto it = into.find(key);
    if (it == into.end()) continue;  // nothing entered: the validator refuses such a schedule
    const auto& ins = it->second;
    for (std::size_t j = 0; j < outs.size(); ++j) {
      std::size_t pick = j % ins.size();
      for (std::size_t t = 0; t < ins.size() && ins[pick]->src == outs[j]->dst; ++t) pick = (pick + 1) % ins.size();
      if (ins[pick]->src != outs[j]->dst) continues[ins[pick]].push_back(outs[j]);  // else back to its only sender
    }
  }
  auto offset = [&](const send& x) { return net.links()[*net.find_link(x.src, x.dst)].offset; };
  std::vector<hop> hops;
  for (const send& x : s.sends) {
    if (net.is_switch(x.src)) continue;
    const std::uint32_t chunk = index.at(x.chunk);
    const auto from = static_cast<device_index>(x.src);
    if (!net.is_switch(x.dst)) {
      hops.push_back({chunk, from, static_cast<device_index>(x.dst), x.epoch, x.epoch + offset(x)});
      continue;
    }
    for (const send* y : continues[&x])
      hops.push_back({chunk, from, static_cast<device_index>(y->dst), x.epoch, x.epoch + offset(*y)});
  }
  std::sort(hops.begin(), hops.end(), [](const hop& a, const hop& b) { return a.epoch < b.epoch; });
  // Thread blocks per GPU: send peers then receive peers.
  std::vector<std::vector<tb>> tbs(D);
  std::vector<std::map<std::pair<char, device_index>, int>> tb_of(D);
  auto block = [&](device_index g, char kind, device_index peer) -> int {
    auto [it, fresh] = tb_of[g].try_emplace({kind, peer}, static_cast<int>(tbs[g].size()));
    if (fresh) {
      tb t;
      (kind == 's' ? t.send : t.recv) = static_cast<int>(peer);
      tbs[g].push_back(t);
    }
    return it->second;
  };
  // Where (tb, step) each GPU received each chunk, for dependencies.
  std::map<std::pair<device_index, std::uint32_t>, std::pair<int, int>> received;
  std::vector<std::vector<char>> relay(D, std::vector<char>(d.chunks.size(), 1));
  for (std::size_t i = 0; i < d.chunks.size(); ++i) {
    relay[d.chunks[i].source][i] = 0;
    for (device_index t : d.chunks[i].destinations) relay[t][i] = 0;
  }
  // Receives are recorded before sends of later epochs; process by epoch.
  for (const hop& h : hops) {
    int sb = block(h.from, 's', h.to);
    step st{'s', h.chunk, h.epoch};
    if (auto it = received.find({h.from, h.chunk}); it != received.end()) {
      st.depid = it->second.first;
      st.deps = it->second.second;
      tbs[h.from][static_cast<std::size_t>(st.depid)].steps[static_cast<std::size_t>(st.deps)].hasdep = true;
    }
    tbs[h.from][static_cast<std::size_t>(sb)].steps.push_back(st);
    int rb = block(h.to, 'r', h.from);
    auto& rs = tbs[h.to][static_cast<std::size_t>(rb)].steps;
    rs.push_back({'r', h.chunk, h.arrive});
    received.try_emplace({h.to, h.chunk}, rb, static_cast<int>(rs.size()) - 1);
  }
  // Scratch offsets for relayed chunks; input offsets for sourced chunks.
  std::vector<std::map<std::uint32_t, int>> scratch(D), input(D);
  for (std::size_t i = 0; i < d.chunks.size(); ++i) {
    auto& in = input[d.chunks[i].source];
    in.emplace(static_cast<std::uint32_t>(i), static_cast<int>(in.size()));
  }
  for (const hop& h : hops)
    if (relay[h.to][h.chunk]) scratch[h.to].emplace(h.chunk, static_cast<int>(scratch[h.to].size()));
  // Where a GPU keeps a chunk: its input buffer when it is the source (and sends it), scratch when
  // it only relays it, else the output buffer at the chunk's index.
  auto locate = [&](device_index g, std::uint32_t chunk, bool sending) -> std::pair<std::string, int> {
    if (sending && d.chunks[chunk].source == g) return {"i", input[g].at(chunk)};
    if (relay[g][chunk]) return {"s", scratch[g].at(chunk)};
    return {"o", static_cast<int>(chunk)};
  };
  std::string x = "<algo name=\"" + xml_escape(opt.name) + "\" proto=\"" + xml_escape(opt.proto) + "\" nchannels=\"1\" nchunksperloop=\"" +
                  std::to_string(d.chunks.size()) + "\" ngpus=\"" + std::to_string(D) + "\" coll=\"" +
                  xml_escape(opt.collective) + "\" inplace=\"0\">\n";
  for (device_index g = 0; g < D; ++g) {
    x += "  <gpu id=\"" + std::to_string(g) + "\" i_chunks=\"" + std::to_string(std::max<std::size_t>(1, input[g].size())) +
         "\" o_chunks=\"" + std::to_string(d.chunks.size()) + "\" s_chunks=\"" + std::to_string(scratch[g].size()) + "\">\n";
    for (std::size_t b = 0; b < tbs[g].size(); ++b) {
      const tb& t = tbs[g][b];
      if (static_cast<int>(t.steps.size()) > opt.max_steps_per_tb)
        throw error(errc::bad_argument, "MSCCL export: thread block " + std::to_string(b) + " of gpu " +
                                            std::to_string(g) + " needs " + std::to_string(t.steps.size()) +
                                            " steps; MSCCL allows " + std::to_string(opt.max_steps_per_tb));
      x += "    <tb id=\"" + std::to_string(b) + "\" send=\"" + std::to_string(t.send) + "\" recv=\"" +
           std::to_string(t.recv) + "\" chan=\"0\">\n";
      for (std::size_t k = 0; k < t.steps.size(); ++k) {
        const step& st = t.steps[k];
        // A send reads the local copy and writes the peer's; a receive the other way round.
        const auto peer = static_cast<device_index>(st.type == 's' ? t.send : t.recv);
        auto [sbuf, soff] = st.type == 's' ? locate(g, st.chunk, true) : locate(peer, st.chunk, true);
        auto [dbuf, doff] = st.type == 's' ? locate(peer, st.chunk, false) : locate(g, st.chunk, false);
        x += "      <step s=\"" + std::to_string(k) + "\" type=\"" + std::string(1, st.type) + "\" srcbuf=\"" + sbuf +
             "\" srcoff=\"" + std::to_string(soff) + "\" dstbuf=\"" + dbuf + "\" dstoff=\"" + std::to_string(doff) +
             "\" cnt=\"1\" depid=\"" + std::to_string(st.depid) + "\" deps=\"" + std::to_string(st.deps) +
             "\" hasdep=\"" + (st.hasdep ? "1" : "0") + "\"/>\n";
      }
      x += "    </tb>\n";
    }
    x += "  </gpu>\n";
  }
  return x + "</algo>\n";
}

}  // namespace doppler::comm
