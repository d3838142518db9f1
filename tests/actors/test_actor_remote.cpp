// Devices in other processes, reached over TCP on 127.0.0.1 through CAF's middleman: one `worker`
// in a second actor system of this process, then real `doppler worker` processes started by the test
// (a Llama block over 2 workers x 2 devices equals the reference; a worker killed mid-run ends the run
// within 2 s naming it, and a restarted worker is reattached; a client speaking garbage is dropped;
// a wrong token is refused).
#include <doppler/actors/backend.hpp>
#include <doppler/actors/engine.hpp>
#include <doppler/actors/online.hpp>
#include <doppler/runtime/learner.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include "../temp_dir.hpp"
#include "remote_helpers.hpp"
#include "shell.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace doppler;
using namespace remote_helpers;
using namespace std::chrono_literals;

namespace {

/// The CPU backend, counting the kernels it ran (to see that the worker's devices did the work).
class counting_backend final : public actors::backend {
 public:
  std::string_view name() const noexcept override { return "counting"; }
  tensor execute(const graph& g, op_index i, std::span<const tensor* const> in, std::uint64_t seed) override {
    ++calls;
    return execute_op(g, i, in, seed);
  }
  std::atomic<int> calls{0};
};

/// A `doppler worker` process with the given arguments; the port comes from its `listening on
/// HOST:PORT` line. The destructor kills it (SIGKILL) and reaps it, also when a check failed; the
/// child gets SIGKILL too if this test process dies first.
class worker_process {
 public:
  explicit worker_process(std::vector<std::string> args) {
    args.insert(args.begin(), {DOPPLER_CLI_PATH, "worker"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {  // child: only async-signal-safe calls until exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
    read_port();
  }
  ~worker_process() { kill(); }
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  /// SIGKILL now (idempotent).
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (out_ >= 0) ::close(out_), out_ = -1;
  }
  /// True while the process runs.
  bool alive() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }
  const std::string& output() const noexcept { return text_; }

 private:
  void read_port() {
    auto deadline = std::chrono::steady_clock::now() + 30s;  // generous: a loaded 2-core host
    const std::string key = "listening on ";
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char buf[512];
      auto n = ::read(out_, buf, sizeof buf);
      if (n <= 0) break;  // exited
      text_.append(buf, static_cast<std::size_t>(n));
      auto at = text_.find(key);
      auto eol = at == std::string::npos ? at : text_.find('\n', at);
      if (eol != std::string::npos) {
        auto line = text_.substr(at + key.size(), eol - at - key.size());
        port_ = static_cast<std::uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
        return;
      }
    }
    FAIL("doppler worker printed no port: " << text_);
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::uint16_t port_ = 0;
  std::string text_;
};


/// A chain of `n` synthetic ops of 2 GFLOP each (100 ms on an emulated cpu:N device), op k on
/// device k % devices: a run that is in flight for n × 0.1 s.
std::pair<graph, placement> slow_chain(int n, int devices) {
  graph_builder b("slow-chain");
  placement p;
  for (int k = 0; k < n; ++k) {
    op_spec s;
    s.id = "s" + std::to_string(k);
    s.kind = op_kind::synthetic;
    s.flops = 2e9;
    s.bytes = 64;
    if (k > 0) s.inputs = {"s" + std::to_string(k - 1)};
    b.push(std::move(s));
    p.device.push_back(static_cast<device_index>(k % devices));
  }
  return {std::move(b).build(), std::move(p)};
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("two of four devices served by a worker in another actor system: outputs equal the reference") {
  cluster c = make_preset("cpu:4");
  auto served = std::make_shared<counting_backend>();
  worker w(c, {2, 3}, engine_options{}.with_custom_backend(served));
  engine e(c, engine_options{}.with_network());
  CHECK(e.attach_worker("127.0.0.1", w.port()) == std::vector<device_index>{2, 3});
  CHECK(e.location(1).empty());
  CHECK(e.location(2) == "worker 127.0.0.1:" + std::to_string(w.port()));
  graph g = small_llama();
  placement p = round_robin(g, c);
  for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
    auto r = e.run(g, p, run_options{}.with_mode(mode).with_seed(6).keep_all());
    check_equals_reference(g, r, 6);
    std::size_t on_remote = 0;
    for (op_index i = 0; i < g.size(); ++i) on_remote += p.device[i] >= 2 ? 1 : 0;
    CHECK(on_remote > 0);
    CHECK(served->calls.exchange(0) == static_cast<int>(on_remote));
    CHECK(r.transfers.back() > 0);
  }
  // a served device that dies is replaced by the worker; the engine fails naming the worker until it
  // attaches again
  e.kill_device(2);
  CHECK_THROWS_WITH_AS(e.run(g, p), doctest::Contains("(worker 127.0.0.1:"), run_failure);
  CHECK(e.attach_worker("127.0.0.1", w.port()) == std::vector<device_index>{2, 3});
  check_equals_reference(g, e.run(g, p, run_options{}.with_seed(6).keep_all()), 6);
}


TEST_CASE("failover: a worker lost mid-run has its ops re-placed on the survivors and the run finishes") {
  cluster c = make_preset("cpu:4");
  auto slow = std::make_shared<slow_backend>(20ms);
  auto w = std::make_unique<worker>(c, std::vector<device_index>{2, 3}, engine_options{}.with_custom_backend(slow));
  std::string where = "worker 127.0.0.1:" + std::to_string(w->port());
  engine e(c, engine_options{}.with_network());
  e.attach_worker("127.0.0.1", w->port());
  graph g = small_llama();
  placement p = round_robin(g, c);
  auto opt = run_options{}.with_seed(9).keep_all().with_failover();
  auto run = std::async(std::launch::async, [&] { return e.run(g, p, opt); });
  wait_for_kernel(*slow);
  REQUIRE(run.wait_for(0s) == std::future_status::timeout);  // in flight (≥ 25 ops × 20 ms remote)
  w.reset();  // the worker goes away mid-run
  auto r = run.get();
  check_equals_reference(g, r, 9);
  // one failover per device found lost (the worker's two devices may go down one after the other)
  REQUIRE(!r.failovers.empty());
  CHECK(r.failovers.size() <= 2);
  for (const auto& f : r.failovers) {
    MESSAGE(f);
    CHECK(f.find(where) != std::string::npos);
  }
  // the next failover run re-places up front; without failover it fails naming the worker
  auto again = e.run(g, p, opt);
  check_equals_reference(g, again, 9);
  CHECK(again.failovers.size() == 1);
  CHECK_THROWS_WITH_AS(e.run(g, p), doctest::Contains(where.c_str()), run_failure);
  // Online learning over failover: the step reports it, and the learner is not told a makespan that
  // is not its placement's (nor is it the best or the latest greedy one).
  struct fixed_learner final : learner_interface {
    placement p;
    int observed = 0;
    std::string_view name() const noexcept override { return "test-fixed"; }
    placement place(const graph&, const cluster&, bool, std::uint64_t) override { return p; }
    void observe(const graph&, const cluster&, const placement&, double) override { ++observed; }
    void save(const std::string&) const override {}
    void load(const std::string&) override {}
  };
  auto fixed = std::make_shared<fixed_learner>();
  fixed->p = p;
  online_learning ol(e, e.spawn_learner(fixed), std::make_shared<const graph>(g), online_options{}.with_run(opt));
  const online_step s = ol.step();
  CHECK(s.failovers.size() == 1);
  CHECK(s.makespan > 0);
  CHECK(fixed->observed == 0);
  CHECK_FALSE(std::isfinite(ol.best_makespan()));
}


TEST_CASE("attach_worker: no network, an unreachable worker, devices that do not fit: clear errors") {
  cluster c = make_preset("cpu:2");
  engine local(c);
  CHECK_THROWS_AS(local.attach_worker("127.0.0.1", 1), doppler::error);
  engine e(c, engine_options{}.with_network());
  try {
    e.attach_worker("127.0.0.1", 1);
    FAIL("attach to a closed port should fail");
  } catch (const run_failure& f) {
    CHECK(std::string(f.what()).find("worker 127.0.0.1:1") != std::string::npos);
  }
  worker three(make_preset("cpu:3"), {0, 1, 2}, {}, worker_options{}.with_named(false));
  CHECK_THROWS_AS(e.attach_worker("127.0.0.1", three.port()), doppler::error);  // 3 devices for 2
  worker other(make_preset("cpu:4"), {3});  // named cpu3: not in cpu:2
  CHECK_THROWS_AS(e.attach_worker("127.0.0.1", other.port()), doppler::error);
}

TEST_CASE("attach_worker: a listener that never answers, one worker under two addresses, a device served twice") {
  // A socket that accepts and says nothing (a stopped worker, another program): refused within the
  // connect limit (10 s), never a hang.
  int lis = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(lis >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(lis, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(lis, 4) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(lis, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  cluster c = make_preset("cpu:4");
  {
    engine e(c, engine_options{}.with_network());
    auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(e.attach_worker("127.0.0.1", ntohs(addr.sin_port)), doctest::Contains("no answer within 10 s"),
                         run_failure);
    CHECK(seconds_since(t0) < 20.0);
  }
  ::close(lis);
  // The same worker under another name for the same host: refused, nothing mapped twice.
  worker two(c, {0, 1}, {}, worker_options{}.with_named(false));
  engine e(c, engine_options{}.with_network());
  CHECK(e.attach_worker("127.0.0.1", two.port()) == std::vector<device_index>{0, 1});
  CHECK_THROWS_WITH_AS(e.attach_worker("localhost", two.port()), doctest::Contains("already attached"), doppler::error);
  CHECK(e.location(2).empty());
  // A named worker for a device another worker serves: refused, naming both.
  worker named(c, {1});  // cpu1, by id
  CHECK_THROWS_WITH_AS(e.attach_worker("127.0.0.1", named.port()), doctest::Contains("already serves"), doppler::error);
  CHECK(e.location(1) == "worker 127.0.0.1:" + std::to_string(two.port()));
}

TEST_CASE("attach_worker refuses a worker serving a device the engine's stragglers slow") {
  // The straggler wraps this process's backend; a worker's device would run at full speed unnoticed.
  cluster c = make_preset("cpu:4");
  worker two(c, {2, 3});  // cpu2, cpu3 by id
  engine slowed(c, engine_options{}.with_network().with_straggler(3, 2.0));
  CHECK_THROWS_WITH_AS(slowed.attach_worker("127.0.0.1", two.port()),
                       doctest::Contains("serves device 'cpu3', which the run's stragglers slow"), doppler::error);
  CHECK(slowed.location(2).empty());  // nothing mapped
  CHECK(slowed.location(3).empty());
  engine local_only(c, engine_options{}.with_network().with_straggler(0, 2.0));  // a local device: fine
  CHECK(local_only.attach_worker("127.0.0.1", two.port()) == std::vector<device_index>{2, 3});
}

TEST_CASE("attach_worker fails clearly when the new worker cannot reach a worker the engine holds") {
  cluster c = make_preset("cpu:4");
  std::optional<worker> a;
  a.emplace(c, std::vector<device_index>{0, 1});
  const std::string a_at = "worker 127.0.0.1:" + std::to_string(a->port());
  engine e(c, engine_options{}.with_network());
  e.attach_worker("127.0.0.1", a->port());
  a.reset();  // gone, and the engine has not run since: it still counts on a's devices
  worker b(c, {2, 3});
  try {
    e.attach_worker("127.0.0.1", b.port());
    FAIL("a worker that cannot reach its peer must not be attached");
  } catch (const run_failure& f) {
    const std::string what = f.what();
    CHECK(what.find("worker 127.0.0.1:" + std::to_string(b.port()) + " cannot reach " + a_at) != std::string::npos);
    CHECK(what.find("cannot connect to worker 127.0.0.1:" + a_at.substr(a_at.rfind(':') + 1)) != std::string::npos);
  }
  CHECK(e.location(2).empty());  // b's devices were not taken
}

TEST_CASE("a llama block over 2 worker processes x 2 devices equals the single-process run") {
  worker_process a({"--devices", "cpu:2"}), b({"--devices", "cpu:2", "--listen", "127.0.0.1:0"});
  REQUIRE(a.port() != 0);
  REQUIRE(b.port() != a.port());
  cluster c = make_preset("cpu:4");
  engine e(c, engine_options{}.with_network());
  // anonymous devices take the cluster's devices in order, worker by worker
  CHECK(e.attach_worker("127.0.0.1", a.port()) == std::vector<device_index>{0, 1});
  CHECK(e.attach_worker("127.0.0.1", b.port()) == std::vector<device_index>{2, 3});
  graph g = small_llama();
  placement p = round_robin(g, c);
  auto r = e.run(g, p, run_options{}.with_seed(3).keep_all());
  check_equals_reference(g, r, 3);
  CHECK(r.transfers.back() > 0);
  engine single(c);
  auto s = single.run(g, p, run_options{}.with_seed(3).keep_all());
  for (op_index i = 0; i < g.size(); ++i) CHECK(max_abs_diff(r.outputs[i], s.outputs[i]) <= 1e-5);

  // the workers outlive the engine: a second engine (the next `doppler run`) uses them again
  std::optional<engine> next;
  next.emplace(c, engine_options{}.with_network());
  next->attach_worker("127.0.0.1", a.port());
  next->attach_worker("127.0.0.1", b.port());
  check_equals_reference(g, next->run(g, p, run_options{}.with_seed(5).keep_all()), 5);
  next.reset();
  engine third(c, engine_options{}.with_network());
  third.attach_worker("127.0.0.1", a.port());
  third.attach_worker("127.0.0.1", b.port());
  check_equals_reference(g, third.run(g, p, run_options{}.with_seed(5).keep_all()), 5);
}

TEST_CASE("two workers serve the next engine after the engine that first used them is gone") {
  // Each `doppler run` is a new process. Worker a's devices send tensors to worker b's: if that traffic
  // went through the engine that introduced the two (CAF's indirect route), it would have no route once
  // that engine's process ended, and every later run would lose its tensors and hang.
  worker_process a({"--devices", "cpu:2"}), b({"--devices", "cpu:2"});
  cluster c = make_preset("cpu:4");
  graph g = small_llama();
  placement p = round_robin(g, c);
  for (std::uint64_t seed : {3, 4, 5}) {
    CAPTURE(seed);
    engine e(c, engine_options{}.with_network().with_timeout(20s));
    e.attach_worker("127.0.0.1", a.port());
    e.attach_worker("127.0.0.1", b.port());
    auto r = e.run(g, p, run_options{}.with_seed(seed).keep_all());
    check_equals_reference(g, r, seed);
    CHECK(r.transfers.back() > 0);
  }  // each engine (its actor system, its connections) ends before the next begins
}

TEST_CASE("a worker killed mid-run ends the run within 2 s naming it and a restarted worker is reattached") {
  cluster c = make_preset("cpu:4");
  auto w = std::make_unique<worker_process>(
      std::vector<std::string>{"--cluster", "cpu:4", "--devices", "cpu2,cpu3", "--backend", "emulate"});
  std::uint16_t port = w->port();
  engine e(c, engine_options{}.with_network().with_backend("emulate"));
  REQUIRE(e.attach_worker("127.0.0.1", port) == std::vector<device_index>{2, 3});
  auto [g, p] = slow_chain(60, 4);  // ~6 s in flight
  auto run = std::async(std::launch::async, [&, &g = g, &p = p] { e.run(g, p); });
  std::this_thread::sleep_for(800ms);
  REQUIRE(run.wait_for(0s) == std::future_status::timeout);  // still in flight
  auto killed = std::chrono::steady_clock::now();
  w->kill();
  std::string what;
  try {
    run.get();
    FAIL("the run should have failed");
  } catch (const run_failure& f) {
    what = f.what();
  }
  double took = seconds_since(killed);
  MESSAGE(what << "  (" << took << " s after the kill)");
  CHECK(took < 2.0 + 0.5);  // the bound, plus slack for a loaded host
  CHECK(what.find("worker 127.0.0.1:" + std::to_string(port)) != std::string::npos);

  // the next run without reattaching fails at once, naming the worker
  auto [g2, p2] = slow_chain(4, 4);
  auto t0 = std::chrono::steady_clock::now();
  std::string where = "worker 127.0.0.1:" + std::to_string(port);
  CHECK_THROWS_WITH_AS(e.run(g2, p2), doctest::Contains(where.c_str()), run_failure);
  CHECK(seconds_since(t0) < 10.0);

  // the worker restarts on the same port: attach again, the next run completes
  w = std::make_unique<worker_process>(std::vector<std::string>{
      "--cluster", "cpu:4", "--devices", "cpu2,cpu3", "--backend", "emulate", "--listen",
      "127.0.0.1:" + std::to_string(port)});
  REQUIRE(w->port() == port);
  CHECK(e.attach_worker("127.0.0.1", port) == std::vector<device_index>{2, 3});
  auto r = e.run(g2, p2);
  CHECK(r.runs.size() == 1);
}

TEST_CASE("a client that speaks garbage is dropped and the worker keeps serving") {
  worker_process w({"--devices", "cpu:2"});
  auto connect = [&] {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(w.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    return s;
  };
  // True when the worker closes the connection within ~5 s (reading whatever it sent first).
  auto closed_by_peer = [](int s) {
    pollfd p{s, POLLIN, 0};
    for (int k = 0; k < 50; ++k) {
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      if (::recv(s, buf, sizeof buf, 0) <= 0) return true;
    }
    return false;
  };
  {  // a header CAF's BASP cannot parse (operation 0xff): the worker drops the connection
    int s = connect();
    std::string junk(4096, '\xff');
    (void)::send(s, junk.data(), junk.size(), MSG_NOSIGNAL);
    CHECK(closed_by_peer(s));
    ::close(s);
  }
  for (int attempt = 0; attempt < 3; ++attempt) {  // pseudo-random bytes, then the client leaves
    int s = connect();
    std::string junk(4096, '\0');
    for (std::size_t k = 0; k < junk.size(); ++k) junk[k] = static_cast<char>((k * 131 + attempt * 7) & 0xff);
    (void)::send(s, junk.data(), junk.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(100ms);
    ::close(s);
  }
  REQUIRE(w.alive());
  cluster c = make_preset("cpu:3");
  engine e(c, engine_options{}.with_network());
  CHECK(e.attach_worker("127.0.0.1", w.port()) == std::vector<device_index>{0, 1});
  graph g = small_llama();
  placement p = round_robin(g, c);
  check_equals_reference(g, e.run(g, p, run_options{}.with_seed(2).keep_all()), 2);
}

TEST_CASE("a worker with a token refuses a wrong or missing token clearly, accepts the right one") {
  worker_process w({"--devices", "cpu:1", "--token", "s3cret"});
  cluster c = make_preset("cpu:2");
  engine e(c, engine_options{}.with_network());
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(e.attach_worker("127.0.0.1", w.port(), "guess"), doctest::Contains("wrong token"), run_failure);
  CHECK_THROWS_WITH_AS(e.attach_worker("127.0.0.1", w.port()), doctest::Contains("requires a token"), run_failure);
  CHECK(seconds_since(t0) < 10.0);
  CHECK(e.location(0).empty());  // nothing was attached
  CHECK(e.attach_worker("127.0.0.1", w.port(), "s3cret") == std::vector<device_index>{0});
  graph g = small_llama();
  check_equals_reference(g, e.run(g, round_robin(g, c), run_options{}.with_seed(1).keep_all()), 1);
}

TEST_CASE("a cluster file with host names: workers started with --name serve their host's devices") {
  namespace fs = std::filesystem;
  temp_dir scratch("doppler_remote");
  const fs::path& dir = scratch.path;
  cluster base = make_preset("cpu:4");
  std::vector<device> devs(base.devices().begin(), base.devices().end());
  for (std::size_t d = 0; d < devs.size(); ++d) devs[d].host = d < 2 ? "node0" : "node1";
  cluster c("two-hosts", devs, {base.switches().begin(), base.switches().end()},
            {base.link_specs().begin(), base.link_specs().end()});
  std::string cf = (dir / "c.json").string(), gf = (dir / "g.json").string();
  save_cluster(c, cf);
  worker_process n1({"--cluster", cf, "--name", "node1"}), n0({"--cluster", cf, "--name", "node0"});
  REQUIRE(n1.output().find("cpu2 cpu3") != std::string::npos);

  engine e(c, engine_options{}.with_network());
  CHECK(e.attach_worker("127.0.0.1", n1.port()) == std::vector<device_index>{2, 3});  // by id, any order
  CHECK(e.attach_worker("127.0.0.1", n0.port()) == std::vector<device_index>{0, 1});
  graph g = small_llama();
  check_equals_reference(g, e.run(g, round_robin(g, c), run_options{}.with_seed(4).keep_all()), 4);

  // the same through `doppler run --workers`
  std::string cli = DOPPLER_CLI_PATH;
  REQUIRE(shell::sh(cli + " workload llama-block --dim 32 --heads 4 --seq 8 --shards 2 -o " + gf).code == 0);
  auto [code, out] = shell::sh(cli + " run --graph " + gf + " --cluster " + cf + " --repeat 1 --warmup 0 --workers 127.0.0.1:" +
                        std::to_string(n1.port()) + ",127.0.0.1:" + std::to_string(n0.port()));
  CAPTURE(out);
  CHECK(code == 0);
  CHECK(out.find("serves cpu2 cpu3") != std::string::npos);
  CHECK(out.find("measured makespan") != std::string::npos);
}

TEST_CASE("TLS: a worker and an engine with certificates run over CAF's openssl module") {
  namespace fs = std::filesystem;
  temp_dir scratch("doppler_tls");
  const fs::path& dir = scratch.path;
  std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  auto made = shell::sh("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " + key +
                 " -out " + cert);
  if (made.code != 0) {
    MESSAGE("openssl CLI unavailable, TLS test skipped: " << made.out);
    return;
  }
  cluster c = make_preset("cpu:4");
  auto tls = engine_options{}.with_tls(cert, key, cert);  // self-signed: the certificate is its own CA
  std::unique_ptr<worker> w;
  try {
    w = std::make_unique<worker>(c, std::vector<device_index>{2, 3}, tls);
  } catch (const doppler::error& e) {
    if (std::string(e.what()).find("without CAF's openssl module") != std::string::npos) {
      MESSAGE("built without CAF's openssl module: TLS test skipped");
      return;
    }
    throw;
  }
  engine e(c, engine_options(tls).with_network());
  CHECK(e.attach_worker("127.0.0.1", w->port()) == std::vector<device_index>{2, 3});
  graph g = small_llama();
  check_equals_reference(g, e.run(g, round_robin(g, c), run_options{}.with_seed(8).keep_all()), 8);
  // two TLS workers: the second is introduced to the first (`peer`) over TLS, by one engine after another
  auto w0 = std::make_unique<worker>(c, std::vector<device_index>{0, 1}, tls);
  for (std::uint64_t seed : {9, 10}) {
    engine both(c, engine_options(tls).with_network().with_timeout(20s));
    CHECK(both.attach_worker("127.0.0.1", w0->port()) == std::vector<device_index>{0, 1});
    CHECK(both.attach_worker("127.0.0.1", w->port()) == std::vector<device_index>{2, 3});
    check_equals_reference(g, both.run(g, round_robin(g, c), run_options{}.with_seed(seed).keep_all()), seed);
  }

  // a plain-TCP engine cannot talk to the TLS worker: a clear error, no hang
  engine plain(c, engine_options{}.with_network());
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(plain.attach_worker("127.0.0.1", w->port()), run_failure);
  CHECK(seconds_since(t0) < 30.0);
  // TLS options without all three files are refused
  CHECK_THROWS_AS(engine(c, engine_options{}.with_network().with_tls(cert, "", "")), doppler::error);
  // ... and so are files that do not fit together, naming the file, before any connection (CAF's
  // openssl actor used to throw inside itself: the run hung, the worker aborted at its first client)
  std::string cert2 = (dir / "cert2.pem").string(), key2 = (dir / "key2.pem").string(), junk = (dir / "junk.pem").string();
  REQUIRE(shell::sh("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other -keyout " + key2 + " -out " + cert2).code == 0);
  REQUIRE(shell::sh("echo not a certificate > " + junk).code == 0);
  for (const auto& [files, named] : {std::tuple{engine_options{}.with_tls(cert, key2, cert), key2},
                                    std::tuple{engine_options{}.with_tls(key, cert, cert), key},
                                    std::tuple{engine_options{}.with_tls(cert, key, junk), junk}}) {
    CAPTURE(named);
    CHECK_THROWS_WITH_AS(engine(c, engine_options(files).with_network()), doctest::Contains(named.c_str()), doppler::error);
    CHECK_THROWS_WITH_AS(worker(c, std::vector<device_index>{2, 3}, files), doctest::Contains(named.c_str()), doppler::error);
  }

  // the same between processes: `doppler worker --tls-*` and `doppler run --workers ... --tls-*`
  std::string files = " --tls-cert " + cert + " --tls-key " + key + " --tls-ca " + cert;
  worker_process wp({"--devices", "cpu:2", "--tls-cert", cert, "--tls-key", key, "--tls-ca", cert});
  CHECK(wp.output().find("(TLS)") != std::string::npos);
  std::string cli = DOPPLER_CLI_PATH, gf = (dir / "g.json").string();
  REQUIRE(shell::sh(cli + " workload llama-block --dim 32 --heads 4 --seq 8 --shards 2 -o " + gf).code == 0);
  std::string run = cli + " run --graph " + gf + " --cluster cpu:3 --repeat 1 --warmup 0 --workers 127.0.0.1:" +
                    std::to_string(wp.port());
  auto ok = shell::sh(run + files);
  CAPTURE(ok.out);
  CHECK(ok.code == 0);
  CHECK(ok.out.find("serves cpu0 cpu1") != std::string::npos);
  auto refused = shell::sh(run);  // plain TCP to a TLS worker
  CHECK(refused.code != 0);
}
