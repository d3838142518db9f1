// Every message type of the protocol serializes and deserializes (CAF 0.17 inspect overloads and the
// doppler_actors type-id block): what device actors in other processes will need.
#include <doppler/actors/protocol.hpp>
#include <doppler/runtime/error.hpp>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <vector>

using namespace doppler;
using namespace doppler::actors;

namespace {

struct system_fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  system_fixture() {
    cfg.add_message_types<caf::id_block::doppler_actors>();
    cfg.set("logger.console", caf::atom("none"));
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  template <class T>
  T round_trip(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{*sys, buf};
    auto err = sink(x);
    REQUIRE(!err);
    T back;
    caf::binary_deserializer source{*sys, buf};
    err = source(back);
    REQUIRE(!err);
    return back;
  }
};

tensor_ref make_tensor() {
  return tensor_ref{std::make_shared<const tensor>(shape_t{2, 3}, std::vector<float>{1, -2, 3.5f, 4, 5, -6}), nullptr};
}

}  // namespace

TEST_CASE("tensor_ref: shape and values survive, into a fresh buffer") {
  system_fixture f;
  auto t = make_tensor();
  auto back = f.round_trip(t);
  REQUIRE(back.ptr);
  CHECK(back.ptr != t.ptr);
  CHECK(bitwise_equal(*back.ptr, *t.ptr));
}

TEST_CASE("completion messages and the run report") {
  system_fixture f;
  auto d = f.round_trip(std::vector<op_done_msg>{{3, 7, 1, 100, 250}, {3, 8, 2, 300, 400}});
  REQUIRE(d.size() == 2);
  CHECK(d[1].op == 8);
  CHECK(d[1].device == 2);
  CHECK(d[1].end_ns == 400);
  auto t = f.round_trip(transfer_done_msg{3, 7, 1, 2, 10, 20, 4096});
  CHECK(t.dst == 2);
  CHECK(t.bytes == 4096);
  auto e = f.round_trip(op_failed_msg{3, 9, 1, "injected"});
  CHECK(e.what == "injected");
  run_report r;
  r.ok = true;
  r.makespan = 0.25;
  r.busy = {0.1, 0.2};
  r.bytes_moved = 4096;
  r.events.push_back(trace_event{trace_event::kind::transfer, 7, 3, 2, 0.1, 0.2});
  r.outputs.push_back(op_output{9, make_tensor()});
  auto rb = f.round_trip(r);
  CHECK(rb.ok);
  CHECK_FALSE(rb.timed_out);
  CHECK(rb.makespan == 0.25);
  CHECK(rb.busy == r.busy);
  REQUIRE(rb.events.size() == 1);
  CHECK(rb.events[0].what == trace_event::kind::transfer);
  CHECK(rb.events[0].dst == 2);
  REQUIRE(rb.outputs.size() == 1);
  CHECK(bitwise_equal(*rb.outputs[0].value.ptr, *r.outputs[0].value.ptr));
  run_report late;
  late.failure = "op 'y' (index 1) on device cpu1: run timed out after 5 ms with this op unfinished";
  late.failed_op = 1;
  late.timed_out = true;
  late.devices_busy = true;
  late.makespan = 0.5;
  auto lb = f.round_trip(late);
  CHECK_FALSE(lb.ok);
  CHECK(lb.timed_out);
  CHECK(lb.devices_busy);
  CHECK_FALSE(rb.devices_busy);
  CHECK(lb.failed_op == 1);
  CHECK(lb.makespan == 0.5);  // the field after timed_out still lands in its place
}

TEST_CASE("a whole message: registered types are found by name") {
  system_fixture f;
  auto msg = caf::make_message(tensor_atom::value, std::uint64_t{5}, device_index{1}, std::vector<op_index>{2, 7},
                               std::vector<tensor_ref>{make_tensor(), tensor_ref{std::make_shared<const tensor>(), nullptr}});
  auto back = f.round_trip(msg);
  REQUIRE(back.match_elements<tensor_atom, std::uint64_t, device_index, std::vector<op_index>, std::vector<tensor_ref>>());
  CHECK(back.get_as<std::uint64_t>(1) == 5);
  CHECK(back.get_as<std::vector<op_index>>(3) == std::vector<op_index>{2, 7});
  const auto& ts = back.get_as<std::vector<tensor_ref>>(4);
  REQUIRE(ts.size() == 2);
  CHECK(bitwise_equal(*ts[0].ptr, *make_tensor().ptr));
  CHECK(ts[1].ptr->empty());
}

