// Transfers beyond a single copy (NCCL send/recv, chunked store-and-forward), the GPU reference
// executor, and the synchronous executor behind the actor layer's backend interface.
#include "device_impl.hpp"

#include <nccl.h>

#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <type_traits>

namespace doppler::cuda {

// ---- NCCL ---------------------------------------------------------------------------------------

nccl_comm::unique_id nccl_comm::new_unique_id() {
  ncclUniqueId id;
  DOPPLER_NCCL_CHECK(ncclGetUniqueId(&id));
  unique_id out{};
  static_assert(sizeof(id.internal) == std::tuple_size_v<unique_id>);
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

nccl_comm::nccl_comm(const unique_id& id, int ranks, int rank, cuda_device& dev) : dev_(&dev), ranks_(ranks), rank_(rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw error(errc::bad_argument, "nccl_comm: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  ncclUniqueId nid;
  std::memcpy(nid.internal, id.data(), id.size());
  dev.detail().use();
  ncclComm_t comm = nullptr;
  DOPPLER_NCCL_CHECK(ncclCommInitRank(&comm, ranks, nid, rank));
  comm_ = comm;
}

nccl_comm::~nccl_comm() {
  if (!comm_) return;
  // The communicator's GPU current on this thread, as for send and recv (not use(): it throws, and
  // a destructor must not).
  (void)cudaSetDevice(dev_->detail().options.gpu);
  (void)ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

void nccl_comm::send(const device_tensor& t, int peer, int stream, completion_fn done) {
  cuda_device::impl& d = dev_->detail();
  stream_state& st = d.at(stream);
  d.use();
  std::lock_guard lock(st.launch_mu);
  pending_start start(d.begin(st, done));
  DOPPLER_NCCL_CHECK(ncclSend(t.data(), t.numel(), ncclFloat, peer, static_cast<ncclComm_t>(comm_), st.stream));
  d.finish(st, start, completion{0, stream, 0.0, {}}, std::move(done));
}

void nccl_comm::recv(device_tensor& t, int peer, int stream, completion_fn done) {
  cuda_device::impl& d = dev_->detail();
  stream_state& st = d.at(stream);
  d.use();
  std::lock_guard lock(st.launch_mu);
  pending_start start(d.begin(st, done));
  DOPPLER_NCCL_CHECK(ncclRecv(t.data(), t.numel(), ncclFloat, peer, static_cast<ncclComm_t>(comm_), st.stream));
  d.finish(st, start, completion{0, stream, 0.0, {}}, std::move(done));
}

// ---- chunked store-and-forward -------------------------------------------------------------------

device_tensor cuda_device::forward_chunked(const device_tensor& src, std::span<cuda_device* const> path,
                                           std::size_t chunk_bytes) {
  if (path.empty() || src.empty() || path[0]->id() != src.device())
    throw error(errc::bad_argument, "forward_chunked: the path must start at the device holding the tensor");
  if (path.size() == 1) return src;
  const std::size_t hops = path.size() - 1;
  const std::uint64_t chunks = chunk_count(src.bytes(), chunk_bytes);
  // Each hop copies on its receiver's last stream, so the compute streams stay free.
  std::vector<device_tensor> buf{src};
  std::vector<std::vector<cudaEvent_t>> arrived(hops, std::vector<cudaEvent_t>(chunks, nullptr));
  auto stream_of = [&](std::size_t h) { return path[h]->streams() - 1; };
  for (std::size_t h = 1; h <= hops; ++h) {
    buf.push_back(path[h]->allocate(src.shape(), stream_of(h)));
    if (path[h - 1]->gpu() != path[h]->gpu()) path[h - 1]->impl_->grant_peer(path[h]->gpu());
  }
  try {
    for (std::uint64_t k = 0; k < chunks; ++k) {
      const byte_range r = chunk_range(src.bytes(), chunk_bytes, k);
      for (std::size_t h = 1; h <= hops; ++h) {
        impl& to = *path[h]->impl_;
        stream_state& st = to.at(stream_of(h));
        to.use();
        std::lock_guard lock(st.launch_mu);
        if (h > 1) DOPPLER_CUDA_CHECK(cudaStreamWaitEvent(st.stream, arrived[h - 2][k], 0));
        auto* dst = reinterpret_cast<char*>(buf[h].data()) + r.offset;
        auto* from = reinterpret_cast<const char*>(buf[h - 1].data()) + r.offset;
        if (r.size > 0) {
          if (path[h - 1]->gpu() == path[h]->gpu())
            DOPPLER_CUDA_CHECK(cudaMemcpyAsync(dst, from, r.size, cudaMemcpyDeviceToDevice, st.stream));
          else
            DOPPLER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, path[h]->gpu(), from, path[h - 1]->gpu(), r.size, st.stream));
        }
        DOPPLER_CUDA_CHECK(cudaEventCreateWithFlags(&arrived[h - 1][k], cudaEventDisableTiming));
        DOPPLER_CUDA_CHECK(cudaEventRecord(arrived[h - 1][k], st.stream));
      }
    }
    for (std::size_t h = 1; h <= hops; ++h) {
      path[h]->impl_->use();
      DOPPLER_CUDA_CHECK(cudaStreamSynchronize(path[h]->impl_->at(stream_of(h)).stream));
    }
  } catch (...) {
    for (auto& row : arrived)
      for (cudaEvent_t e : row)
        if (e) (void)cudaEventDestroy(e);
    throw;
  }
  for (auto& row : arrived)
    for (cudaEvent_t e : row) (void)cudaEventDestroy(e);
  return buf.back();
}

// ---- the GPU reference executor -------------------------------------------------------------------

std::vector<tensor> execute_reference_cuda(const graph& g, const cuda_reference_options& options) {
  device_options d;
  d.gpu = options.gpu;
  d.streams = 1;
  d.follow_dtype = options.follow_dtype;
  d.bf16_matmul = options.bf16_matmul;
  cuda_device dev(0, d);
  std::vector<device_tensor> out(g.size());
  std::vector<const device_tensor*> args;
  for (op_index i : g.topo_order()) {
    args.clear();
    for (op_index p : g[i].inputs) args.push_back(&out[p]);
    out[i] = dev.launch(g, i, args, options.seed, 0);
  }
  dev.synchronize();
  std::vector<tensor> host(g.size());
  for (op_index i = 0; i < g.size(); ++i) host[i] = dev.download(out[i], 0);
  out.clear();
  dev.synchronize();
  return host;
}

std::vector<tensor> execute_reference_cuda(const graph& g, std::uint64_t seed) {
  cuda_reference_options o;
  o.seed = seed;
  return execute_reference_cuda(g, o);
}

// ---- synchronous executor for the actor backend interface ---------------------------------------

namespace {
std::atomic<unsigned> stream_counter{0};

/// Runs `enqueue(done)` (a launch or a copy with completion callback `done`) and waits until the
/// callback ran; a completion that reports an error throws. The promise is shared with the callback,
/// so a callback that runs late (after an exception here) still finds it alive.
template <class Enqueue>
auto wait_for(Enqueue&& enqueue) {
  auto finished = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = finished->get_future();
  auto check = [&result] {
    if (std::string why = result.get(); !why.empty()) throw error(errc::internal, why);
  };
  completion_fn done = [finished](const completion& c) { finished->set_value(c.error); };
  if constexpr (std::is_void_v<decltype(enqueue(completion_fn{}))>) {
    enqueue(std::move(done));
    check();
  } else {
    auto out = enqueue(std::move(done));
    check();
    return out;
  }
}
}  // namespace

cuda_executor::cuda_executor(int devices, const device_options& options) {
  if (devices < 1) throw error(errc::bad_argument, "cuda_executor: devices must be >= 1");
  for (int d = 0; d < devices; ++d) devs_.push_back(std::make_unique<cuda_device>(d, options));
}

cuda_executor::~cuda_executor() = default;

int cuda_executor::devices() const noexcept { return static_cast<int>(devs_.size()); }

int cuda_executor::index_of(int d) const noexcept {
  const int n = devices();
  return ((d % n) + n) % n;
}

cuda_device& cuda_executor::at(int d) { return *devs_[static_cast<std::size_t>(index_of(d))]; }

int cuda_executor::next_stream(const cuda_device& dev) {
  return static_cast<int>(stream_counter.fetch_add(1, std::memory_order_relaxed) % static_cast<unsigned>(dev.streams()));
}

tensor cuda_executor::execute_on(int d, const graph& g, op_index i, std::span<const tensor* const> inputs,
                                 std::uint64_t seed) {
  cuda_device& dev = at(d);
  const int stream = next_stream(dev);
  std::vector<device_tensor> resident;
  resident.reserve(inputs.size());
  std::vector<const device_tensor*> args;
  for (const tensor* t : inputs) {
    if (t == nullptr) throw error(errc::bad_argument, "op `" + g[i].id + "`: null input");
    resident.push_back(dev.upload(*t, stream));
  }
  for (const device_tensor& t : resident) args.push_back(&t);
  device_tensor out = dev.launch(g, i, args, seed, stream);
  return dev.download(out, stream);  // synchronizes the stream: inputs may be freed after
}

device_tensor cuda_executor::launch_on(int d, const graph& g, op_index i, std::span<const device_tensor* const> inputs,
                                       std::uint64_t seed) {
  cuda_device& dev = at(d);
  const int stream = next_stream(dev);
  return wait_for([&](completion_fn done) { return dev.launch(g, i, inputs, seed, stream, std::move(done)); });
}

device_tensor cuda_executor::copy_to(int d, const device_tensor& src) {
  cuda_device& dev = at(d);
  const int stream = next_stream(dev);
  return wait_for([&](completion_fn done) { return dev.copy_from(src, stream, std::move(done)); });
}

device_tensor cuda_executor::upload_to(int d, const tensor& t) {
  cuda_device& dev = at(d);
  return dev.upload(t, next_stream(dev));
}

device_tensor cuda_executor::allocate_on(int d, const shape_t& shape) {
  cuda_device& dev = at(d);
  const int stream = next_stream(dev);
  device_tensor t = dev.allocate(shape, stream);
  // stream-ordered allocation: other streams may use the memory once the allocation completed
  dev.detail().use();
  DOPPLER_CUDA_CHECK(cudaStreamSynchronize(dev.detail().at(stream).stream));
  return t;
}

void cuda_executor::copy_range(int d, const device_tensor& src, const device_tensor& dst, std::size_t first,
                               std::size_t last) {
  cuda_device& dev = at(d);
  const int stream = next_stream(dev);
  wait_for([&](completion_fn done) { dev.copy_range_from(src, dst, first, last, stream, std::move(done)); });
}

void cuda_executor::upload_range(int d, const tensor& src, const device_tensor& dst, std::size_t first,
                                 std::size_t last) {
  cuda_device& dev = at(d);
  dev.upload_range(src, dst, first, last, next_stream(dev));
}

tensor cuda_executor::download(const device_tensor& t) {
  if (t.empty()) throw error(errc::bad_argument, "cuda_executor::download: empty tensor");
  if (t.device() < 0 || t.device() >= devices() || devs_[static_cast<std::size_t>(t.device())].get() == nullptr)
    throw error(errc::bad_argument, "cuda_executor::download: the tensor is not on one of this executor's devices");
  cuda_device& dev = *devs_[static_cast<std::size_t>(t.device())];
  return dev.download(t, next_stream(dev));
}

}  // namespace doppler::cuda
