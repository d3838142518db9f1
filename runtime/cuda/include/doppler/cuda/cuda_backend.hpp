#pragma once
/// The CUDA backend of doppler (target `doppler::cuda`, built when CMake finds nvcc). This header
/// includes no CUDA header (the device state is behind a pimpl), so CPU-only code and tests can use
/// it. Tensors live on a `cuda_device` (a *virtual* device: its own streams and memory pool on one
/// physical GPU; several may share a GPU). Ops launch asynchronously on a stream; completion is
/// reported, with the kernel time measured by CUDA events, through a callback run on the device's
/// completion thread (never the caller's), which the actor layer turns into a message.
/// docs/cuda_backend.md.

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/tensor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace doppler::cuda {

/// What the machine offers: whether a usable GPU exists, how many, and why not.
struct gpu_status {
  bool available = false;
  int devices = 0;
  std::string reason;  ///< why not available, e.g. "cudaGetDeviceCount: error 35 (...)"
  std::vector<std::string> names;  ///< device names when available
};
/// Probes the CUDA runtime once (cached). Error 35 (insufficient driver), 100 (no device) and any
/// other failure mean "no GPU": never throws.
const gpu_status& probe_gpus();
/// True when at least one GPU can run kernels; `reason` (if given) receives probe_gpus().reason.
bool gpu_available(std::string* reason = nullptr);

/// The doppler::error for a failed CUDA runtime call: `errc::internal`, reason
/// "file:line: expr failed: cudaErrorName (code): description". Public so tests can check the
/// translation of any code without a GPU.
error cuda_error(int code, const char* expr, const char* file, int line);
/// The same for a cuBLAS status and an NCCL result.
error cublas_error(int status, const char* expr, const char* file, int line);
error nccl_error(int result, const char* expr, const char* file, int line);

/// How a virtual device is set up.
struct device_options {
  int gpu = 0;                 ///< physical GPU ordinal
  int streams = 4;             ///< compute streams (ops run concurrently up to this many)
  std::size_t pool_release_threshold = std::size_t(1) << 30;  ///< bytes the pool keeps cached
  /// Matmul precision. `follow_dtype` (the default): each op's graph decides, a bf16 graph's matmuls
  /// round their inputs to bf16 and accumulate in f32, any other graph's run in f32 — so an actor
  /// backend made before any graph is known (`doppler run --backend cuda`) computes a bf16 graph as
  /// execute_reference_cuda does. Otherwise `bf16_matmul` decides for every graph.
  bool follow_dtype = true;
  bool bf16_matmul = false;
  bool matmul_in_bf16(const graph& g) const { return follow_dtype ? g.element_type() == dtype::bf16 : bf16_matmul; }
};

class cuda_device;

/// A tensor in one virtual device's memory pool: f32, row-major, like `doppler::tensor`. Freed
/// (stream-ordered, on the stream it was allocated on) when the last copy of the handle goes; drop
/// it only after the work that uses it has completed (its completion callback ran).
class device_tensor {
 public:
  device_tensor() = default;
  const shape_t& shape() const noexcept { return shape_; }
  std::size_t numel() const noexcept { return numel_; }
  std::size_t bytes() const noexcept { return numel_ * sizeof(float); }
  float* data() const noexcept { return static_cast<float*>(mem_.get()); }
  bool empty() const noexcept { return mem_ == nullptr; }
  /// Index of the virtual device that owns the memory (cuda_device::id()).
  int device() const noexcept { return device_; }

 private:
  friend class cuda_device;
  shape_t shape_;
  std::size_t numel_ = 0;
  std::shared_ptr<void> mem_;
  int device_ = -1;
  cuda_device* owner_ = nullptr;
};

/// Measured times of one completed operation (kernel or copy), from CUDA events.
struct completion {
  op_index op = 0;
  int stream = 0;
  double gpu_ms = 0;  ///< event-measured time on the stream
  std::string error;  ///< empty on success
};
/// Called once per launch, on the device's completion thread for that stream.
using completion_fn = std::function<void(const completion&)>;

/// A virtual GPU device: streams, a cuBLAS handle per stream, a memory pool, and one completion
/// thread per stream that waits on the launch's stop event and then calls its callback in launch
/// order. All launch methods are thread-safe (one mutex per stream).
class cuda_device {
 public:
  using tensor_type = device_tensor;
  /// `id` names this virtual device (its index in the caller's device list).
  cuda_device(int id, const device_options& options);
  ~cuda_device();
  cuda_device(const cuda_device&) = delete;
  cuda_device& operator=(const cuda_device&) = delete;

  int id() const noexcept;
  int gpu() const noexcept;
  int streams() const noexcept;

  /// Allocates an uninitialized tensor from the pool, stream-ordered on `stream`.
  device_tensor allocate(const shape_t& shape, int stream = 0);
  /// Copies a host tensor in (blocks until the copy is done: the host tensor may go right after).
  device_tensor upload(const tensor& t, int stream = 0);
  /// Copies a device tensor back (blocks on `stream`).
  tensor download(const device_tensor& t, int stream = 0);

  /// Output shape of op i (the CPU backend's rule, shapeless synthetic ops included).
  static shape_t output_shape(const graph& g, op_index i);
  /// Enqueues op i of g on `stream` into a new output tensor and returns it at once; `done` (if
  /// set) runs when the kernel finished. Inputs must be resident on this device and complete.
  /// Shape errors throw `error(shape_mismatch)` naming the op before anything is enqueued.
  device_tensor launch(const graph& g, op_index i, std::span<const device_tensor* const> inputs,
                       std::uint64_t seed, int stream = 0, completion_fn done = {});

  /// Copies `src` (on any virtual device) into a new tensor on this device, on `stream`:
  /// cudaMemcpyAsync within one GPU, cudaMemcpyPeerAsync across GPUs. `done` as for launch.
  device_tensor copy_from(const device_tensor& src, int stream = 0, completion_fn done = {}, op_index op = 0);
  /// Copies elements [first, last) of `src` (on any virtual device) into the same range of `dst`
  /// (on this device), on `stream`: one chunk of a store-and-forward relay. `done` as for launch.
  /// Throws errc::bad_argument for a range outside either tensor or a `dst` of another device.
  void copy_range_from(const device_tensor& src, const device_tensor& dst, std::size_t first, std::size_t last,
                       int stream = 0, completion_fn done = {}, op_index op = 0);
  /// Copies elements [first, last) of a host tensor into the same range of `dst` (blocks).
  void upload_range(const tensor& src, const device_tensor& dst, std::size_t first, std::size_t last, int stream = 0);
  /// Store-and-forward in chunks of `chunk_bytes` along `path` (each hop a virtual device, the
  /// first must own src): chunk k crosses hop h once it reached hop h−1, so hops overlap. Returns
  /// the tensor on the last device; blocks until it arrived. Intermediate hops keep no copy.
  static device_tensor forward_chunked(const device_tensor& src, std::span<cuda_device* const> path,
                                       std::size_t chunk_bytes);

  /// Waits for all streams of this device.
  void synchronize();
  /// Bytes currently reserved by this device's pool.
  std::size_t pool_reserved_bytes() const;

  /// The implementation (CUDA types); defined in the backend's sources only.
  struct impl;
  impl& detail() noexcept { return *impl_; }

 private:
  std::unique_ptr<impl> impl_;
};

/// One NCCL communicator for a set of ranks (one rank = one GPU in this or another process). The
/// unique id comes from `nccl_unique_id()` on one rank and is passed to the others by the caller
/// (the actors send it in a message). NCCL needs distinct GPUs per communicator, so virtual devices
/// sharing a GPU use `copy_from` instead. Call each rank's send/recv from that rank's own thread
/// (one device actor per GPU); no group calls are made, so completions time the transfer itself.
class nccl_comm {
 public:
  using unique_id = std::array<char, 128>;
  static unique_id new_unique_id();
  /// Joins the communicator as `rank` of `ranks` on `dev`'s GPU (collective: every rank must call).
  nccl_comm(const unique_id& id, int ranks, int rank, cuda_device& dev);
  /// ncclCommDestroy: like the constructor, end every rank's communicator from that rank's own
  /// thread (recent NCCLs finalize inside it and can wait for the node's other ranks).
  ~nccl_comm();
  nccl_comm(const nccl_comm&) = delete;
  nccl_comm& operator=(const nccl_comm&) = delete;
  int rank() const noexcept { return rank_; }
  int ranks() const noexcept { return ranks_; }
  /// ncclSend of t's floats to `peer` on `stream` of the device; `done` on completion.
  void send(const device_tensor& t, int peer, int stream = 0, completion_fn done = {});
  /// ncclRecv into t (preallocated with the sender's shape) from `peer`.
  void recv(device_tensor& t, int peer, int stream = 0, completion_fn done = {});

 private:
  void* comm_ = nullptr;
  cuda_device* dev_ = nullptr;
  int ranks_ = 0, rank_ = 0;
};

/// Options of a GPU reference run.
struct cuda_reference_options {
  std::uint64_t seed = 0;
  int gpu = 0;
  bool bf16_matmul = false;  ///< default: the graph's dtype is bf16
  bool follow_dtype = true;  ///< if true, bf16_matmul = (graph dtype is bf16)
};
/// Runs every op of g in topological order on one virtual device and one stream, and returns every
/// op's output on the host (indexed by op_index): the GPU twin of `execute_reference`.
std::vector<tensor> execute_reference_cuda(const graph& g, const cuda_reference_options& options);
std::vector<tensor> execute_reference_cuda(const graph& g, std::uint64_t seed = 0);

/// A synchronous executor for the actor layer's `backend` interface: op i of the actor device d
/// runs on virtual device d mod n (n = devices, all on GPU `gpu`). Each call blocks its (worker)
/// thread until the GPU finished; calls from several threads run concurrently on the devices'
/// streams (taken round-robin). Two ways to use it: host tensors in and out (`execute_on`:
/// uploads, kernels, download), or device tensors that stay on their virtual device between ops
/// (`launch_on`, `copy_to`; host copies with `upload_to` / `download`).
class cuda_executor {
 public:
  cuda_executor(int devices, const device_options& options);
  ~cuda_executor();
  int devices() const noexcept;
  /// The virtual device that actor device d runs on: d mod devices().
  int index_of(int d) const noexcept;
  tensor execute_on(int d, const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed);
  /// Runs op i on virtual device index_of(d) with inputs resident there and waits for it; the output
  /// stays there. A kernel that failed on the GPU throws errc::internal with CUDA's message.
  device_tensor launch_on(int d, const graph& g, op_index i, std::span<const device_tensor* const> inputs,
                          std::uint64_t seed);
  /// A copy of `src` (on any of this executor's virtual devices) on index_of(d); waits until it is there.
  device_tensor copy_to(int d, const device_tensor& src);
  /// A host tensor copied to index_of(d) (blocks).
  device_tensor upload_to(int d, const tensor& t);
  /// A tensor of one of this executor's virtual devices copied back to the host (blocks).
  tensor download(const device_tensor& t);
  /// An uninitialized tensor on index_of(d), usable from any stream once this returns.
  device_tensor allocate_on(int d, const shape_t& shape);
  /// Elements [first, last) of `src` (a device tensor of this executor, or a host tensor) copied
  /// into the same range of `dst` (on index_of(d)); waits until they are there.
  void copy_range(int d, const device_tensor& src, const device_tensor& dst, std::size_t first, std::size_t last);
  void upload_range(int d, const tensor& src, const device_tensor& dst, std::size_t first, std::size_t last);

 private:
  cuda_device& at(int d);
  int next_stream(const cuda_device& dev);
  std::vector<std::unique_ptr<cuda_device>> devs_;
};

}  // namespace doppler::cuda
