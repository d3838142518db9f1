// Several engines sharing the same `worker`s: a worker's device serves one run at a time, a later
// run waits its turn (engine_options::busy_wait) and probes instead of resending its plan, engines
// take turns, and a wait has a limit (docs/runtime.md, "Several engines on the same workers").
#include <doppler/actors/engine.hpp>
#include <doppler/runtime/error.hpp>

#include <doctest/doctest.h>

#include "remote_helpers.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

using namespace doppler;
using namespace remote_helpers;
using namespace std::chrono_literals;

namespace {

/// Two engines sharing one worker that serves device 1 of cpu:2 with `delay` kernels; device 0 is each
/// engine's own.
struct shared_worker {
  cluster c = make_preset("cpu:2");
  std::shared_ptr<slow_backend> slow;
  worker w;
  engine first, second;
  graph g = small_llama();
  placement p = round_robin(g, c);

  shared_worker(std::chrono::milliseconds delay, engine_options second_options)
      : slow(std::make_shared<slow_backend>(delay)),
        w(c, {1}, engine_options{}.with_custom_backend(slow)),
        first(c, engine_options{}.with_network()),
        second(c, second_options.with_network()) {
    first.attach_worker("127.0.0.1", w.port());
    second.attach_worker("127.0.0.1", w.port());
  }
};

}  // namespace

TEST_CASE("a worker serves one run at a time: with no busy wait a second engine is refused clearly") {
  shared_worker sw(20ms, engine_options{}.with_busy_wait(0ms));
  auto& [c, slow, w, first, second, g, p] = sw;
  auto run = std::async(std::launch::async, [&] { return first.run(g, p, run_options{}.with_seed(1).keep_all()); });
  wait_for_kernel(*slow);
  REQUIRE(run.wait_for(0s) == std::future_status::timeout);
  CHECK_THROWS_WITH_AS(second.run(g, p), doctest::Contains("device busy"), run_failure);
  check_equals_reference(g, run.get(), 1);  // the first run is undisturbed
  auto later = second.run(g, p, run_options{}.with_seed(2).keep_all());  // then free
  check_equals_reference(g, later, 2);
  CHECK(later.busy_tries == 0);
}

TEST_CASE("a second engine waits its turn on a busy worker and runs when the first run ends") {
  shared_worker sw(20ms, engine_options{});
  auto& [c, slow, w, first, second, g, p] = sw;
  auto run = std::async(std::launch::async, [&] { return first.run(g, p, run_options{}.with_seed(1).keep_all()); });
  wait_for_kernel(*slow);
  REQUIRE(run.wait_for(0s) == std::future_status::timeout);
  auto waited = second.run(g, p, run_options{}.with_seed(2).keep_all().with_repeat(2));
  check_equals_reference(g, run.get(), 1);  // the first run is undisturbed
  check_equals_reference(g, waited, 2);     // the second ran after it, both repeats
  CHECK(waited.runs.size() == 2);
  CHECK(waited.busy_tries >= 1);
  CHECK(waited.busy_waited > 0);
  // while it waited it probed the worker (a few bytes) instead of sending its plan again and again
  CHECK(waited.busy_probes >= 2);
  CHECK(waited.busy_tries <= 3);
}

TEST_CASE("an engine with many runs to do yields a worker to an engine waiting its turn between two of them") {
  shared_worker sw(2ms, engine_options{});
  auto& [c, slow, w, first, second, g, p] = sw;
  constexpr int many = 60;
  auto t0 = std::chrono::steady_clock::now();
  auto busy = std::async(std::launch::async, [&] { return first.run(g, p, run_options{}.with_seed(1).keep_all().with_repeat(many)); });
  wait_for_kernel(*slow);
  auto turn = second.run(g, p, run_options{}.with_seed(2).keep_all());
  auto waited_for = std::chrono::steady_clock::now() - t0;
  // Without turns the second engine got the worker only where its try fell into the gap between two
  // of the first engine's runs (or after all of them).
  CHECK(busy.wait_for(0s) == std::future_status::timeout);
  check_equals_reference(g, turn, 2);
  CHECK(turn.busy_tries >= 1);
  auto all = busy.get();
  auto total = std::chrono::steady_clock::now() - t0;
  check_equals_reference(g, all, 1);
  CHECK(all.runs.size() == static_cast<std::size_t>(many));
  MESSAGE("the waiting engine ran after " << std::chrono::duration<double>(waited_for).count() << " s of the busy one's "
          << std::chrono::duration<double>(total).count() << " s");
}

TEST_CASE("engines that start together on the same two workers all finish and a busy wait has a limit") {
  cluster c = make_preset("cpu:4");
  auto slow = std::make_shared<slow_backend>(2ms);
  worker a(c, {0, 1}, engine_options{}.with_custom_backend(slow));
  worker b(c, {2, 3}, engine_options{}.with_custom_backend(slow));
  graph g = small_llama();
  placement p = round_robin(g, c);
  constexpr int engines = 3;
  std::vector<std::unique_ptr<engine>> es;
  for (int k = 0; k < engines; ++k) {
    es.push_back(std::make_unique<engine>(c, engine_options{}.with_network()));
    es.back()->attach_worker("127.0.0.1", a.port());
    es.back()->attach_worker("127.0.0.1", b.port());
  }
  std::vector<std::future<run_result>> runs;
  for (int k = 0; k < engines; ++k)
    runs.push_back(std::async(std::launch::async, [&, k] {
      return es[static_cast<std::size_t>(k)]->run(g, p, run_options{}.with_seed(static_cast<std::uint64_t>(k)).keep_all().with_repeat(3));
    }));
  std::size_t tries = 0;
  for (int k = 0; k < engines; ++k) {
    auto r = runs[static_cast<std::size_t>(k)].get();
    check_equals_reference(g, r, static_cast<std::uint64_t>(k));
    tries += r.busy_tries;
  }
  CHECK(tries >= 1);  // three engines, one pair of workers: someone waited
  // A wait shorter than the run it waits for ends with the refusal and how long it waited.
  slow->delay_ms = 40;  // one run of ≥ 25 ops: ≥ 0.25 s on four devices
  const int before = slow->calls;
  auto held = std::async(std::launch::async, [&] { return es[0]->run(g, p); });
  for (auto deadline = std::chrono::steady_clock::now() + 30s;
       slow->calls == before && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  REQUIRE(slow->calls > before);
  engine impatient(c, engine_options{}.with_network().with_busy_wait(30ms));
  impatient.attach_worker("127.0.0.1", a.port());
  impatient.attach_worker("127.0.0.1", b.port());
  CHECK_THROWS_WITH_AS(impatient.run(g, p), doctest::Contains("s for it: engine_options::busy_wait"), run_failure);
  held.get();
}

TEST_CASE("a kernel left running by another engine's timed-out run does not count in the next engine's run") {
  // Each engine numbers its runs; were both to start at the same number, the first engine's kernel
  // (still sleeping on the worker when its run timed out) would finish into the second engine's first
  // run as that run's op: a seed-1 value among seed-2 outputs, an op done before its inputs.
  shared_worker sw(400ms, engine_options{});
  auto& [c, slow, w, first, second, g, p] = sw;
  CHECK_THROWS_WITH_AS(first.run(g, p, run_options{}.with_seed(1).with_timeout(100ms)), doctest::Contains("timed out"),
                       run_failure);
  REQUIRE(slow->calls > 0);  // the stale kernel is in flight on the worker
  slow->delay_ms = 50;       // the second run's kernels queue behind it and are still running when it ends
  auto later = second.run(g, p, run_options{}.with_seed(2).keep_all());
  check_equals_reference(g, later, 2);
}
