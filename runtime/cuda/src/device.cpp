// cuda_device: streams, cuBLAS handles, the memory pool, uploads/downloads, copies between virtual
// devices, and the completion threads that report finished work without blocking the caller.
#include "device_impl.hpp"

#include <doppler/runtime/cpu_backend.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace doppler::cuda {

stream_state& cuda_device::impl::at(int s) {
  if (s < 0 || s >= static_cast<int>(streams.size()))
    throw error(errc::bad_argument, "cuda device " + std::to_string(id) + ": stream " + std::to_string(s) +
                                        " out of range (it has " + std::to_string(streams.size()) + ")");
  return *streams[static_cast<std::size_t>(s)];
}

std::shared_ptr<void> cuda_device::impl::alloc(std::size_t bytes, int s) {
  stream_state& st = at(s);
  use();
  void* p = nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, std::max<std::size_t>(bytes, 4), pool, st.stream);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw error(errc::infeasible, "cuda device " + std::to_string(id) + ": out of memory allocating " +
                                      std::to_string(bytes) + " bytes");
  }
  DOPPLER_CUDA_CHECK(e);
  const int gpu = options.gpu;
  cudaStream_t stream = st.stream;
  // Freed stream-ordered on the allocating stream; errors at teardown cannot be reported.
  return std::shared_ptr<void>(p, [gpu, stream](void* q) {
    if (cudaSetDevice(gpu) == cudaSuccess) (void)cudaFreeAsync(q, stream);
  });
}

cudaEvent_t cuda_device::impl::begin(stream_state& st, const completion_fn& done) {
  if (!done) return nullptr;
  cudaEvent_t start = nullptr;
  DOPPLER_CUDA_CHECK(cudaEventCreate(&start));
  pending_start guard(start);
  DOPPLER_CUDA_CHECK(cudaEventRecord(start, st.stream));
  return guard.release();
}

void cuda_device::impl::finish(stream_state& st, pending_start& start, completion info, completion_fn done) {
  if (!done) return;
  cudaEvent_t stop = nullptr;
  // Blocking sync: the waiter thread sleeps instead of spinning on the CPU.
  DOPPLER_CUDA_CHECK(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));
  pending_start stop_guard(stop);
  DOPPLER_CUDA_CHECK(cudaEventRecord(stop, st.stream));
  {
    std::lock_guard lock(st.q_mu);
    st.queue.push_back({start.ev, stop, std::move(info), std::move(done)});
  }
  start.release();
  stop_guard.release();
  st.q_cv.notify_one();
}

void cuda_device::impl::waiter_loop(stream_state& st) {
  (void)cudaSetDevice(options.gpu);
  for (;;) {
    pending_completion p;
    {
      std::unique_lock lock(st.q_mu);
      st.q_cv.wait(lock, [&] { return st.stopping || !st.queue.empty(); });
      if (st.queue.empty()) return;  // stopping and drained
      p = std::move(st.queue.front());
      st.queue.pop_front();
    }
    const char* call = "cudaEventSynchronize";
    cudaError_t e = cudaEventSynchronize(p.stop);
    float ms = 0;
    if (e == cudaSuccess && p.start) {
      call = "cudaEventElapsedTime";
      e = cudaEventElapsedTime(&ms, p.start, p.stop);
    }
    if (e != cudaSuccess) p.info.error = cuda_error(static_cast<int>(e), call, __FILE__, __LINE__).what();
    p.info.gpu_ms = ms;
    if (p.start) (void)cudaEventDestroy(p.start);
    (void)cudaEventDestroy(p.stop);
    try {
      p.done(p.info);
    } catch (...) {
      // A callback must not throw (it runs on this thread); the completion is dropped, not the thread.
    }
  }
}

void cuda_device::impl::grant_peer(int gpu) {
  if (gpu == options.gpu) return;
  std::lock_guard lock(peer_mu);
  if (std::find(peers_granted.begin(), peers_granted.end(), gpu) != peers_granted.end()) return;
  int can = 0;
  DOPPLER_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, gpu, options.gpu));
  if (can) {
    cudaMemAccessDesc desc{};
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = gpu;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    DOPPLER_CUDA_CHECK(cudaMemPoolSetAccess(pool, &desc, 1));
  }
  peers_granted.push_back(gpu);
}

