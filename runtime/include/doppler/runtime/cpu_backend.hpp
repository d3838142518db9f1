#pragma once
/// The CPU backend: executes one op of a graph with real kernels (`execute_op`, what a device actor
/// calls), and runs a whole graph on one device in topological order (`execute_reference`, the
/// single-device sequential reference every placed run is compared with). docs/cpu_backend.md.

#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/tensor.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

namespace doppler {

/// Executes op `i` of `g` on the calling thread. `inputs` are its input tensors in argument order
/// (one per entry of `g[i].inputs`, repeats included); each must have its producer's shape, else
/// `error(shape_mismatch)` names the op. `input` ops are filled by `make_input(id, shape, seed)`;
/// `synthetic` ops run `cpu::synthetic(flops, shape, op_seed(seed, id))`, their shape being the op's
/// shape or, without one, ⌈bytes / element size⌉ elements.
tensor execute_op(const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed = 0);

/// Output shape the CPU backend produces for op `i` (its shape; a flat buffer for a shapeless
/// synthetic op).
shape_t output_shape(const graph& g, op_index i);

/// Measured wall time (std::chrono::steady_clock) per op; several runs of an op accumulate.
class kernel_timer {
 public:
  using clock = std::chrono::steady_clock;

  kernel_timer() = default;
  explicit kernel_timer(std::size_t ops) : seconds_(ops, 0.0), runs_(ops, 0) {}

  /// Runs `f()`, adds its wall time to op `i`, and returns what `f` returned.
  template <class F>
  decltype(auto) time(op_index i, F&& f) {
    struct stop {
      kernel_timer& t;
      op_index i;
      clock::time_point start = clock::now();
      ~stop() { t.record(i, std::chrono::duration<double>(clock::now() - start).count()); }
    } s{*this, i};
    return f();
  }
  /// Adds `seconds` to op `i` (grows the table if needed).
  void record(op_index i, double seconds);

  /// Total seconds of op `i` (0 if never run).
  double seconds(op_index i) const noexcept { return i < seconds_.size() ? seconds_[i] : 0.0; }
  /// Times op `i` ran.
  std::uint32_t runs(op_index i) const noexcept { return i < runs_.size() ? runs_[i] : 0; }
  /// Sum over all ops.
  double total() const noexcept;
  /// Seconds summed per op kind (indexed by `op_kind`), for calibrating the cost model.
  std::array<double, op_kind_count> per_kind(const graph& g) const;
  /// Forgets all measurements.
  void clear() noexcept;

 private:
  std::vector<double> seconds_;
  std::vector<std::uint32_t> runs_;
};

/// Options of a reference run.
struct reference_options {
  std::uint64_t seed = 0;          ///< run seed: fills inputs and synthetic outputs
  bool keep_all = true;            ///< keep every op's output; false: only exits (ops with no consumers)
  kernel_timer* timer = nullptr;   ///< if set, every op's kernel time is recorded here

  reference_options& with_seed(std::uint64_t s) { seed = s; return *this; }
  reference_options& exits_only() { keep_all = false; return *this; }
  reference_options& timed(kernel_timer& t) { timer = &t; return *this; }
};

/// Runs `g` on one device in `g.topo_order()`. Returns one tensor per op (indexed by op_index); with
/// `keep_all = false` an op's output is released once its last consumer ran and only the exits'
/// outputs are returned (other entries are empty tensors), so peak memory stays near the live set.
std::vector<tensor> execute_reference(const graph& g, const reference_options& options);
/// All op outputs of a reference run with this seed.
std::vector<tensor> execute_reference(const graph& g, std::uint64_t seed = 0);

}  // namespace doppler
