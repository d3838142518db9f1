// Resident backends (backend.hpp): outputs stay in "device memory" between ops; device actors run
// consumers on it and copy it device to device; host copies only for the run's outputs, other
// processes and chunked planned transfers. The fake GPU below keeps its memory on the host, tagged
// with the device that owns it, and checks every input it is handed against the device running the
// op — the same rules the CUDA backend's resident mode relies on, testable without a GPU.
#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include "../fan_out.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

using namespace doppler;
using actors::device_memory;
using actors::tensor_ref;

namespace {

/// What the fake GPU saw.
struct gpu_counters {
  std::atomic<int> kernels{0}, copies{0}, uploads{0}, to_host{0}, chunks{0};
  std::mutex m;
  std::vector<std::string> violations;  // inputs on the wrong device, copies from the wrong device
  void violation(std::string what) {
    std::lock_guard lock(m);
    violations.push_back(std::move(what));
  }
};

/// "Device memory" of the fake GPU: a host tensor that belongs to device `dev`.
class tagged_memory final : public device_memory {
 public:
  tagged_memory(tensor t, device_index dev, gpu_counters* n, bool lost = false)
      : t_(std::move(t)), dev_(dev), n_(n), lost_(lost) {}
  std::uint64_t bytes() const noexcept override { return t_.numel() * sizeof(float); }
  shape_t shape() const override { return t_.shape(); }
  tensor to_host() const override {
    ++n_->to_host;
    if (lost_) throw error(errc::internal, "fake-gpu: device memory lost");
    return t_;
  }
  const tensor& value() const noexcept { return t_; }
  /// The values, for a chunked transfer filling this copy (device memory is written through handles).
  tensor& writable() const noexcept { return t_; }
  device_index device() const noexcept { return dev_; }

 private:
  mutable tensor t_;
  device_index dev_;
  gpu_counters* n_;
  bool lost_;  // to_host fails (a GPU that failed after the kernel)
};

class fake_gpu final : public actors::backend {
 public:
  /// Ops named `fail_op` throw; the output of `lose_op` cannot be copied to the host.
  explicit fake_gpu(std::shared_ptr<gpu_counters> n, std::string fail_op = {}, std::string lose_op = {})
      : n_(std::move(n)), fail_(std::move(fail_op)), lose_(std::move(lose_op)) {}
  std::string_view name() const noexcept override { return "fake-gpu"; }
  bool resident() const noexcept override { return true; }
  tensor execute(const graph&, op_index, std::span<const tensor* const>, std::uint64_t) override {
    throw error(errc::internal, "fake-gpu: the host path must not be used by a resident backend");
  }
  tensor_ref execute_held(device_index d, const graph& g, op_index i, std::span<const tensor_ref* const> inputs,
                          std::uint64_t seed) override {
    if (g[i].id == fail_) throw error(errc::internal, "fake-gpu: kernel fault");
    std::vector<const tensor*> args;
    for (const tensor_ref* in : inputs) {
      REQUIRE(in != nullptr);
      if (const auto* m = dynamic_cast<const tagged_memory*>(in->mem.get())) {
        if (m->device() != d)
          n_->violation("op " + g[i].id + " on device " + std::to_string(d) + " got an input of device " +
                        std::to_string(m->device()));
        args.push_back(&m->value());
      } else {
        REQUIRE(in->ptr);
        ++n_->uploads;  // a host tensor (another process, or a chunked transfer)
        args.push_back(in->ptr.get());
      }
    }
    ++n_->kernels;
    return tensor_ref{nullptr, std::make_shared<const tagged_memory>(execute_op(g, i, args, seed), d, n_.get(),
                                                                     g[i].id == lose_)};
  }
  tensor_ref copy_held(device_index src, device_index dst, const tensor_ref& v) override {
    ++n_->copies;
    if (const auto* m = dynamic_cast<const tagged_memory*>(v.mem.get())) {
      if (m->device() != src)
        n_->violation("copy from device " + std::to_string(src) + " of memory on device " + std::to_string(m->device()));
      return held(m->value(), dst);
    }
    REQUIRE(v.ptr);
    ++n_->uploads;
    return held(*v.ptr, dst);
  }
  tensor_ref allocate_held(device_index d, const shape_t& shape) override {
    tensor t(shape);
    std::fill(t.data(), t.data() + t.numel(), std::nanf(""));  // "uninitialized": a missed chunk shows
    return held(std::move(t), d);
  }
  void copy_range_held(device_index src, device_index dst, const tensor_ref& from, const tensor_ref& into,
                       std::size_t first, std::size_t last) override {
    ++n_->chunks;
    const auto* to = dynamic_cast<const tagged_memory*>(into.mem.get());
    REQUIRE(to != nullptr);
    if (to->device() != dst) n_->violation("chunk into memory of device " + std::to_string(to->device()));
    const tensor* values = from.ptr.get();
    if (const auto* m = dynamic_cast<const tagged_memory*>(from.mem.get())) {
      if (m->device() != src) n_->violation("chunk from device " + std::to_string(src) + " of memory on device " +
                                            std::to_string(m->device()));
      values = &m->value();
    } else {
      ++n_->uploads;
    }
    REQUIRE(values != nullptr);
    REQUIRE(last <= values->numel());
    std::copy(values->data() + first, values->data() + last, to->writable().data() + first);
  }

