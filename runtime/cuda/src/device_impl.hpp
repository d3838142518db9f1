#pragma once
// Private: the state behind cuda_device (streams, cuBLAS handles, pool, completion threads).
#include "cuda_common.hpp"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace doppler::cuda {

/// A launch waiting for its stop event, reported in launch order by its stream's waiter thread.
struct pending_completion {
  cudaEvent_t start = nullptr, stop = nullptr;
  completion info;
  completion_fn done;
};

/// One stream with its own cuBLAS handle and completion waiter.
struct stream_state {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::mutex launch_mu;  // serializes enqueues on this stream (cuBLAS handles are per stream)
  std::mutex q_mu;
  std::condition_variable q_cv;
  std::deque<pending_completion> queue;
  bool stopping = false;
  std::thread waiter;
};

struct pending_start;

struct cuda_device::impl {
  int id = 0;
  device_options options;
  cudaMemPool_t pool = nullptr;
  std::vector<std::unique_ptr<stream_state>> streams;
  std::mutex peer_mu;
  std::vector<int> peers_granted;  // GPUs given access to this pool

  /// Makes this device's GPU current on the calling thread.
  void use() const { DOPPLER_CUDA_CHECK(cudaSetDevice(options.gpu)); }
  stream_state& at(int s);
  /// Stream-ordered allocation from the pool (at least 4 bytes, so a tensor is never null).
  std::shared_ptr<void> alloc(std::size_t bytes, int s);
  /// Records a start event on stream s if `done` is set (returns null otherwise).
  cudaEvent_t begin(stream_state& st, const completion_fn& done);
  /// Records the stop event and queues the completion for the stream's waiter, which then owns
  /// both events (start's too; if recording the stop fails, both are destroyed here).
  void finish(stream_state& st, pending_start& start, completion info, completion_fn done);
  /// Lets GPU `gpu` read this pool's memory (peer copies), once.
  void grant_peer(int gpu);
  void waiter_loop(stream_state& st);
  /// Stops the waiters (running every queued callback), destroys streams, handles and the pool.
  void shutdown();
};

/// begin()'s start event until finish() takes it (release()): destroyed if the launch between the
/// two throws, so a failed launch leaks no event.
struct pending_start {
  cudaEvent_t ev = nullptr;
  explicit pending_start(cudaEvent_t e) : ev(e) {}
  pending_start(const pending_start&) = delete;
  pending_start& operator=(const pending_start&) = delete;
  ~pending_start() {
    if (ev) (void)cudaEventDestroy(ev);
  }
  cudaEvent_t release() noexcept { return std::exchange(ev, nullptr); }
};

/// Enqueues the kernels of op i (ops.cpp) into `out` on `st`.
void enqueue_op(cuda_device::impl& dev, stream_state& st, const graph& g, op_index i,
                std::span<const device_tensor* const> inputs, const device_tensor& out, std::uint64_t seed);

}  // namespace doppler::cuda
