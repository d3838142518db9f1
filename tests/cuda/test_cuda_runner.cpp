// The scheduling core of the GPU benchmark, `cuda::resident_runner`, checked on the CPU with a fake
// asynchronous device (a worker thread per device running the CPU kernels, completions from that
// thread), so WC and BSP are verified without a GPU: outputs bit-identical to the reference, no op
// launched before its inputs were on its device, one copy per (producer, remote consumer device).
#include <doppler/cuda/resident_runner.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

using namespace doppler;
namespace dc = doppler::cuda;

namespace {

/// A tensor that becomes ready when its producing job ran.
struct fake_tensor {
  tensor t;
  std::atomic<bool> ready{false};
  int device = -1;
};

/// One device: a worker thread runs jobs in order (like one CUDA stream) and reports completions.
class fake_device {
 public:
  using tensor_type = std::shared_ptr<fake_tensor>;

  explicit fake_device(int id, std::atomic<int>& violations) : id_(id), violations_(violations) {
    worker_ = std::thread([this] { loop(); });
  }
  ~fake_device() {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  int streams() const { return 2; }

  tensor_type launch(const graph& g, op_index i, std::span<const tensor_type* const> in, std::uint64_t seed, int stream,
                     dc::completion_fn done) {
    std::vector<tensor_type> ins;
    for (const tensor_type* x : in) {
      // The runner must only launch once every input is on this device and complete.
      if (!*x || !(*x)->ready.load() || (*x)->device != id_) ++violations_;
      ins.push_back(*x);
    }
    auto out = std::make_shared<fake_tensor>();
    out->device = id_;
    post([&g, i, seed, stream, ins, out, done] {
      dc::completion c{i, stream, 0.0, {}};
      try {
        std::vector<const tensor*> args;
        for (const tensor_type& x : ins) args.push_back(x ? &x->t : nullptr);
        out->t = execute_op(g, i, args, seed);
        out->ready = true;
      } catch (const std::exception& e) {
        c.error = e.what();
      }
      done(c);
    });
    return out;
  }

  tensor_type copy_from(const tensor_type& src, int stream, dc::completion_fn done, op_index op) {
    if (!src || !src->ready.load()) ++violations_;
    auto out = std::make_shared<fake_tensor>();
    out->device = id_;
    post([src, out, done, stream, op] {
      out->t = src->t;
      out->ready = true;
      done(dc::completion{op, stream, 0.0, {}});
    });
    return out;
  }

 private:
  void post(std::function<void()> job) {
    {
      std::lock_guard l(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  int id_;
  std::atomic<int>& violations_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread worker_;
};

/// Copies a correct run makes: one per (producer, device of a consumer other than the producer's).
std::size_t expected_copies(const graph& g, const placement& p, std::size_t devices) {
  std::size_t n = 0;
  for (op_index i = 0; i < g.size(); ++i) {
    std::vector<std::size_t> seen;
    for (op_index s : g.succs(i)) {
      const std::size_t d = p.device[s] % devices;
      if (d != p.device[i] % devices && std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
    }
    n += seen.size();
  }
  return n;
}

}  // namespace

TEST_CASE("resident_runner: WC and BSP on a fake async device equal the reference, inputs always resident") {
  constexpr int devices = 4;
  const cluster c = make_preset("cpu:4");
  for (const std::string& name : {std::string("llama-block"), std::string("moe-layer"), std::string("chainmm")}) {
    workload_params wp;
    wp.dim = 64;
    wp.heads = 4;
    wp.ffn = 96;
    wp.seq = 16;
    const graph g = make_workload(name, wp);
    const std::vector<tensor> ref = execute_reference(g, 3);
    for (const std::string& placer_name : {std::string("cp"), std::string("round-robin")}) {
      const placement p = make_placer(placer_name)->place(g, c, cost_model{}, placer_options{});
      for (const bool wc : {true, false}) {
        CAPTURE(name);
        CAPTURE(placer_name);
        CAPTURE(wc);
        std::atomic<int> violations{0};
        std::vector<std::unique_ptr<fake_device>> owned;
        std::vector<fake_device*> devs;
        for (int d = 0; d < devices; ++d) {
          owned.push_back(std::make_unique<fake_device>(d, violations));
          devs.push_back(owned.back().get());
        }
        dc::resident_runner<fake_device> run(g, p, devs, 3);
        const double s = wc ? run.wc() : run.bsp();
        CHECK(s >= 0.0);
        CHECK(violations.load() == 0);
        CHECK(run.copies() == expected_copies(g, p, devices));
        bool same = true;
        for (op_index i = 0; i < g.size(); ++i) same = same && bitwise_equal(run.output(i)->t, ref[i]);
        CHECK(same);
      }
    }
  }
}

TEST_CASE("resident_runner: a failing kernel ends the run with an error naming the op, after in-flight work") {
  std::atomic<int> violations{0};
  graph_builder b("bad");
  b.input("x", {4, 4});
  b.input("w", {64, 64});
  b.unary(op_kind::silu, "y", "w");
  const graph g = std::move(b).build();
  placement p;
  p.device = {0, 0, 0};
  // Op `x` fails at once (as a CUDA error in a completion would); `w` is still in flight on the
  // worker when the run throws, so the runner must wait for it before it goes.
  struct failing : fake_device {
    using fake_device::fake_device;
    tensor_type launch(const graph& gr, op_index i, std::span<const tensor_type* const> in, std::uint64_t seed,
                       int stream, dc::completion_fn done) {
      if (gr[i].id != "x") return fake_device::launch(gr, i, in, seed, stream, std::move(done));
      done(dc::completion{i, stream, 0.0, "kernel exploded"});
      return std::make_shared<fake_tensor>();
    }
  };
  failing f(0, violations);
  std::vector<failing*> devs{&f};
  for (int k = 0; k < 20; ++k) {
    dc::resident_runner<failing> run(g, p, devs, 0);
    CHECK_THROWS_WITH_AS(run.wc(), doctest::Contains("op `x`: kernel exploded"), error);
  }
  CHECK(violations.load() == 0);
}