 private:
  tensor_ref held(tensor t, device_index d) { return tensor_ref{nullptr, std::make_shared<const tagged_memory>(std::move(t), d, n_.get())}; }
  std::shared_ptr<gpu_counters> n_;
  std::string fail_, lose_;
};

graph small_block() {
  workload_params p;
  p.dim = 32;
  p.heads = 4;
  p.ffn = 48;
  p.seq = 8;
  return make_workload("llama-block", p);
}

placement round_robin(const graph& g, const cluster& c) {
  return make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
}

std::size_t exits(const graph& g) {
  std::size_t n = 0;
  for (op_index i = 0; i < g.size(); ++i) n += g.succs(i).empty() ? 1 : 0;
  return n;
}

/// (producer, consumer device ≠ producer's) pairs: the copies a run makes.
std::size_t remote_pairs(const graph& g, const placement& p) {
  std::size_t n = 0;
  for (op_index i = 0; i < g.size(); ++i) {
    std::vector<device_index> seen;
    for (op_index s : g.succs(i))
      if (p.device[s] != p.device[i] && std::find(seen.begin(), seen.end(), p.device[s]) == seen.end()) {
        seen.push_back(p.device[s]);
        ++n;
      }
  }
  return n;
}

}  // namespace

TEST_CASE("resident backend, wc and bsp: device-to-device copies only, one host copy per output returned") {
  cluster c = make_preset("cpu:4");
  auto n = std::make_shared<gpu_counters>();
  engine e(c, engine_options{}.with_streams(2).with_custom_backend(std::make_shared<fake_gpu>(n)));
  graph g = small_block();
  placement p = round_robin(g, c);
  const auto ref = execute_reference(g, 5);
  REQUIRE(remote_pairs(g, p) > 0);
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    CAPTURE(mode == exec_mode::wc ? "wc" : "bsp");
    n->kernels = n->copies = n->uploads = n->to_host = 0;
    auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(5));
    for (op_index i = 0; i < g.size(); ++i)
      if (g.succs(i).empty()) CHECK(bitwise_equal(r.outputs[i], ref[i]));
    CHECK(n->kernels == static_cast<int>(g.size()));
    CHECK(n->copies == static_cast<int>(remote_pairs(g, p)));
    CHECK(r.transfers.back() == remote_pairs(g, p));
    CHECK(n->uploads == 0);                              // nothing went through host memory...
    CHECK(n->to_host == static_cast<int>(exits(g)));     // ...but the outputs the run returns
    CHECK(e.bytes_held() == 0);
  }
  std::lock_guard lock(n->m);
  CHECK(n->violations.empty());
  for (const auto& v : n->violations) MESSAGE(v);
}

TEST_CASE("resident backend, keep all: every op's output comes back in host memory") {
  cluster c = make_preset("cpu:3");
  auto n = std::make_shared<gpu_counters>();
  engine e(c, engine_options{}.with_custom_backend(std::make_shared<fake_gpu>(n)));
  graph g = small_block();
  auto r = e.run(g, round_robin(g, c), run_options{}.with_seed(9).keep_all());
  const auto ref = execute_reference(g, 9);
  REQUIRE(r.outputs.size() == g.size());
  for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(r.outputs[i], ref[i]));
  CHECK(n->to_host == static_cast<int>(g.size()));
}

/// A resident backend that overrides only the host path: the defaults of `execute_held` and
/// `copy_held` (backend.hpp) are what run it — inputs in another backend's device memory are copied to
/// the host first, outputs and copies land in host memory.
class host_fallback final : public actors::backend {
 public:
  std::string_view name() const noexcept override { return "host-fallback"; }
  bool resident() const noexcept override { return true; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> inputs, std::uint64_t seed) override {
    for (const tensor* in : inputs) REQUIRE(in != nullptr);  // every input reached the kernel in host memory
    ++kernels;
    return execute_op(g, i, inputs, seed);
  }
  std::atomic<int> kernels{0};
};

