// Greedy TACOS-style matcher on the time-expanded network: epoch by epoch, every receiver's free
// in-links take a chunk some neighbour holds and the receiver needs (rarest chunk first); GPU →
// switch → GPU hops take both links in the same epoch. Where a destination is not one hop from
// the source, chunks are also relayed to devices strictly closer to an unmet destination.
// Bitsets over chunks keep one epoch at O(receivers × in-links × chunks/64).
#include "methods.hpp"

#include <doppler/runtime/error.hpp>

#include <algorithm>
#include <bit>
#include <functional>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <unordered_map>

namespace doppler::comm::detail {

namespace {

using word = std::uint64_t;

struct bitrows {
  std::size_t words = 0;
  std::vector<word> bits;
  bitrows(std::size_t rows, std::size_t cols) : words((cols + 63) / 64), bits(rows * words, 0) {}
  word* row(std::size_t r) { return bits.data() + r * words; }
  const word* row(std::size_t r) const { return bits.data() + r * words; }
  bool test(std::size_t r, std::size_t c) const { return (row(r)[c / 64] >> (c % 64)) & 1u; }
  void set(std::size_t r, std::size_t c) { row(r)[c / 64] |= word{1} << (c % 64); }
  void reset(std::size_t r, std::size_t c) { row(r)[c / 64] &= ~(word{1} << (c % 64)); }
};

class greedy_planner {
 public:
  greedy_planner(const network& net, const demand& d, const plan_options& opt, const greedy_guide* guide = nullptr,
                 const greedy_state* state = nullptr)
      : net_(net), d_(d), opt_(opt), state_(state), D_(net.device_count()), C_(d.chunks.size()), slots_(slots_with(net, opt.fixed_sends)),
        have_(D_, C_), expect_(D_, C_), need_(D_, C_), holders_(C_, D_), holder_count_(C_, 0), expect_count_(C_, 0),
        held_list_(D_), port_free_(net.node_count(), D_), avail_(net.node_count(), C_),
        entering_(net.node_count(), C_), guide_(guide), rng_(guide ? guide->seed : 0) {
    if (guide_) sent_.assign(guide_->cum.size() / std::max<std::size_t>(1, static_cast<std::size_t>(guide_->K)), 0.0);
    order_.resize(D_);
    std::iota(order_.begin(), order_.end(), device_index{0});
  }

  method_result run() {
    for (std::size_t c = 0; c < C_; ++c) {
      const chunk& ch = d_.chunks[c];
      expect_.set(ch.source, c);
      ++expect_count_[c];
      mark_held(ch.source, c);
      for (device_index t : ch.destinations) {
        need_.set(t, c);
        ++remaining_;
      }
    }
    relays_ = needs_relays();
    for (node_index x = static_cast<node_index>(D_); x < net_.node_count(); ++x)
      has_big_switch_ = has_big_switch_ || net_.in_links(x).size() > 32;
    if (opt_.fixed_sends)
      for (const send& x : *opt_.fixed_sends) last_fixed_ = std::max(last_fixed_, x.epoch);
    std::int32_t e = 0;
    if (state_) e = start_from(*state_);
    find_mates();
    const std::int64_t give_up = e + 64 + 4 * static_cast<std::int64_t>(C_ + 1) * static_cast<std::int64_t>(D_ + 1) *
                                          (max_offset() + 1);
    while (remaining_ > 0) {
      if (static_cast<std::size_t>(e) < arrivals_.size())
        for (auto [v, c] : arrivals_[static_cast<std::size_t>(e)]) mark_held(v, c);
      std::size_t before = result_.sends.size();
      prepare_switches(e);
      match_small_switches(e);
      if (guide_ && guide_->seed) std::shuffle(order_.begin(), order_.end(), rng_);
      for (int pass = 0; pass < (relays_ ? 2 : 1); ++pass)
        for (std::size_t i = 0; i < D_; ++i) {
          auto v = guide_ && guide_->seed ? order_[i] : static_cast<device_index>((i + static_cast<std::size_t>(e) * 7) % D_);
          for (std::uint32_t l : net_.in_links(v)) fill_link(l, v, e, pass == 1);
        }
      bool pending = false;
      for (std::size_t k = static_cast<std::size_t>(e) + 1; k < arrivals_.size(); ++k)
        if (!arrivals_[k].empty()) {
          pending = true;
          break;
        }
      if (result_.sends.size() == before && !pending && e > last_fixed_) stall();
      if (++e > give_up) throw error(errc::internal, "greedy: no progress after " + std::to_string(e) + " epochs");
    }
    return std::move(result_);
  }

