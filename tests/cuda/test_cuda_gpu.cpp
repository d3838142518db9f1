// GPU cases of the CUDA backend: numerics against the CPU backend on every workload generator
// (f32 and bf16), every op kind on odd shapes, completions off the caller's thread, stream
// overlap, virtual devices sharing one GPU, copies, chunked store-and-forward, the actor-facing
// executor and NCCL send/recv. Each case reports "skipped: no GPU (reason)" and returns when
// cudaGetDeviceCount finds no usable GPU (error 35 on the build machines).
#include <doppler/cuda/cuda_backend.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include "gpu_test.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace doppler;
namespace dc = doppler::cuda;
using doppler::testing::have_gpu;

namespace {

/// Every op of g on the GPU against the CPU reference; returns the worst relative error.
double worst_error(const graph& g, std::uint64_t seed, std::string* worst_op) {
  const std::vector<tensor> cpu = execute_reference(g, seed);
  const std::vector<tensor> gpu = dc::execute_reference_cuda(g, seed);
  REQUIRE(gpu.size() == cpu.size());
  double worst = 0;
  for (op_index i = 0; i < g.size(); ++i) {
    REQUIRE(all_finite(gpu[i]));
    const double e = max_rel_diff(gpu[i], cpu[i]);
    if (e > worst) {
      worst = e;
      *worst_op = g[i].id + " (" + std::string(to_string(g[i].kind)) + ")";
    }
  }
  return worst;
}

/// A graph with every op kind on odd shapes (long softmax rows, batched B, rank-4 transpose).
graph every_kind_graph() {
  graph_builder b("every-kind");
  b.input("x", {3, 37, 130});
  b.input("w", {130, 33});
  b.input("wb", {3, 130, 33});
  b.input("g", {130});
  b.input("row", {130});
  b.input("long", {5, 3000});
  b.matmul("mm", "x", "w");
  b.matmul("bmm", "x", "wb");
  b.binary(op_kind::add, "add", "x", "row");
  b.binary(op_kind::mul, "mul", "x", "x");
  b.unary(op_kind::silu, "silu", "add");
  b.unary(op_kind::gelu, "gelu", "mul");
  b.unary(op_kind::exp, "exp", "silu");
  b.scale("scale", "gelu", 0.125);
  b.unary(op_kind::softmax, "sm", "scale");
  b.unary(op_kind::softmax, "sm_long", "long");
  b.binary(op_kind::rmsnorm, "rms", "x", "g");
  b.unary(op_kind::rope, "rope", "x");
  b.input("x4", {2, 3, 4, 5});
  b.transpose("t4", "x4", {2, 0, 3, 1});
  b.transpose("t2", "mm", {0, 2, 1});
  b.concat("cat", {"mm", "bmm", "mm"}, -1);
  b.slice("sl", "cat", 2, 5, 40);
  b.reduce_sum("sum", {"mm", "bmm", "mm"});
  op_spec syn;
  syn.id = "syn";
  syn.kind = op_kind::synthetic;
  syn.inputs = {"sum"};
  syn.shape = {1000};
  syn.flops = 1e6;
  syn.bytes = 4000;  // a synthetic op gives its bytes (FORMATS.md), its shape's 1000 floats
  b.add(syn);
  return std::move(b).build();
}

/// Waits for n completion callbacks.
struct latch {
  std::mutex mu;
  std::condition_variable cv;
  int left;
  explicit latch(int n) : left(n) {}
  void count_down() {
    std::lock_guard l(mu);
    if (--left == 0) cv.notify_all();
  }
  void wait() {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return left == 0; });
  }
};

}  // namespace

TEST_CASE("the GPU cases' test graph is valid and runs on the CPU backend (no GPU needed)") {
  const graph g = every_kind_graph();
  std::vector<bool> kinds(op_kind_count, false);
  for (const op& o : g.ops()) kinds[static_cast<std::size_t>(o.kind)] = true;
  CHECK(std::all_of(kinds.begin(), kinds.end(), [](bool k) { return k; }));
  const auto out = execute_reference(g, 11);
  for (const tensor& t : out) CHECK(all_finite(t));
}

TEST_CASE("every op kind on odd shapes matches the CPU backend (f32, 1e-4 relative)") {
  if (!have_gpu()) return;
  const graph g = every_kind_graph();
  std::string op;
  const double e = worst_error(g, 11, &op);
  MESSAGE("worst relative error " << e << " at " << op);
  CHECK(e <= 1e-4);
  // Inputs and synthetic outputs follow the CPU fill rule bit for bit.
  const auto cpu = execute_reference(g, 11);
  const auto gpu = dc::execute_reference_cuda(g, 11);
  CHECK(bitwise_equal(gpu[*g.find("x")], cpu[*g.find("x")]));
  CHECK(bitwise_equal(gpu[*g.find("syn")], cpu[*g.find("syn")]));
}

