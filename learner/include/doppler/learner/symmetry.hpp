#pragma once
/// Interchangeable parts of a graph: pieces whose ops, costs and neighbours are equal (the attention
/// shards of a Llama block, identical experts), so that swapping them changes no op's time and no
/// transfer. (A simulator that breaks exact ties by op index — `simple`'s FIFO — may still order a
/// swapped placement's ops differently.) A teacher placement that puts shard 1 on gpu1 and shard 2 on
/// gpu0 asks nothing about *which* shard goes where — only that one of them goes to gpu1 — and
/// phase I should not punish a learner that sends shard 2 there instead
/// (assignment_env, `doppler train --teacher-symmetry`). Torch-free.
///
/// How the parts are found:
/// 1. Every op gets a colour by colour refinement (1-WL) over the directed graph: start from what
///    the cost model and the simulator see of an op (kind, output shape, FLOPs, bytes) and its
///    longest paths in hops from an entry and to an exit (so a deep graph settles in a few rounds
///    rather than one per layer), refine by the multisets of its producers' and
///    consumers' colours until the number of colours is stable.
/// 2. Ops whose colour is shared with another op are candidates; the connected components of the
///    candidates (edges between two candidates, either direction) are the pieces.
/// 3. Pieces of equal size, colours and edge count are compared by an explicit isomorphism:
///    a bijection, found by backtracking (a step limit: a piece it cannot settle stays fixed), that
///    keeps colours, the edges inside the pieces and the neighbours outside them (the same ops, in
///    the same direction). Isomorphic pieces form one kind: swapping two of them (each op for its
///    image, every other op fixed) keeps every edge and every op's cost, so it is an automorphism of
///    the weighted DAG — an exact check, not colour refinement's approximation. A piece alone of its
///    kind stays fixed. Symmetries inside a piece (the two heads of a shard) are not used.

#include <doppler/runtime/graph.hpp>

#include <cstdint>
#include <vector>

namespace doppler::learner {

struct op_symmetry {
  std::vector<int> part;                     ///< per op: its interchangeable part, −1 when fixed
  std::vector<std::uint32_t> pos;            ///< per op in a part: its index in part_ops[part]
  std::vector<int> part_kind;                ///< per part: its kind; parts of one kind are interchangeable
  std::vector<std::vector<op_index>> part_ops;  ///< per part: its ops, position i of every part of a kind corresponding
  int kinds = 0;                             ///< number of part kinds
  std::size_t edges = 0;                     ///< the graph's producer→consumer edges (a check that
                                             ///< the symmetry is used with the graph it describes)

  /// The op of part `b` that stands where op v (in a part of b's kind) stands in its own.
  op_index counterpart(op_index v, int b) const noexcept { return part_ops[b][pos[v]]; }
};

/// The interchangeable parts of g (see above).
op_symmetry find_symmetry(const graph& g);

}  // namespace doppler::learner