cuda_device::cuda_device(int id, const device_options& options) : impl_(std::make_unique<impl>()) {
  impl& d = *impl_;
  d.id = id;
  d.options = options;
  if (options.streams < 1 || options.streams > 64)
    throw error(errc::bad_argument, "cuda device: streams must be in [1, 64], got " + std::to_string(options.streams));
  std::string why;
  if (!gpu_available(&why)) throw error(errc::infeasible, "cuda device: no GPU: " + why);
  if (options.gpu < 0 || options.gpu >= probe_gpus().devices)
    throw error(errc::bad_argument, "cuda device: GPU " + std::to_string(options.gpu) + " does not exist (" +
                                        std::to_string(probe_gpus().devices) + " found)");
  d.use();
  // Tensors come from a stream-ordered pool; a GPU (or a virtualised driver) without pools would
  // fail at cudaMemPoolCreate with a bare "not supported", so say what is missing.
  int pools = 0;
  DOPPLER_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, options.gpu));
  if (!pools)
    throw error(errc::infeasible, "cuda device: GPU " + std::to_string(options.gpu) +
                                      " has no stream-ordered memory pools (cudaDevAttrMemoryPoolsSupported = 0), "
                                      "which the cuda backend allocates from");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = options.gpu;
  DOPPLER_CUDA_CHECK(cudaMemPoolCreate(&d.pool, &props));
  try {  // from here on a throw releases the pool and the streams made so far
    auto threshold = static_cast<std::uint64_t>(options.pool_release_threshold);
    DOPPLER_CUDA_CHECK(cudaMemPoolSetAttribute(d.pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    for (int s = 0; s < options.streams; ++s) {
      d.streams.push_back(std::make_unique<stream_state>());
      stream_state& st = *d.streams.back();
      DOPPLER_CUDA_CHECK(cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking));
      DOPPLER_CUBLAS_CHECK(cublasCreate(&st.blas));
      DOPPLER_CUBLAS_CHECK(cublasSetStream(st.blas, st.stream));
      // Plain FP32 GEMMs (no TF32), so f32 results stay within 1e-4 of the CPU backend.
      DOPPLER_CUBLAS_CHECK(cublasSetMathMode(st.blas, CUBLAS_DEFAULT_MATH));
      stream_state* raw = &st;
      st.waiter = std::thread([this, raw] { impl_->waiter_loop(*raw); });
    }
  } catch (...) {
    d.shutdown();  // the destructor does not run for a throwing constructor
    throw;
  }
}

void cuda_device::impl::shutdown() {
  (void)cudaSetDevice(options.gpu);
  for (auto& st : streams) {
    {
      std::lock_guard lock(st->q_mu);
      st->stopping = true;
    }
    st->q_cv.notify_one();
    if (st->waiter.joinable()) st->waiter.join();  // drains: every queued callback runs
    if (st->stream) (void)cudaStreamSynchronize(st->stream);
    if (st->blas) (void)cublasDestroy(st->blas);
    st->blas = nullptr;
  }
  // Tensors still alive would free into destroyed streams: they must go before their device.
  for (auto& st : streams)
    if (st->stream) (void)cudaStreamDestroy(st->stream);
  streams.clear();
  if (pool) (void)cudaMemPoolDestroy(pool);
  pool = nullptr;
}

cuda_device::~cuda_device() { impl_->shutdown(); }

int cuda_device::id() const noexcept { return impl_->id; }
int cuda_device::gpu() const noexcept { return impl_->options.gpu; }
int cuda_device::streams() const noexcept { return static_cast<int>(impl_->streams.size()); }

device_tensor cuda_device::allocate(const shape_t& shape, int stream) {
  device_tensor t;
  t.shape_ = shape;
  t.numel_ = element_count(shape);
  t.mem_ = impl_->alloc(t.numel_ * sizeof(float), stream);
  t.device_ = impl_->id;
  t.owner_ = this;
  return t;
}

device_tensor cuda_device::upload(const tensor& h, int stream) {
  device_tensor t = allocate(h.shape(), stream);
  stream_state& st = impl_->at(stream);
  std::lock_guard lock(st.launch_mu);
  DOPPLER_CUDA_CHECK(cudaMemcpyAsync(t.data(), h.data(), t.bytes(), cudaMemcpyHostToDevice, st.stream));
  DOPPLER_CUDA_CHECK(cudaStreamSynchronize(st.stream));
  return t;
}

tensor cuda_device::download(const device_tensor& t, int stream) {
  tensor h(t.shape());
  stream_state& st = impl_->at(stream);
  impl_->use();
  std::lock_guard lock(st.launch_mu);
  if (t.numel() > 0)
    DOPPLER_CUDA_CHECK(cudaMemcpyAsync(h.data(), t.data(), t.bytes(), cudaMemcpyDeviceToHost, st.stream));
  DOPPLER_CUDA_CHECK(cudaStreamSynchronize(st.stream));
  return h;
}

shape_t cuda_device::output_shape(const graph& g, op_index i) { return doppler::output_shape(g, i); }

device_tensor cuda_device::launch(const graph& g, op_index i, std::span<const device_tensor* const> inputs,
                                  std::uint64_t seed, int stream, completion_fn done) {
  const op& o = g[i];
  if (inputs.size() != o.inputs.size())
    throw error(errc::bad_argument, "op `" + o.id + "` takes " + std::to_string(o.inputs.size()) + " inputs, got " +
                                        std::to_string(inputs.size()));
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    const device_tensor* x = inputs[a];
    if (x == nullptr || x->empty())
      throw error(errc::bad_argument, "op `" + o.id + "`: input " + std::to_string(a) + " is missing");
    const shape_t want = output_shape(g, o.inputs[a]);
    if (x->shape() != want)
      throw error(errc::shape_mismatch, "op `" + o.id + "`: input " + std::to_string(a) + " (`" + g[o.inputs[a]].id +
                                            "`) has shape " + to_string(x->shape()) + ", expected " + to_string(want));
    if (x->device() != impl_->id)
      throw error(errc::bad_argument, "op `" + o.id + "`: input " + std::to_string(a) + " lives on cuda device " +
                                          std::to_string(x->device()) + ", not " + std::to_string(impl_->id));
  }
  device_tensor out = allocate(output_shape(g, i), stream);
  stream_state& st = impl_->at(stream);
  std::lock_guard lock(st.launch_mu);
  pending_start start(impl_->begin(st, done));
  try {
    enqueue_op(*impl_, st, g, i, inputs, out, seed);
  } catch (const error& e) {
    throw error(e.code(), "op `" + o.id + "`: " + e.reason());
  }
  impl_->finish(st, start, completion{i, stream, 0.0, {}}, std::move(done));
  return out;
}