TEST_CASE("every workload generator matches the CPU backend: f32 within 1e-4, bf16 within 2e-2") {
  if (!have_gpu()) return;
  for (const std::string& name : workload_names()) {
    for (dtype t : {dtype::f32, dtype::bf16}) {
      workload_params p;
      p.type = t;
      const graph g = make_workload(name, p);
      std::string op;
      const double e = worst_error(g, 5, &op);
      const double tol = t == dtype::f32 ? 1e-4 : 2e-2;
      MESSAGE(name << " " << to_string(t) << ": worst relative error " << e << " at " << op);
      CHECK(e <= tol);
    }
  }
}

TEST_CASE("launch reports completion on another thread with event-measured times") {
  if (!have_gpu()) return;
  dc::cuda_device dev(0, dc::device_options{});
  CHECK(dev.streams() == 4);
  const graph g = every_kind_graph();
  std::vector<dc::device_tensor> out(g.size());
  std::vector<const dc::device_tensor*> args;
  std::mutex mu;
  std::vector<dc::completion> seen;
  std::vector<std::thread::id> threads;
  latch all(static_cast<int>(g.size()));
  for (op_index i : g.topo_order()) {
    args.clear();
    for (op_index p : g[i].inputs) args.push_back(&out[p]);
    // Single stream: each op's inputs were enqueued before it on the same stream.
    out[i] = dev.launch(g, i, args, 11, 0, [&](const dc::completion& c) {
      {
        std::lock_guard l(mu);
        seen.push_back(c);
        threads.push_back(std::this_thread::get_id());
      }
      all.count_down();
    });
  }
  all.wait();
  REQUIRE(seen.size() == g.size());
  for (std::size_t k = 0; k < seen.size(); ++k) {
    CHECK(seen[k].error.empty());
    CHECK(seen[k].gpu_ms >= 0.0);
    CHECK(seen[k].op == g.topo_order()[k]);  // launch order on one stream
    CHECK(threads[k] != std::this_thread::get_id());
  }
  const auto cpu = execute_reference(g, 11);
  for (op_index i = 0; i < g.size(); ++i) CHECK(max_rel_diff(dev.download(out[i]), cpu[i]) <= 1e-4);
}

TEST_CASE("four streams overlap independent kernels") {
  if (!have_gpu()) return;
  dc::cuda_device dev(0, dc::device_options{});
  // Synthetic ops are one 256-thread block each, so four of them fit side by side on any GPU.
  graph_builder b("overlap");
  for (int k = 0; k < 4; ++k) {
    op_spec s;
    s.id = "s" + std::to_string(k);
    s.kind = op_kind::synthetic;
    s.shape = {256};
    s.bytes = 1024;
    s.flops = 512.0 * 4e6;  // 4e6 dependent rounds
    b.add(s);
  }
  const graph g = std::move(b).build();
  auto run = [&](bool spread) {
    std::atomic<double> kernel_ms{0};
    latch all(4);
    std::vector<dc::device_tensor> keep;
    const auto t0 = std::chrono::steady_clock::now();
    for (op_index i = 0; i < 4; ++i)
      keep.push_back(dev.launch(g, i, {}, 1, spread ? int(i) : 0, [&](const dc::completion& c) {
        double cur = kernel_ms.load();
        while (!kernel_ms.compare_exchange_weak(cur, cur + c.gpu_ms)) {
        }
        all.count_down();
      }));
    all.wait();
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::pair{wall, kernel_ms.load()};
  };
  run(true);  // warm-up (module load, pool growth)
  const auto [serial_wall, serial_sum] = run(false);
  const auto [wall, sum] = run(true);
  MESSAGE("one stream: " << serial_wall << " ms wall; four streams: " << wall << " ms wall, " << sum
                         << " ms summed kernel time");
  CHECK(wall < 0.6 * serial_wall);
  CHECK(sum > 1.5 * wall);  // kernels ran concurrently
}

TEST_CASE("virtual devices on one GPU: separate pools, copies and chunked store-and-forward") {
  if (!have_gpu()) return;
  std::vector<std::unique_ptr<dc::cuda_device>> devs;
  dc::device_options o;
  o.streams = 2;
  for (int d = 0; d < 4; ++d) devs.push_back(std::make_unique<dc::cuda_device>(d, o));
  tensor h({1000, 37});
  fill_uniform(h, 3);
  const dc::device_tensor src = devs[0]->upload(h);
  CHECK(src.device() == 0);
  CHECK(devs[0]->pool_reserved_bytes() >= h.numel() * sizeof(float));
  latch done(1);
  const dc::device_tensor c1 = devs[1]->copy_from(src, 1, [&](const dc::completion&) { done.count_down(); });
  done.wait();
  CHECK(c1.device() == 1);
  CHECK(bitwise_equal(devs[1]->download(c1), h));
  std::vector<dc::cuda_device*> path{devs[0].get(), devs[1].get(), devs[2].get(), devs[3].get()};
  for (std::size_t chunk : {std::size_t(0), std::size_t(4096), std::size_t(1000), std::size_t(1) << 30}) {
    const dc::device_tensor end = dc::cuda_device::forward_chunked(src, path, chunk);
    CHECK(end.device() == 3);
    CHECK(bitwise_equal(devs[3]->download(end), h));
  }
  // An op on a device refuses an input resident elsewhere.
  const graph g = make_workload("ffnn", workload_params{});
  op_index first_consumer = 0;
  for (op_index i = 0; i < g.size(); ++i)
    if (!g[i].inputs.empty()) {
      first_consumer = i;
      break;
    }
  std::vector<dc::device_tensor> ins;
  std::vector<const dc::device_tensor*> args;
  for (op_index p : g[first_consumer].inputs) ins.push_back(devs[0]->allocate(output_shape(g, p)));
  for (auto& t : ins) args.push_back(&t);
  CHECK_THROWS_AS(devs[1]->launch(g, first_consumer, args, 0), error);
  devs[0]->synchronize();
}

