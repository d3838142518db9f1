// Interchangeable parts of a graph (symmetry.hpp).
#include <doppler/learner/symmetry.hpp>

#include <doppler/runtime/fnv1a.hpp>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <unordered_map>

namespace doppler::learner {
namespace {

using signature = std::vector<std::uint64_t>;

struct signature_hash {
  std::size_t operator()(const signature& s) const noexcept {
    fnv1a h(fnv1a::learner_basis);
    h.values(s);
    return static_cast<std::size_t>(h.digest());
  }
};

/// Numbers the distinct signatures in order of their first appearance (exact: equal hashes are
/// compared element by element).
std::vector<std::uint32_t> number(const std::vector<signature>& sig, std::size_t& count) {
  std::unordered_map<signature, std::uint32_t, signature_hash> ids;
  ids.reserve(sig.size());
  std::vector<std::uint32_t> out(sig.size());
  for (std::size_t v = 0; v < sig.size(); ++v)
    out[v] = ids.try_emplace(sig[v], static_cast<std::uint32_t>(ids.size())).first->second;
  count = ids.size();
  return out;
}

/// Colour refinement until the number of colours stops growing.
std::vector<std::uint32_t> refine(const graph& g) {
  const std::size_t n = g.size();
  // Longest paths in hops from an entry and to an exit: kept by every automorphism, and they
  // separate the layers of a deep graph at once (refinement alone would take a round per hop).
  std::vector<std::uint64_t> depth(n, 0), height(n, 0);
  const auto topo = g.topo_order();
  for (op_index v : topo)
    for (op_index u : g.preds(v)) depth[v] = std::max(depth[v], depth[u] + 1);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it)
    for (op_index u : g.succs(*it)) height[*it] = std::max(height[*it], height[u] + 1);
  std::vector<signature> sig(n);
  for (op_index v = 0; v < n; ++v) {
    const op& o = g[v];
    auto& s = sig[v];
    s.push_back(depth[v]);
    s.push_back(height[v]);
    s.push_back(static_cast<std::uint64_t>(o.kind));
    s.push_back(std::bit_cast<std::uint64_t>(o.flops));
    s.push_back(std::bit_cast<std::uint64_t>(o.bytes));
    s.push_back(o.shape.size());
    for (std::int64_t e : o.shape) s.push_back(static_cast<std::uint64_t>(e));
  }
  std::size_t count = 0;
  auto colour = number(sig, count);
  std::vector<std::uint64_t> side;
  for (std::size_t round = 0; round < n; ++round) {
    for (op_index v = 0; v < n; ++v) {
      auto& s = sig[v];
      s.assign({colour[v]});
      for (auto nb : {g.preds(v), g.succs(v)}) {
        side.clear();
        for (op_index u : nb) side.push_back(colour[u]);
        std::sort(side.begin(), side.end());
        s.push_back(side.size());
        s.insert(s.end(), side.begin(), side.end());
      }
    }
    std::size_t next_count = 0;
    auto next = number(sig, next_count);
    if (next_count == count) break;  // a refinement never merges colours: equal count = stable
    colour = std::move(next);
    count = next_count;
  }
  return colour;
}


/// The ops of a connected piece in breadth-first order over its internal edges (either direction),
/// from its first op: every op after the first has an earlier neighbour.
std::vector<op_index> search_order(const graph& g, const std::vector<int>& in_piece, const std::vector<op_index>& ops) {
  const int k = in_piece[ops.front()];
  std::vector<op_index> order{ops.front()};
  std::vector<std::uint8_t> seen(g.size(), 0);
  seen[ops.front()] = 1;
  for (std::size_t i = 0; i < order.size(); ++i)
    for (auto nb : {g.preds(order[i]), g.succs(order[i])})
      for (op_index u : nb)
        if (in_piece[u] == k && !seen[u]) {
          seen[u] = 1;
          order.push_back(u);
        }
  return order;
}

/// A bijection from piece `ref` (its ops in search_order) onto piece `ops` that keeps colours,
/// edges inside the pieces and neighbours outside them (the same ops), found by backtracking with
/// a step limit; the images of ref's ops in ref's order, or empty when none was found.
std::vector<op_index> isomorphism(const graph& g, const std::vector<std::uint32_t>& colour,
                                  const std::vector<int>& in_piece, const std::vector<op_index>& ref,
                                  const std::vector<op_index>& ops) {
  const std::size_t m = ref.size();
  if (ops.size() != m) return {};
  const int rk = in_piece[ref.front()], pk = in_piece[ops.front()];
  std::vector<op_index> image(g.size(), 0);
  std::vector<std::uint8_t> placed(g.size(), 0), used(g.size(), 0);
  // Whether r may map to c given the ops placed so far: same colour, and every neighbour of r
  // (placed inside the piece, or outside it) corresponds to a neighbour of c in the same direction.
  auto fits = [&](op_index r, op_index c) {
    if (colour[r] != colour[c] || used[c] || in_piece[c] != pk) return false;
    for (int dir = 0; dir < 2; ++dir) {
      auto mine = dir == 0 ? g.preds(r) : g.succs(r);
      auto theirs = dir == 0 ? g.preds(c) : g.succs(c);
      if (mine.size() != theirs.size()) return false;
      for (op_index u : mine) {
        if (in_piece[u] == rk && !placed[u]) continue;
        const op_index want = in_piece[u] == rk ? image[u] : u;
        if (std::find(theirs.begin(), theirs.end(), want) == theirs.end()) return false;
      }
    }
    return true;
  };
  // Depth-first over ref's ops with an explicit stack (pieces may be long): level i tries the
  // options of ref[i] in turn — the first level every op of the piece, the others the images'
  // neighbours of ref[i]'s earliest placed neighbour.
  std::vector<std::vector<op_index>> options(m);
  std::vector<std::size_t> tried(m, 0);
  auto fill = [&](std::size_t level) {
    const op_index r = ref[level];
    auto& opt = options[level];
    opt.clear();
    tried[level] = 0;
    if (level == 0) {
      opt = ops;
      return;
    }
    for (int dir = 0; dir < 2; ++dir)
      for (op_index u : dir == 0 ? g.preds(r) : g.succs(r))
        if (in_piece[u] == rk && placed[u]) {
          auto nb = dir == 0 ? g.succs(image[u]) : g.preds(image[u]);
          opt.assign(nb.begin(), nb.end());
          return;
        }
  };
  std::size_t budget = 200000;  // steps; a piece this search cannot settle stays fixed
  std::size_t i = 0;
  fill(0);
  for (;;) {
    const op_index r = ref[i];
    if (placed[r]) placed[r] = used[image[r]] = 0;  // this level's previous choice, undone
    bool moved = false;
    while (!moved && tried[i] < options[i].size()) {
      const op_index c = options[i][tried[i]++];
      if (!fits(r, c)) continue;
      image[r] = c;
      placed[r] = used[c] = 1;
      moved = true;
    }
    if (!moved) {
      if (i == 0) return {};
      --i;  // back to the previous level's next option
      continue;
    }
    if (i + 1 == m) break;
    if (budget == 0) return {};
    --budget;
    fill(++i);
  }
  std::vector<op_index> out(m);
  for (std::size_t k = 0; k < m; ++k) out[k] = image[ref[k]];
  return out;
}

}  // namespace