 private:
  /// Re-planning: the committed sends' holdings, chunks in flight and link occupancy; the hint's
  /// (chunk, link) pairs. Returns the first epoch to plan.
  std::int32_t start_from(const greedy_state& st) {
    std::unordered_map<std::uint32_t, std::size_t> index;
    for (std::size_t c = 0; c < C_; ++c) index.emplace(d_.chunks[c].id, c);
    const std::int32_t t0 = std::max<std::int32_t>(0, st.start_epoch);
    if (st.committed)
      for (const send& x : *st.committed) {
        auto l = net_.find_link(x.src, x.dst);
        auto it = index.find(x.chunk);
        if (!l || it == index.end()) continue;
        slots_.take(*l, x.epoch);
        last_fixed_ = std::max(last_fixed_, x.epoch);
        if (net_.is_switch(x.dst)) continue;
        const auto v = static_cast<device_index>(x.dst);
        const std::size_t c = it->second;
        if (!expect_.test(v, c)) {
          expect_.set(v, c);
          ++expect_count_[c];
        }
        if (need_.test(v, c)) {
          need_.reset(v, c);
          --remaining_;
        }
        auto at = static_cast<std::size_t>(std::max(0, x.epoch + net_.links()[*l].offset));
        if (arrivals_.size() <= at) arrivals_.resize(at + 1);
        arrivals_[at].push_back({v, static_cast<std::uint32_t>(c)});
      }
    // What arrived before t0 is held; later arrivals are picked up by the epoch loop.
    for (std::size_t k = 0; k < static_cast<std::size_t>(t0) && k < arrivals_.size(); ++k)
      for (auto [v, c] : arrivals_[k]) mark_held(v, c);
    if (st.hint)
      for (const send& x : *st.hint) {
        auto l = net_.find_link(x.src, x.dst);
        auto it = index.find(x.chunk);
        if (!l || it == index.end() || x.epoch < t0) continue;
        auto [h, fresh] = hint_.try_emplace(it->second * net_.links().size() + *l, x.epoch);
        if (!fresh) h->second = std::min(h->second, x.epoch);
      }
    return t0;
  }
  /// Whether the old plan (the hint) sent chunk c on the current link by the current epoch.
  bool hinted(std::size_t c) const {
    if (hint_.empty() || cur_link_ >= net_.links().size()) return false;
    auto it = hint_.find(c * net_.links().size() + cur_link_);
    return it != hint_.end() && it->second <= cur_e_;
  }
  std::int32_t max_offset() const {
    std::int32_t m = 1;
    for (const te_link& l : net_.links()) m = std::max({m, l.offset, l.window});
    return m;
  }
  void mark_held(device_index v, std::size_t c) {
    if (have_.test(v, c)) return;
    have_.set(v, c);
    holders_.set(c, v);
    ++holder_count_[c];
    held_list_[v].push_back(static_cast<std::uint32_t>(c));
  }
  /// Whether some destination is not one hop (direct or through one switch) from its chunk's source.
  bool needs_relays() const {
    std::vector<char> near(D_, 0);
    for (std::size_t c = 0; c < C_; ++c) {
      const chunk& ch = d_.chunks[c];
      std::fill(near.begin(), near.end(), 0);
      for (std::uint32_t l : net_.out_links(ch.source)) {
        node_index x = net_.links()[l].dst;
        if (!net_.is_switch(x)) near[x] = 1;
        else
          for (std::uint32_t k : net_.out_links(x))
            if (!net_.is_switch(net_.links()[k].dst)) near[net_.links()[k].dst] = 1;
      }
      for (device_index t : ch.destinations)
        if (!near[t]) return true;
    }
    return false;
  }
  /// Devices one hop from v over direct links or small switches (≤ 32 ports): v's neighbourhood,
  /// which a chunk fetched over a big switch (the network) can still reach cheaply.
  void find_mates() {
    mates_.assign(D_, {});
    for (device_index v = 0; v < D_; ++v) {
      for (std::uint32_t l : net_.in_links(v)) {
        node_index x = net_.links()[l].src;
        if (!net_.is_switch(x)) mates_[v].push_back(static_cast<device_index>(x));
        else if (net_.in_links(x).size() <= 32)
          for (std::uint32_t k : net_.in_links(x))
            if (!net_.is_switch(net_.links()[k].src) && net_.links()[k].src != v)
              mates_[v].push_back(static_cast<device_index>(net_.links()[k].src));
      }
      std::sort(mates_[v].begin(), mates_[v].end());
      mates_[v].erase(std::unique(mates_[v].begin(), mates_[v].end()), mates_[v].end());
      if (mates_[v].size() > 32) mates_[v].clear();
    }
    fresh_.assign(have_.words, 0);
    want_.assign(have_.words, 0);
  }
  /// need[v] minus what v's mates (other than `sender`) hold or expect (into fresh_).
  const word* fresh_need(device_index v, std::size_t sender = SIZE_MAX) {
    const word* n = need_.row(v);
    for (std::size_t w = 0; w < have_.words; ++w) fresh_[w] = n[w];
    for (device_index u : mates_[v]) {
      if (u == sender) continue;
      const word* x = expect_.row(u);
      for (std::size_t w = 0; w < have_.words; ++w) fresh_[w] &= ~x[w];
    }
    return fresh_.data();
  }
  void prepare_switches(std::int32_t e) {
    for (node_index s = static_cast<node_index>(D_); s < net_.node_count(); ++s) {
      std::fill_n(port_free_.row(s), port_free_.words, 0);
      std::fill_n(avail_.row(s), avail_.words, 0);
      std::fill_n(entering_.row(s), entering_.words, 0);
      for (std::uint32_t l : net_.in_links(s)) {
        node_index u = net_.links()[l].src;
        if (net_.is_switch(u) || !slots_.fits(l, e)) continue;
        port_free_.set(s, u);
        word* a = avail_.row(s);
        const word* h = have_.row(u);
        for (std::size_t w = 0; w < avail_.words; ++w) a[w] |= h[w];
      }
    }
  }
  void deliver(std::size_t c, std::uint32_t last_link, device_index v, std::int32_t e) {
    expect_.set(v, c);
    ++expect_count_[c];
    if (need_.test(v, c)) {
      need_.reset(v, c);
      --remaining_;
    }
    auto at = static_cast<std::size_t>(e + net_.links()[last_link].offset);
    if (arrivals_.size() <= at) arrivals_.resize(at + 1);
    arrivals_[at].push_back({v, static_cast<std::uint32_t>(c)});
  }
  void emit(std::uint32_t l, std::size_t c, std::int32_t e) {
    if (guide_) sent_[guide_->owner[c] * guide_->links + l] += 1;
    slots_.take(l, e);
    const te_link& t = net_.links()[l];
    result_.sends.push_back({d_.chunks[c].id, t.src, t.dst, e});
  }
  /// Rarest (fewest holders and in-flight copies) candidate among the first few set bits of a & b (& ~c), scanning from `start`.
  template <class Accept>
  std::size_t pick(const word* a, const word* b, std::size_t start, Accept accept) {
    const std::size_t W = have_.words;
    std::size_t best = C_, best_count = std::numeric_limits<std::size_t>::max(), seen = 0;
    double best_key = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < W && seen < 64; ++k) {
      std::size_t w = (start + k) % W;
      word m = a[w] & b[w];
      while (m && seen < 64) {
        std::size_t c = w * 64 + static_cast<std::size_t>(std::countr_zero(m));
        m &= m - 1;
        if (!accept(c)) continue;
        ++seen;
        std::size_t score = expect_count_[c];
        if (local_v_ < D_) score += (D_ + 1) * local_count(local_v_, c);  // rarest near the receiver first
        if (!hint_.empty()) score = 2 * score + (hinted(c) ? 0 : 1);  // ties: the old plan's pick
        if (guide_ && cur_link_ < net_.links().size()) {
          // The LP's residual on this link for c's owner: what it sent by now (+ lookahead) and we did not.
          const double due = lp_due(c);
          const double rare = static_cast<double>(score);
          double key = guide_->lp_first ? -std::floor(std::max(0.0, due) * 4.0) * 1e6 + rare
                                        : rare - std::min(std::max(0.0, due), 0.999);
          if (guide_->seed) key += std::uniform_real_distribution<double>(0.0, 0.5)(rng_);
          if (key < best_key) {
            best = c;
            best_key = key;
          }
          continue;
        }
        if (score < best_count) {
          best = c;
          best_count = score;
        }
      }
    }
    return best;
  }
  /// The guide's amount of chunk c's owner on the current link by the current epoch (+ lookahead)
  /// not yet sent by the matcher.
  double lp_due(std::size_t c) const {
    const std::size_t row = guide_->owner[c] * guide_->links + cur_link_;
    const std::int32_t k = std::min(guide_->K - 1, (cur_e_ + guide_->lookahead) / std::max(1, guide_->epoch_scale));
    if (k < 0) return -sent_[row];
    return guide_->cum[row * static_cast<std::size_t>(guide_->K) + static_cast<std::size_t>(k)] - sent_[row];
  }
  /// How many of v's neighbours hold or expect chunk c.
  std::size_t local_count(device_index v, std::size_t c) const {
    std::size_t n = 0;
    for (device_index u : mates_[v]) n += expect_.test(u, c);
    return n;
  }
  void fill_link(std::uint32_t l, device_index v, std::int32_t e, bool relay_pass) {
    local_v_ = D_ <= 256 ? v : D_;  // small clusters: rarity among v's neighbours, then global
    cur_link_ = l;
    cur_e_ = e;
    const te_link& t = net_.links()[l];
    const std::size_t start = (v * 13 + static_cast<std::size_t>(e)) % have_.words;
    while (slots_.fits(l, e)) {
      if (!net_.is_switch(t.src)) {
        const auto u = static_cast<device_index>(t.src);
        auto any = [](std::size_t) { return true; };
        std::size_t c = C_;
        if (relay_pass) c = pick_relay(u, v);
        else {
          // Over a slow link (a chunk occupies it several epochs), prefer chunks new to v's neighbourhood.
          if (t.window > 1 && !mates_[v].empty()) c = pick(have_.row(u), fresh_need(v, u), start, any);
          if (c == C_) c = pick(have_.row(u), need_.row(v), start, any);
        }
        if (c == C_) return;
        emit(l, c, e);
        deliver(c, l, v, e);
        continue;
      }
      const node_index s = t.src;
      if (relay_pass) {
        auto [from, c] = pick_switch_relay(s, v);
        if (c == C_) return;
        auto in = *net_.find_link(from, s);
        emit(in, c, e);
        emit(l, c, e);
        entering_.set(s, c);
        if (!slots_.fits(in, e)) port_free_.reset(s, from);
        deliver(c, l, v, e);
        continue;
      }
      std::size_t c = C_;
      if (opt_.switch_copy) c = pick(entering_.row(s), need_.row(v), start, [](std::size_t) { return true; });
      if (c != C_) {
        emit(l, c, e);
        deliver(c, l, v, e);
        continue;
      }
      device_index from = 0;
      auto holder_free = [&](std::size_t x) {
        const word* h = holders_.row(x);
        const word* p = port_free_.row(s);
        for (std::size_t w = 0; w < holders_.words; ++w)
          if (word m = h[w] & p[w]) {
            from = static_cast<device_index>(w * 64 + static_cast<std::size_t>(std::countr_zero(m)));
            return true;
          }
        avail_.reset(s, x);
        return false;
      };
      // Over a big switch (the network), prefer chunks v's neighbourhood does not have yet.
      if (net_.in_links(s).size() > 32 && !mates_[v].empty()) c = pick(avail_.row(s), fresh_need(v), start, holder_free);
      if (c == C_) c = pick(avail_.row(s), need_.row(v), start, holder_free);
      if (c == C_) return;
      // `from` belongs to the last accepted candidate; find a free holder of the chosen one.
      from = D_;
      for (std::size_t w = 0; w < holders_.words && from == D_; ++w)
        if (word m = holders_.row(c)[w] & port_free_.row(s)[w])
          from = static_cast<device_index>(w * 64 + static_cast<std::size_t>(std::countr_zero(m)));
      auto in = *net_.find_link(from, s);
      emit(in, c, e);
      emit(l, c, e);
      entering_.set(s, c);
      if (!slots_.fits(in, e)) port_free_.reset(s, from);
      deliver(c, l, v, e);
    }
  }
  /// A chunk u holds that brings some unmet destination strictly closer if v takes it.
  std::size_t pick_relay(device_index u, device_index v) {
    for (std::uint32_t c : held_list_[u]) {
      if (expect_.test(v, c)) continue;
      for (device_index t : d_.chunks[c].destinations)
        if (need_.test(t, c) && net_.epochs_between(v, t) < net_.epochs_between(u, t)) return c;
    }
    return C_;
  }
  /// Through each small switch (≤ 32 ports): a maximum matching (Kuhn's augmenting paths) of free
  /// sender ports to free receiver ports where the sender holds something the receiver needs, so no
  /// port idles for want of a better pairing; each pair then moves the rarest such chunk.
  void match_small_switches(std::int32_t e) {
    if (has_big_switch_) return;  // there, receiver-driven picks coordinate node ports with network fetches
    for (node_index s = static_cast<node_index>(D_); s < net_.node_count(); ++s) {
      if (net_.in_links(s).size() > 32 || net_.out_links(s).size() > 32) continue;
      senders_.clear();
      receivers_.clear();
      for (std::uint32_t l : net_.in_links(s))
        if (!net_.is_switch(net_.links()[l].src) && slots_.fits(l, e)) senders_.push_back(l);
      for (std::uint32_t l : net_.out_links(s))
        if (!net_.is_switch(net_.links()[l].dst) && slots_.fits(l, e)) receivers_.push_back(l);
      if (senders_.empty() || receivers_.empty()) continue;
      auto useful = [&](std::size_t i, std::size_t j) {
        node_index u = net_.links()[senders_[i]].src, v = net_.links()[receivers_[j]].dst;
        if (u == v) return false;
        const word *h = have_.row(u), *n = need_.row(v);
        for (std::size_t w = 0; w < have_.words; ++w)
          if (h[w] & n[w]) return true;
        return false;
      };
      match_.assign(senders_.size(), SIZE_MAX);  // sender -> receiver
      std::vector<std::size_t> owner(receivers_.size(), SIZE_MAX);
      std::vector<char> seen;
      std::function<bool(std::size_t)> augment = [&](std::size_t i) {
        for (std::size_t j = 0; j < receivers_.size(); ++j) {
          if (seen[j] || !useful(i, j)) continue;
          seen[j] = 1;
          if (owner[j] == SIZE_MAX || augment(owner[j])) {
            owner[j] = i;
            match_[i] = j;
            return true;
          }
        }
        return false;
      };
      for (std::size_t i = 0; i < senders_.size(); ++i) {
        seen.assign(receivers_.size(), 0);
        augment(i);
      }
      const std::size_t start = static_cast<std::size_t>(e) % have_.words;
      for (std::size_t j = 0; j < receivers_.size(); ++j) {
        if (owner[j] == SIZE_MAX) continue;
        const std::uint32_t in = senders_[owner[j]], out = receivers_[j];
        const auto u = static_cast<device_index>(net_.links()[in].src);
        const auto v = static_cast<device_index>(net_.links()[out].dst);
        cur_link_ = out;
        cur_e_ = e;
        std::size_t c = pick(have_.row(u), need_.row(v), start, [](std::size_t) { return true; });
        if (c == C_) continue;
        emit(in, c, e);
        emit(out, c, e);
        entering_.set(s, c);
        if (!slots_.fits(in, e)) port_free_.reset(s, u);
        deliver(c, out, v, e);
      }
    }
  }
  /// A (sender, chunk) through switch s that brings an unmet destination strictly closer at v.
  std::pair<device_index, std::size_t> pick_switch_relay(node_index s, device_index v) {
    const word* p = port_free_.row(s);
    for (std::size_t w = 0; w < port_free_.words; ++w)
      for (word m = p[w]; m; m &= m - 1) {
        auto u = static_cast<device_index>(w * 64 + static_cast<std::size_t>(std::countr_zero(m)));
        if (u == v) continue;
        std::size_t c = pick_relay(u, v);
        if (c != C_) return {u, c};
      }
    return {0, C_};
  }
  [[noreturn]] void stall() {
    for (std::size_t c = 0; c < C_; ++c)
      for (device_index t : d_.chunks[c].destinations)
        if (need_.test(t, c))
          throw error(errc::infeasible, "greedy: " + net_.topology()[t].id + " cannot receive chunk " +
                                            std::to_string(d_.chunks[c].id) + " from " +
                                            net_.topology()[d_.chunks[c].source].id +
                                            " (no link or switch path the greedy matcher can use)");
    throw error(errc::internal, "greedy stalled with nothing left to send");
  }