TEST_CASE("cuda_executor (the actor backend's path) equals execute_op, from several threads") {
  if (!have_gpu()) return;
  dc::cuda_executor ex(4, dc::device_options{});
  const graph g = make_workload("llama-block", workload_params{});
  const std::vector<tensor> ref = execute_reference(g, 2);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<const tensor*> args;
      for (op_index i = static_cast<op_index>(t); i < g.size(); i += 4) {
        args.clear();
        for (op_index p : g[i].inputs) args.push_back(&ref[p]);
        const tensor out = ex.execute_on(t, g, i, args, 2);
        if (max_rel_diff(out, ref[i]) > 1e-4) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("cuda_executor's resident path: launch_on, copy_to, chunk ranges device to device and from the host") {
  if (!have_gpu()) return;
  dc::cuda_executor ex(3, dc::device_options{});
  tensor h({333, 17});
  fill_uniform(h, 5);
  const dc::device_tensor on0 = ex.upload_to(0, h);
  const dc::device_tensor on1 = ex.copy_to(1, on0);
  CHECK(on1.device() == 1);
  CHECK(bitwise_equal(ex.download(on1), h));
  // a chunked relay 0 → 2 in uneven ranges, and a host → device relay into device 1
  const dc::device_tensor into2 = ex.allocate_on(2, h.shape());
  const dc::device_tensor into1 = ex.allocate_on(1, h.shape());
  const std::size_t n = h.numel();
  for (std::size_t k = 0; k < 5; ++k) {
    ex.copy_range(2, on0, into2, n * k / 5, n * (k + 1) / 5);
    ex.upload_range(1, h, into1, n * k / 5, n * (k + 1) / 5);
  }
  CHECK(bitwise_equal(ex.download(into2), h));
  CHECK(bitwise_equal(ex.download(into1), h));
  CHECK_THROWS_AS(ex.copy_range(2, on0, into2, 0, n + 1), error);  // past the end
  CHECK_THROWS_AS(ex.copy_range(2, on0, into1, 0, 1), error);      // destination on another device
  // launch_on: an op with its inputs resident equals the CPU kernel
  const graph g = make_workload("ffnn", workload_params{});
  const std::vector<tensor> ref = execute_reference(g, 4);
  std::vector<dc::device_tensor> out(g.size());
  for (op_index i : g.topo_order()) {
    std::vector<const dc::device_tensor*> args;
    for (op_index p : g[i].inputs) args.push_back(&out[p]);
    out[i] = ex.launch_on(0, g, i, args, 4);
  }
  double worst = 0;
  for (op_index i = 0; i < g.size(); ++i) worst = std::max(worst, max_rel_diff(ex.download(out[i]), ref[i]));
  CHECK(worst <= 1e-4);
}

TEST_CASE("NCCL send/recv between two GPUs") {
  if (!have_gpu()) return;
  if (dc::probe_gpus().devices < 2) {
    MESSAGE("skipped: NCCL needs two GPUs, this machine has " << dc::probe_gpus().devices);
    return;
  }
  dc::cuda_device a(0, dc::device_options{0, 1}), b(1, dc::device_options{1, 1});
  const auto id = dc::nccl_comm::new_unique_id();
  tensor h({4096});
  fill_uniform(h, 8);
  const dc::device_tensor src = a.upload(h);
  dc::device_tensor dst = b.allocate(h.shape());
  std::unique_ptr<dc::nccl_comm> ca, cb;
  std::thread ta([&] { ca = std::make_unique<dc::nccl_comm>(id, 2, 0, a); });
  std::thread tb([&] { cb = std::make_unique<dc::nccl_comm>(id, 2, 1, b); });
  ta.join();
  tb.join();
  // One thread per rank, as one device actor per GPU would call it (no NCCL group calls).
  latch done(2);
  std::thread s([&] { ca->send(src, 1, 0, [&](const dc::completion&) { done.count_down(); }); });
  std::thread r([&] { cb->recv(dst, 0, 0, [&](const dc::completion&) { done.count_down(); }); });
  s.join();
  r.join();
  done.wait();
  CHECK(bitwise_equal(b.download(dst), h));
  // Each rank's communicator ends on its own thread too: recent NCCLs finalize inside
  // ncclCommDestroy, which can wait for the other ranks of the node.
  std::thread da([&] { ca.reset(); });
  std::thread db([&] { cb.reset(); });
  da.join();
  db.join();
}
