#pragma once
/// The CUDA backend behind the actor layer's `actors::backend` interface (header-only: include it
/// only in code that links both doppler::cuda and doppler::actors). Device actor d runs its ops on
/// virtual device d mod n of one GPU (cuda_executor).
///
/// Resident (the default): every output stays in its virtual device's memory pool; the device
/// actors hold it (`tensor_ref::mem`), run its consumers on it and copy it device to device for a
/// consumer on another virtual device (`copy_held`: cudaMemcpyAsync within the GPU, peer copies
/// across GPUs); planned transfers are relayed chunk by chunk in device memory (`copy_range_held`).
/// Host copies happen only for the run's outputs and messages to another process (backend.hpp).
/// Host-staged (`resident = false`): each op uploads its inputs and downloads its output (PCIe per
/// op; kept for comparison).
/// Register it with `engine_options{}.with_custom_backend(std::make_shared<cuda::actor_backend>(4,
/// cuda::device_options{}))`; `doppler run --backend cuda` does so.

#include <doppler/actors/backend.hpp>
#include <doppler/cuda/cuda_backend.hpp>

#include <memory>
#include <vector>

namespace doppler::cuda {

/// An output held in a virtual device's memory, as the device actors see it. It keeps the executor
/// (and so the device and its pool) alive for as long as it exists.
class gpu_memory final : public actors::device_memory {
 public:
  gpu_memory(std::shared_ptr<cuda_executor> exec, device_tensor t) : exec_(std::move(exec)), t_(std::move(t)) {}
  std::uint64_t bytes() const noexcept override { return t_.bytes(); }
  shape_t shape() const override { return t_.shape(); }
  tensor to_host() const override { return exec_->download(t_); }
  const device_tensor& value() const noexcept { return t_; }

 private:
  std::shared_ptr<cuda_executor> exec_;
  device_tensor t_;
};

/// `cuda` backend for device actors: a `cuda_executor` over `devices` virtual devices.
class actor_backend final : public actors::backend {
 public:
  actor_backend(int devices, const device_options& options, bool resident = true)
      : exec_(std::make_shared<cuda_executor>(devices, options)), resident_(resident) {}
  std::string_view name() const noexcept override { return "cuda"; }
  bool resident() const noexcept override { return resident_; }

  tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed) override {
    return exec_->execute_on(0, g, i, inputs, seed);
  }
  tensor execute_on(device_index d, const graph& g, op_index i, std::span<const tensor* const> inputs,
                    std::uint64_t seed) override {
    return exec_->execute_on(static_cast<int>(d), g, i, inputs, seed);
  }

  actors::tensor_ref execute_held(device_index d, const graph& g, op_index i,
                                  std::span<const actors::tensor_ref* const> inputs, std::uint64_t seed) override {
    const int dev = exec_->index_of(static_cast<int>(d));
    std::vector<device_tensor> moved;  // inputs that were not yet on dev (host tensors from another process)
    moved.reserve(inputs.size());      // no reallocation: `args` points into it
    std::vector<const device_tensor*> args;
    args.reserve(inputs.size());
    for (const actors::tensor_ref* in : inputs) {
      if (in == nullptr || !*in) throw error(errc::bad_argument, "op `" + g[i].id + "`: an input is missing");
      if (const device_tensor* t = on_gpu(*in); t != nullptr && t->device() == dev) {
        args.push_back(t);
        continue;
      }
      moved.push_back(place_on(dev, *in));
      args.push_back(&moved.back());
    }
    return held(exec_->launch_on(dev, g, i, args, seed));
  }

  actors::tensor_ref copy_held(device_index, device_index dst, const actors::tensor_ref& v) override {
    if (!v) throw error(errc::bad_argument, "cuda: nothing to copy");
    return held(place_on(exec_->index_of(static_cast<int>(dst)), v));
  }

  actors::tensor_ref allocate_held(device_index d, const shape_t& shape) override {
    return held(exec_->allocate_on(static_cast<int>(d), shape));
  }
  void copy_range_held(device_index, device_index dst, const actors::tensor_ref& from, const actors::tensor_ref& into,
                       std::size_t first, std::size_t last) override {
    const device_tensor* to = on_gpu(into);
    if (to == nullptr) throw error(errc::bad_argument, "cuda: a chunk's destination is not GPU memory");
    const int dev = exec_->index_of(static_cast<int>(dst));
    if (const device_tensor* t = on_gpu(from))
      exec_->copy_range(dev, *t, *to, first, last);
    else if (from.ptr)  // a host tensor (from another process)
      exec_->upload_range(dev, *from.ptr, *to, first, last);
    else
      throw error(errc::bad_argument, "cuda: a chunk's source holds nothing");
  }

 private:
  /// v's device tensor when v is this backend's GPU memory, else null.
  static const device_tensor* on_gpu(const actors::tensor_ref& v) {
    const auto* m = dynamic_cast<const gpu_memory*>(v.mem.get());
    return m != nullptr ? &m->value() : nullptr;
  }
  /// A copy of v on virtual device dev: device to device, or uploaded from the host.
  device_tensor place_on(int dev, const actors::tensor_ref& v) {
    if (const device_tensor* t = on_gpu(v)) return exec_->copy_to(dev, *t);
    return exec_->upload_to(dev, *v.host());
  }
  actors::tensor_ref held(device_tensor t) {
    return actors::tensor_ref{nullptr, std::make_shared<const gpu_memory>(exec_, std::move(t))};
  }

  std::shared_ptr<cuda_executor> exec_;
  bool resident_;
};

}  // namespace doppler::cuda