TEST_CASE("the default execute_held and copy_held: device-memory inputs staged through the host, outputs in host memory") {
  graph g = small_block();
  const auto ref = execute_reference(g, 3);
  host_fallback b;
  gpu_counters n;
  // An op with inputs, fed the reference values of its producers: one in (fake) device memory, the
  // others in host memory.
  op_index i = 0;
  while (g[i].inputs.size() < 2) ++i;
  std::vector<tensor_ref> args;
  for (std::size_t k = 0; k < g[i].inputs.size(); ++k) {
    const tensor& v = ref[g[i].inputs[k]];
    if (k == 0)
      args.push_back(tensor_ref{nullptr, std::make_shared<const tagged_memory>(v, 1, &n)});
    else
      args.push_back(tensor_ref{std::make_shared<const tensor>(v), nullptr});
  }
  std::vector<const tensor_ref*> refs;
  for (auto& a : args) refs.push_back(&a);
  tensor_ref out = b.execute_held(1, g, i, refs, 3);
  REQUIRE(out.ptr);
  CHECK(!out.mem);
  CHECK(bitwise_equal(*out.ptr, ref[i]));
  CHECK(n.to_host == 1);  // the device-memory input, once
  // copy_held: a new host tensor with the same values, from host or device memory.
  tensor_ref from_mem{nullptr, std::make_shared<const tagged_memory>(ref[i], 0, &n)};
  tensor_ref c1 = b.copy_held(0, 2, from_mem);
  REQUIRE(c1.ptr);
  CHECK(bitwise_equal(*c1.ptr, ref[i]));
  CHECK(n.to_host == 2);
  tensor_ref c2 = b.copy_held(0, 2, out);
  REQUIRE(c2.ptr);
  CHECK(c2.ptr != out.ptr);  // a copy, not a shared buffer
  CHECK(bitwise_equal(*c2.ptr, ref[i]));
}

TEST_CASE("a resident backend on the default execute_held / copy_held runs a block through the engine") {
  cluster c = make_preset("cpu:3");
  auto b = std::make_shared<host_fallback>();
  engine e(c, engine_options{}.with_streams(2).with_custom_backend(b));
  graph g = small_block();
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    CAPTURE(mode == exec_mode::wc ? "wc" : "bsp");
    b->kernels = 0;
    auto r = e.run(g, round_robin(g, c), run_options{}.with_mode(mode).with_seed(6).keep_all());
    const auto ref = execute_reference(g, 6);
    REQUIRE(r.outputs.size() == g.size());
    for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(r.outputs[i], ref[i]));
    CHECK(b->kernels == static_cast<int>(g.size()));
    CHECK(e.bytes_held() == 0);
  }
}

TEST_CASE("resident backend behind a straggler: still resident, the slow device still computes right") {
  cluster c = make_preset("cpu:2");
  auto n = std::make_shared<gpu_counters>();
  engine e(c, engine_options{}.with_custom_backend(std::make_shared<fake_gpu>(n)).with_straggler(1, 2.0));
  graph g = small_block();
  auto r = e.run(g, round_robin(g, c), run_options{}.with_seed(4));
  const auto ref = execute_reference(g, 4);
  for (op_index i = 0; i < g.size(); ++i)
    if (g.succs(i).empty()) CHECK(bitwise_equal(r.outputs[i], ref[i]));
  CHECK(n->kernels == static_cast<int>(g.size()));
  CHECK(n->uploads == 0);
}

TEST_CASE("resident backend: a kernel fault fails the run naming the op and its device") {
  cluster c = make_preset("cpu:2");
  graph g = small_block();
  placement p = round_robin(g, c);
  const op_index victim = g.size() / 2;
  auto n = std::make_shared<gpu_counters>();
  engine e(c, engine_options{}.with_custom_backend(std::make_shared<fake_gpu>(n, g[victim].id)));
  try {
    e.run(g, p);
    FAIL("the run should fail");
  } catch (const run_failure& f) {
    const std::string what = f.what();
    CHECK(what.find("'" + g[victim].id + "'") != std::string::npos);
    CHECK(what.find("kernel fault") != std::string::npos);
    CHECK(what.find("cpu" + std::to_string(p.device[victim])) != std::string::npos);
  }
  CHECK(e.bytes_held() == 0);
}

