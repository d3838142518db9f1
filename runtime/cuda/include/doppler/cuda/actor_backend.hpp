#pragma once
/// The CUDA backend behind the actor layer's `actors::backend` interface (header-only: include it
/// only in code that links both doppler::cuda and doppler::actors). Device actor d runs its ops on
/// virtual device d mod n of one GPU; since that interface exchanges host tensors, each op uploads
/// its inputs and downloads its output (host-staged: GPU kernels, PCIe copies per op). Register it
/// with `engine_options{}.with_custom_backend(std::make_shared<cuda::actor_backend>(4, {}))`, or by
/// name in actors' `make_backend` when DOPPLER_WITH_CUDA is on.

#include <doppler/actors/backend.hpp>
#include <doppler/cuda/cuda_backend.hpp>

#include <memory>

namespace doppler::cuda {

/// `cuda` backend for device actors: a `cuda_executor` over `devices` virtual devices.
class actor_backend final : public actors::backend {
 public:
  actor_backend(int devices, const device_options& options) : exec_(devices, options) {}
  std::string_view name() const noexcept override { return "cuda"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed) override {
    return exec_.execute_on(0, g, i, inputs, seed);
  }
  tensor execute_on(device_index d, const graph& g, op_index i, std::span<const tensor* const> inputs,
                    std::uint64_t seed) override {
    return exec_.execute_on(static_cast<int>(d), g, i, inputs, seed);
  }

 private:
  cuda_executor exec_;
};

}  // namespace doppler::cuda
