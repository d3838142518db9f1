#pragma once
/// Backends a device actor runs kernels with, chosen by name (STYLE habit 4): `cpu` runs the real
/// CPU kernels of doppler::runtime; `null` runs nothing and returns empty tensors (dispatch
/// benchmarks: it measures the actor protocol alone); `emulate` computes nothing but holds each
/// kernel and each transfer for the time the cost model gives it on the cluster (the runtime's
/// scheduling, measured on a host that lacks the cluster's devices). A *resident* backend (`cuda`)
/// keeps every output in its device's memory: device actors hold it there, run the consumers on it
/// and copy it device to device (`execute_held`, `copy_held`); host copies are made only for the
/// run's outputs and for messages to other processes (chunked planned transfers are relayed in
/// device memory too: `allocate_held`, `copy_range_held`).

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/tensor.hpp>

#include <doppler/actors/tensor_ref.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace doppler::actors {

/// How a device executes one op. Implementations must be callable from several threads at once.
class backend {
 public:
  virtual ~backend() = default;
  virtual std::string_view name() const noexcept = 0;
  /// Runs op `i` of `g` on the calling thread; `inputs` in argument order (repeats included).
  /// Throws to report a failed kernel (the run then ends naming the op and the device).
  virtual tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs,
                         std::uint64_t seed) = 0;
  /// Runs op `i` on device `d` (backends that model devices override this; the default ignores d).
  virtual tensor execute_on(device_index d, const graph& g, op_index i, std::span<const tensor* const> inputs,
                            std::uint64_t seed) {
    (void)d;
    return execute(g, i, inputs, seed);
  }
  /// True when the backend keeps outputs in device memory (`execute_held` returns `tensor_ref::mem`).
  virtual bool resident() const noexcept { return false; }
  /// Runs op `i` on device `d` with the inputs a device actor holds, on the calling thread. The
  /// default runs `execute_on` on host tensors (a `mem` input is copied to the host first) and
  /// returns the output in host memory. Resident backends override it and `copy_held`: their inputs
  /// are their own memory on `d` (or host tensors, from another process), their output memory on `d`.
  virtual tensor_ref execute_held(device_index d, const graph& g, op_index i, std::span<const tensor_ref* const> inputs,
                                  std::uint64_t seed);
  /// Device `dst`'s own copy of `v`, which device `src` holds, on the calling thread (a device's
  /// copy thread). The default copies into new host memory; resident backends copy into `dst`'s
  /// memory (device to device, or host to device for a tensor from another process).
  virtual tensor_ref copy_held(device_index src, device_index dst, const tensor_ref& v);
  /// Planned (chunked) transfers on a resident backend: an uninitialized tensor of `shape` in device
  /// `d`'s memory, which `copy_range_held` fills chunk by chunk. The default throws (a resident
  /// backend must implement both for runs with planned transfers).
  virtual tensor_ref allocate_held(device_index d, const shape_t& shape);
  /// Copies elements [first, last) of `from` (held by device `src`: its memory, or a host tensor from
  /// another process) into the same range of `into` (made by `allocate_held` on `dst`), on the calling
  /// thread (a device's copy thread). The ranges of one tensor are written once each.
  virtual void copy_range_held(device_index src, device_index dst, const tensor_ref& from, const tensor_ref& into,
                               std::size_t first, std::size_t last);
  /// Called by a device's copy thread as a copy of `bytes` from device `src` to `dst` starts: the
  /// seconds it must at least take (0: as fast as the copy itself). Emulated devices reserve the
  /// route's links as the simulator does (a copy waits for earlier copies on the same links) and
  /// return the time until their modeled end.
  virtual double copy_seconds(device_index src, device_index dst, double bytes) {
    (void)src, (void)dst, (void)bytes;
    return 0.0;
  }
  /// True when `execute` does no work, so a device may call it on its own actor thread instead of
  /// handing it to a worker thread (only the `null` backend).
  virtual bool runs_inline() const noexcept { return false; }
  /// The run device `d` was working on has ended (done, failed or timed out): kernels still running
  /// there may stop early, their results are dropped. `emulate` ends its holds at once; the default
  /// (and `cpu`, whose kernels cannot be stopped midway) does nothing.
  virtual void interrupt(device_index d) noexcept { (void)d; }
};

/// A backend around `inner` whose listed devices are slower by their factor (≥ 1): after each op
/// `inner` runs on such a device, the calling thread sleeps (factor − 1) × the op's wall time, so the
/// op occupies its device factor × as long while the host's cores stay free — a throttled or shared
/// GPU, or the simulator's `--straggler`, on the real runtime (the simulator is not told: phase III's
/// sim-to-real gap). Copies are unchanged. Throws errc::bad_argument for a factor < 1 or a device whose factors multiply past 1e6.
std::shared_ptr<backend> make_straggler_backend(std::shared_ptr<backend> inner,
                                                std::vector<std::pair<device_index, double>> slowdowns);

/// Names: cpu, null, emulate.
std::vector<std::string> backend_names();
/// `cpu` or `null`; throws `error(unknown_kind)` listing the valid names (`emulate` needs a cluster:
/// use the overload below).
std::shared_ptr<backend> make_backend(std::string_view name);
/// Any backend by name; `emulate` models the devices of `c` under `costs`.
std::shared_ptr<backend> make_backend(std::string_view name, std::shared_ptr<const cluster> c, const cost_model& costs);

}  // namespace doppler::actors
