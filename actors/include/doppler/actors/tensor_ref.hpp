#pragma once
/// What device actors hold and pass each other: a tensor in host memory, or in the memory of a
/// *resident* backend's device (a GPU's), which stays there between ops and goes to a peer device
/// of the same process without a trip through host memory (backend.hpp, `resident()`).

#include <doppler/runtime/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace doppler::actors {

/// A tensor in a resident backend's device memory. The backend makes these; device actors only
/// hold them, count their bytes, and ask for a host copy where one is needed (outputs the run
/// returns, a message to another process, a chunked planned transfer).
class device_memory {
 public:
  virtual ~device_memory() = default;
  /// Bytes the tensor occupies on its device.
  virtual std::uint64_t bytes() const noexcept = 0;
  /// Its shape.
  virtual shape_t shape() const = 0;
  /// A host copy of the tensor's values (blocks until it is there). Throws on a device failure.
  virtual tensor to_host() const = 0;
};

/// A tensor carried by a message or held in a device's buffers: `ptr` (host memory), or `mem` (a
/// resident backend's device memory; `ptr` empty). Local sends share the buffer read-only (the
/// receiver copies it into its own buffer); serialized sends write shape and values (protocol.hpp),
/// so device memory reaches another process as a host tensor.
struct tensor_ref {
  std::shared_ptr<const tensor> ptr;
  std::shared_ptr<const device_memory> mem;

  /// Holds a tensor (host or device).
  explicit operator bool() const noexcept { return ptr || mem; }
  /// Bytes of the values held (0 when empty).
  std::uint64_t bytes() const noexcept {
    return ptr ? ptr->numel() * sizeof(float) : mem ? mem->bytes() : 0;
  }
  /// Elements held (f32).
  std::size_t numel() const noexcept { return static_cast<std::size_t>(bytes() / sizeof(float)); }
  /// The shape of the tensor held (empty when nothing is held).
  shape_t shape() const { return ptr ? ptr->shape() : mem ? mem->shape() : shape_t{}; }
  /// The host tensor: `ptr`, or a host copy of `mem` (blocks); null when empty.
  std::shared_ptr<const tensor> host() const {
    if (ptr || !mem) return ptr;
    return std::make_shared<const tensor>(mem->to_host());
  }
};

}  // namespace doppler::actors
