// The CUDA backend under the actor runtime (cuda::actor_backend): GPU-resident (outputs stay in the
// virtual devices' memory, device actors copy them device to device) and host-staged, against the
// CPU reference on every workload generator, wc and bsp. GPU cases report "skipped: no GPU
// (reason)" and return where cudaGetDeviceCount finds none; the no-GPU error case runs everywhere.
#include <doppler/actors/engine.hpp>
#include <doppler/cuda/actor_backend.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include "../fan_out.hpp"
#include "gpu_test.hpp"

#include <algorithm>
#include <cmath>
#include <string>

using namespace doppler;
namespace dc = doppler::cuda;
using doppler::testing::have_gpu;

namespace {

workload_params small_params() {
  workload_params p;
  p.dim = 64;
  p.heads = 4;
  p.ffn = 96;
  p.seq = 16;
  p.shards = 2;
  p.experts = 4;
  p.top_k = 2;
  p.matrices = 4;
  p.layers = 2;
  return p;
}

}  // namespace

TEST_CASE("without a GPU the cuda actor backend refuses to start with a clear error") {
  std::string why;
  if (dc::gpu_available(&why)) {
    MESSAGE("not applicable: this machine has a GPU");
    return;
  }
  try {
    dc::actor_backend b(4, dc::device_options{});
    FAIL("constructed a cuda backend without a GPU");
  } catch (const doppler::error& e) {
    CHECK(e.code() == errc::infeasible);
    CHECK(std::string(e.what()).find("no GPU") != std::string::npos);
  }
}

TEST_CASE("every workload on 4 virtual devices, resident and host-staged, wc and bsp: outputs equal the CPU's") {
  if (!have_gpu()) return;
  cluster c = make_preset("cpu:4");
  for (const bool resident : {true, false}) {
    auto backend = std::make_shared<dc::actor_backend>(4, dc::device_options{}, resident);
    CHECK(backend->resident() == resident);
    engine e(c, engine_options{}.with_streams(2).with_custom_backend(backend));
    for (const auto& name : workload_names()) {
      graph g = make_workload(name, small_params());
      const auto ref = execute_reference(g, 11);
      placement p = make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
      for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
        CAPTURE(name);
        CAPTURE(resident);
        CAPTURE(mode == exec_mode::wc ? "wc" : "bsp");
        auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(11).keep_all());
        REQUIRE(r.outputs.size() == g.size());
        double worst = 0;
        for (op_index i = 0; i < g.size(); ++i) worst = std::max(worst, max_rel_diff(r.outputs[i], ref[i]));
        CHECK(worst <= 1e-4);
        CHECK(e.bytes_held() == 0);
      }
    }
  }
}

TEST_CASE("a bf16 workload through the actor backend computes as execute_reference_cuda does: matmuls in bf16") {
  if (!have_gpu()) return;
  cluster c = make_preset("cpu:4");
  // The backend is made before any graph: each op's graph decides its matmul precision.
  engine e(c, engine_options{}.with_custom_backend(std::make_shared<dc::actor_backend>(4, dc::device_options{})));
  workload_params bp = small_params();
  bp.type = dtype::bf16;
  graph g = make_workload("llama-block", bp);
  placement p = make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
  auto r = e.run(g, p, run_options{}.with_seed(11).keep_all());
  const auto gpu_bf16 = dc::execute_reference_cuda(g, 11);  // follows the dtype: bf16 matmuls
  dc::cuda_reference_options f32;
  f32.seed = 11;
  f32.follow_dtype = false;
  const auto gpu_f32 = dc::execute_reference_cuda(g, f32);
  double to_bf16 = 0, to_f32 = 0;
  for (op_index i = 0; i < g.size(); ++i) {
    to_bf16 = std::max(to_bf16, max_rel_diff(r.outputs[i], gpu_bf16[i]));
    to_f32 = std::max(to_f32, max_rel_diff(r.outputs[i], gpu_f32[i]));
  }
  MESSAGE("bf16 llama-block on the actor backend: " << to_bf16 << " from the bf16 reference, " << to_f32
                                                      << " from the f32 one");
  CHECK(to_bf16 <= 1e-4);
  CHECK(to_f32 > 1e-4);  // the f32 reference really differs: the check above could fail
}

TEST_CASE("planned transfers on the GPU: a tensor for three devices of a line, relayed chunk by chunk in device memory") {
  if (!have_gpu()) return;
  cluster c = testing::cpu_line();
  testing::fan_out f;
  const graph& g = f.g;
  const placement& p = f.p;
  engine e(c, engine_options{}.with_transfers(testing::planned()).with_custom_backend(
                  std::make_shared<dc::actor_backend>(4, dc::device_options{})));
  const auto ref = execute_reference(g, 3);
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(3).keep_all());
    CHECK(r.planned_tensors == 1);
    for (op_index i = 0; i < g.size(); ++i) CHECK(max_rel_diff(r.outputs[i], ref[i]) <= 1e-4);
    CHECK(e.bytes_held() == 0);
  }
}