TEST_CASE("tensor_ref: the empty tensor and a bad shape") {
  system_fixture f;
  auto empty = f.round_trip(tensor_ref{std::make_shared<const tensor>(), nullptr});
  REQUIRE(empty.ptr);
  CHECK(empty.ptr->empty());
  // a message whose shape does not match its values is refused with an error, not a crash
  shape_t shape{3, 3};
  std::vector<char> raw(2 * sizeof(float), 0);
  std::vector<char> buf;
  caf::binary_serializer sink{*f.sys, buf};
  REQUIRE(!sink(shape, raw));
  tensor_ref back;
  caf::binary_deserializer source{*f.sys, buf};
  CHECK(source(back));  // an error
}

namespace {
/// Device memory that keeps its tensor on the host and counts the host copies asked of it.
class counted_memory final : public device_memory {
 public:
  explicit counted_memory(tensor t, bool lost = false) : t_(std::move(t)), lost_(lost) {}
  std::uint64_t bytes() const noexcept override { return t_.numel() * sizeof(float); }
  shape_t shape() const override { return t_.shape(); }
  tensor to_host() const override {
    ++copies;
    if (lost_) throw error(errc::internal, "device lost");
    return t_;
  }
  mutable int copies = 0;

 private:
  tensor t_;
  bool lost_;
};
}  // namespace

TEST_CASE("tensor_ref in device memory: the message carries its host copy, a failed copy is a bad message") {
  system_fixture f;
  auto mem = std::make_shared<const counted_memory>(*make_tensor().ptr);
  tensor_ref dev{nullptr, mem};
  CHECK(static_cast<bool>(dev));
  CHECK(dev.bytes() == 6 * sizeof(float));
  auto back = f.round_trip(dev);
  REQUIRE(back.ptr);
  CHECK(back.mem == nullptr);
  CHECK(bitwise_equal(*back.ptr, *make_tensor().ptr));
  CHECK(mem->copies == 1);
  CHECK(!tensor_ref{});
  CHECK(tensor_ref{}.bytes() == 0);

  tensor_ref lost{nullptr, std::make_shared<const counted_memory>(*make_tensor().ptr, true)};
  std::vector<char> buf;
  caf::binary_serializer sink{*f.sys, buf};
  auto err = sink(lost);
  REQUIRE(err);
  CHECK(caf::to_string(err).find("device lost") != std::string::npos);
}

TEST_CASE("worker_info: the handshake answer survives") {
  system_fixture f;
  worker_info w;
  w.ok = false;
  w.refusal = "wrong token";
  w.name = "node1";
  w.named = true;
  w.ids = {"cpu2", "cpu3"};
  auto back = f.round_trip(w);
  CHECK(!back.ok);
  CHECK(back.refusal == "wrong token");
  CHECK(back.name == "node1");
  CHECK(back.named);
  CHECK(back.ids == w.ids);
  auto msg = f.round_trip(caf::make_message(hello_atom::value, std::string("t0k")));
  REQUIRE(msg.match_elements<hello_atom, std::string>());
  CHECK(msg.get_as<std::string>(1) == "t0k");
}

TEST_CASE("the learner protocol's data: placement and train report") {
  system_fixture f;
  placement p;
  p.device = {0, 2, 1};
  p.order = {0, 2, 1};
  p.method = "doppler";
  auto back = f.round_trip(p);
  CHECK(back.device == p.device);
  CHECK(back.order == p.order);
  CHECK(back.method == "doppler");
  auto r = f.round_trip(learner_train_report{16, 1.5, 2.5});
  CHECK(r.episodes == 16);
  CHECK(r.best_makespan == 1.5);
  CHECK(r.greedy_makespan == 2.5);
}