  const network& net_;
  const demand& d_;
  const plan_options& opt_;
  const greedy_state* state_ = nullptr;
  std::unordered_map<std::size_t, std::int32_t> hint_;  // (chunk * links + link) -> first hinted epoch
  std::size_t D_, C_;
  slot_table slots_;
  bitrows have_, expect_, need_, holders_;
  std::vector<std::size_t> holder_count_, expect_count_;  // holders now; holders + in flight
  std::vector<std::vector<std::uint32_t>> held_list_;
  bitrows port_free_, avail_, entering_;
  std::vector<std::vector<std::pair<device_index, std::uint32_t>>> arrivals_;
  std::vector<std::vector<device_index>> mates_;
  std::vector<word> fresh_, want_;
  std::vector<std::size_t> cand_, match_;
  std::vector<std::uint32_t> senders_, receivers_;
  std::size_t remaining_ = 0;
  std::int32_t last_fixed_ = -1;  // links may be full until the last fixed send
  bool relays_ = false, has_big_switch_ = false;
  device_index local_v_ = std::numeric_limits<device_index>::max();
  method_result result_;
  const greedy_guide* guide_ = nullptr;
  std::mt19937 rng_;
  std::vector<double> sent_;  // per (owner, link): chunks the matcher sent so far
  std::vector<device_index> order_;
  std::size_t cur_link_ = SIZE_MAX;
  std::int32_t cur_e_ = 0;
};

}  // namespace

method_result plan_greedy(const network& net, const demand& d, const plan_options& opt, const greedy_state* st) {
  return greedy_planner(net, d, opt, nullptr, st).run();
}

method_result plan_greedy_guided(const network& net, const demand& d, const plan_options& opt, const greedy_guide& g) {
  return greedy_planner(net, d, opt, &g).run();
}

}  // namespace doppler::comm::detail