op_symmetry find_symmetry(const graph& g) {
  const std::size_t n = g.size();
  op_symmetry s;
  const auto colour = refine(g);
  s.part.assign(n, -1);
  s.pos.assign(n, 0);
  s.edges = g.edge_count();

  // Candidates: ops sharing their colour. Pieces: connected components among candidates.
  std::vector<std::uint32_t> class_size(n, 0);
  for (auto c : colour) ++class_size[c];
  auto candidate = [&](op_index v) { return class_size[colour[v]] >= 2; };
  std::vector<op_index> root(n);
  std::iota(root.begin(), root.end(), op_index{0});
  auto find = [&](op_index v) {
    while (root[v] != v) v = root[v] = root[root[v]];
    return v;
  };
  for (op_index v = 0; v < n; ++v)
    if (candidate(v))
      for (op_index u : g.preds(v))
        if (candidate(u)) root[find(u)] = find(v);
  std::map<op_index, std::vector<op_index>> pieces;  // by root: deterministic order
  for (op_index v = 0; v < n; ++v)
    if (candidate(v)) pieces[find(v)].push_back(v);

  // Pieces of equal size, colours and edge count may be interchangeable; an explicit isomorphism
  // decides (iso below), and each piece joins the first earlier piece it is isomorphic to.
  std::vector<std::vector<op_index>> list;
  for (auto& [r, ops] : pieces) list.push_back(std::move(ops));
  std::vector<int> in_piece(n, -1);
  for (std::size_t k = 0; k < list.size(); ++k)
    for (op_index v : list[k]) in_piece[v] = static_cast<int>(k);
  auto coarse = [&](const std::vector<op_index>& ops) {
    signature sig;
    std::uint64_t edges = 0;
    for (op_index v : ops) {
      sig.push_back(colour[v]);
      edges += g.preds(v).size() + g.succs(v).size();
    }
    std::sort(sig.begin(), sig.end());
    sig.push_back(edges);
    return sig;
  };
  std::map<signature, std::vector<std::size_t>> groups;
  for (std::size_t k = 0; k < list.size(); ++k) groups[coarse(list[k])].push_back(k);
  struct kind_of {
    std::vector<op_index> reference;               // the first piece, in search order
    std::vector<std::vector<op_index>> members;    // images of the reference, in the same order
  };
  std::vector<kind_of> found;
  for (auto& [sig, ks] : groups) {
    std::vector<kind_of> here;
    for (std::size_t k : ks) {
      bool joined = false;
      for (auto& t : here) {
        auto image = isomorphism(g, colour, in_piece, t.reference, list[k]);
        if (!image.empty()) {
          t.members.push_back(std::move(image));
          joined = true;
          break;
        }
      }
      if (!joined) {
        auto order = search_order(g, in_piece, list[k]);
        here.push_back({order, {order}});
      }
    }
    for (auto& t : here)
      if (t.members.size() >= 2) found.push_back(std::move(t));
  }
  // Kinds in op order of their first part, so part numbers do not depend on map order.
  std::sort(found.begin(), found.end(), [](const kind_of& a, const kind_of& b) {
    return *std::min_element(a.reference.begin(), a.reference.end()) <
           *std::min_element(b.reference.begin(), b.reference.end());
  });
  for (const auto& t : found) {
    for (const auto& ops : t.members) {
      const int part = static_cast<int>(s.part_ops.size());
      for (std::uint32_t i = 0; i < ops.size(); ++i) {
        s.part[ops[i]] = part;
        s.pos[ops[i]] = i;
      }
      s.part_ops.push_back(ops);
      s.part_kind.push_back(s.kinds);
    }
    ++s.kinds;
  }
  return s;
}

}  // namespace doppler::learner
