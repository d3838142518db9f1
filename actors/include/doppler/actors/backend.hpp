#pragma once
/// Backends a device actor runs kernels with, chosen by name (STYLE habit 4): `cpu` runs the real
/// CPU kernels of doppler::runtime; `null` runs nothing and returns empty tensors (dispatch
/// benchmarks: it measures the actor protocol alone).

#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/tensor.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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
  /// True when `execute` does no work, so a device may call it on its own actor thread instead of
  /// handing it to a worker thread (only the `null` backend).
  virtual bool runs_inline() const noexcept { return false; }
};

/// Names: cpu, null.
std::vector<std::string> backend_names();
/// Throws `error(unknown_kind)` listing the valid names.
std::shared_ptr<backend> make_backend(std::string_view name);

}  // namespace doppler::actors