device_tensor cuda_device::copy_from(const device_tensor& src, int stream, completion_fn done, op_index op) {
  if (src.empty()) throw error(errc::bad_argument, "copy_from: empty source tensor");
  device_tensor dst = allocate(src.shape(), stream);
  stream_state& st = impl_->at(stream);
  std::lock_guard lock(st.launch_mu);
  pending_start start(impl_->begin(st, done));
  const int src_gpu = src.owner_->gpu();
  if (src_gpu != impl_->options.gpu) src.owner_->impl_->grant_peer(impl_->options.gpu);
  if (src.numel() > 0) {
    if (src_gpu == impl_->options.gpu)
      DOPPLER_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, st.stream));
    else
      DOPPLER_CUDA_CHECK(
          cudaMemcpyPeerAsync(dst.data(), impl_->options.gpu, src.data(), src_gpu, src.bytes(), st.stream));
  }
  impl_->finish(st, start, completion{op, stream, 0.0, {}}, std::move(done));
  return dst;
}

namespace {
void check_range(const char* what, std::size_t first, std::size_t last, std::size_t src_n, std::size_t dst_n) {
  if (first > last || last > src_n || last > dst_n)
    throw error(errc::bad_argument, std::string(what) + ": range [" + std::to_string(first) + ", " + std::to_string(last) +
                                        ") is outside the tensors (" + std::to_string(src_n) + " and " +
                                        std::to_string(dst_n) + " elements)");
}
}  // namespace

void cuda_device::copy_range_from(const device_tensor& src, const device_tensor& dst, std::size_t first,
                                  std::size_t last, int stream, completion_fn done, op_index op) {
  if (src.empty() || dst.empty()) throw error(errc::bad_argument, "copy_range_from: empty tensor");
  if (dst.device() != impl_->id || dst.owner_ != this)
    throw error(errc::bad_argument, "copy_range_from: the destination is not on cuda device " + std::to_string(impl_->id));
  check_range("copy_range_from", first, last, src.numel(), dst.numel());
  stream_state& st = impl_->at(stream);
  impl_->use();
  std::lock_guard lock(st.launch_mu);
  pending_start start(impl_->begin(st, done));
  const int src_gpu = src.owner_->gpu();
  if (src_gpu != impl_->options.gpu) src.owner_->impl_->grant_peer(impl_->options.gpu);
  const std::size_t offset = first * sizeof(float), bytes = (last - first) * sizeof(float);
  char* to = reinterpret_cast<char*>(dst.data()) + offset;
  const char* from = reinterpret_cast<const char*>(src.data()) + offset;
  if (bytes > 0) {
    if (src_gpu == impl_->options.gpu)
      DOPPLER_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, st.stream));
    else
      DOPPLER_CUDA_CHECK(cudaMemcpyPeerAsync(to, impl_->options.gpu, from, src_gpu, bytes, st.stream));
  }
  impl_->finish(st, start, completion{op, stream, 0.0, {}}, std::move(done));
}

void cuda_device::upload_range(const tensor& src, const device_tensor& dst, std::size_t first, std::size_t last,
                               int stream) {
  if (dst.empty()) throw error(errc::bad_argument, "upload_range: empty tensor");
  if (dst.device() != impl_->id || dst.owner_ != this)
    throw error(errc::bad_argument, "upload_range: the destination is not on cuda device " + std::to_string(impl_->id));
  check_range("upload_range", first, last, src.numel(), dst.numel());
  stream_state& st = impl_->at(stream);
  impl_->use();
  std::lock_guard lock(st.launch_mu);
  if (last > first)
    DOPPLER_CUDA_CHECK(cudaMemcpyAsync(dst.data() + first, src.data() + first, (last - first) * sizeof(float),
                                       cudaMemcpyHostToDevice, st.stream));
  DOPPLER_CUDA_CHECK(cudaStreamSynchronize(st.stream));
}

void cuda_device::synchronize() {
  impl_->use();
  for (auto& st : impl_->streams) DOPPLER_CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

std::size_t cuda_device::pool_reserved_bytes() const {
  impl_->use();
  std::uint64_t v = 0;
  DOPPLER_CUDA_CHECK(cudaMemPoolGetAttribute(impl_->pool, cudaMemPoolAttrReservedMemCurrent, &v));
  return static_cast<std::size_t>(v);
}

}  // namespace doppler::cuda