TEST_CASE("resident backend: an output that cannot be copied back fails the run naming the op") {
  cluster c = make_preset("cpu:2");
  graph g = small_block();
  op_index exit = 0;
  for (op_index i = 0; i < g.size(); ++i)
    if (g.succs(i).empty()) exit = i;
  auto n = std::make_shared<gpu_counters>();
  engine e(c, engine_options{}.with_custom_backend(std::make_shared<fake_gpu>(n, "", g[exit].id)));
  CHECK_THROWS_WITH_AS(e.run(g, round_robin(g, c)), doctest::Contains("could not be copied to the host"), run_failure);
  try {
    e.run(g, round_robin(g, c));
  } catch (const run_failure& f) {
    CHECK(std::string(f.what()).find("'" + g[exit].id + "'") != std::string::npos);
    CHECK(std::string(f.what()).find("device memory lost") != std::string::npos);
  }
  CHECK(e.bytes_held() == 0);
}

TEST_CASE("resident backend with planned (chunked) transfers: chunks relayed device to device, outputs intact") {
  // cpu0 - cpu1 - cpu2 - cpu3: x on cpu0 is consumed on the three others, relayed chunk by chunk.
  cluster c = testing::cpu_line();
  testing::fan_out f;
  const graph& g = f.g;
  const placement& p = f.p;
  auto n = std::make_shared<gpu_counters>();
  engine e(c, engine_options{}.with_transfers(testing::planned()).with_custom_backend(std::make_shared<fake_gpu>(n)));
  const auto ref = execute_reference(g, 3);
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    CAPTURE(mode == exec_mode::wc ? "wc" : "bsp");
    n->uploads = n->copies = n->chunks = n->to_host = 0;
    auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(3).keep_all());
    REQUIRE(r.planned_tensors == 1);
    for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(r.outputs[i], ref[i]));
    CHECK(n->uploads == 0);
    CHECK(n->copies == 3);    // b, c and d back to cpu0, directly
    CHECK(n->chunks >= 3 * 4);  // x in 4 chunks to cpu1, relayed on to cpu2 and cpu3
    CHECK(n->to_host == static_cast<int>(g.size()));  // only the outputs returned
    CHECK(e.bytes_held() == 0);
  }
  std::lock_guard lock(n->m);
  CHECK(n->violations.empty());
}

TEST_CASE("a resident backend without chunked copies: a planned transfer fails the run with a clear error") {
  class no_chunks final : public actors::backend {
   public:
    explicit no_chunks(std::shared_ptr<gpu_counters> n) : inner_(std::move(n)) {}
    std::string_view name() const noexcept override { return "no-chunks"; }
    bool resident() const noexcept override { return true; }
    tensor execute(const graph& g, op_index i, std::span<const tensor* const> in, std::uint64_t seed) override {
      return inner_.execute(g, i, in, seed);
    }
    tensor_ref execute_held(device_index d, const graph& g, op_index i, std::span<const tensor_ref* const> in,
                            std::uint64_t seed) override {
      return inner_.execute_held(d, g, i, in, seed);
    }
    tensor_ref copy_held(device_index s, device_index d, const tensor_ref& v) override { return inner_.copy_held(s, d, v); }

   private:
    fake_gpu inner_;
  };
  cluster c = testing::cpu_line();
  testing::fan_out f;
  engine e(c, engine_options{}.with_transfers(testing::planned()).with_custom_backend(
                  std::make_shared<no_chunks>(std::make_shared<gpu_counters>())));
  CHECK_THROWS_WITH_AS(e.run(f.g, f.p), doctest::Contains("does not implement allocate_held"), run_failure);
  CHECK(e.bytes_held() == 0);
}

TEST_CASE("resident devices in two processes: tensors cross as host copies, outputs equal the reference") {
  cluster c = make_preset("cpu:4");
  auto here = std::make_shared<gpu_counters>(), there = std::make_shared<gpu_counters>();
  worker w(c, {2, 3}, engine_options{}.with_custom_backend(std::make_shared<fake_gpu>(there)));
  engine e(c, engine_options{}.with_network().with_custom_backend(std::make_shared<fake_gpu>(here)));
  REQUIRE(e.attach_worker("127.0.0.1", w.port()) == std::vector<device_index>{2, 3});
  graph g = small_block();
  placement p = round_robin(g, c);
  auto r = e.run(g, p, run_options{}.with_seed(6).keep_all());
  const auto ref = execute_reference(g, 6);
  for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(r.outputs[i], ref[i]));
  CHECK(here->kernels + there->kernels == static_cast<int>(g.size()));
  CHECK(there->kernels > 0);
  CHECK(there->uploads > 0);  // what devices 0 and 1 sent arrived as host tensors...
  CHECK(here->uploads > 0);   // ...and what devices 2 and 3 sent back
  CHECK(here->to_host > 0);   // device memory serialized as its host copy
  std::lock_guard l1(here->m), l2(there->m);
  CHECK(here->violations.empty());
  CHECK(there->violations.empty());
}
