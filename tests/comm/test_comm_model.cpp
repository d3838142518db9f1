// Demand/schedule formats, the time-expanded network, the validator and its error messages.
#include "comm_fixtures.hpp"

#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/comm/validate.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace doppler;
using namespace doppler::comm;
using namespace comm_fixtures;

TEST_CASE("collective builders") {
  cluster c = make_preset("dgx1-v100");
  demand ag = make_collective(c, collective::allgather, mb, 2);
  CHECK(ag.chunks.size() == 16);
  CHECK(ag.chunks[3].source == 1);
  CHECK(ag.chunks[3].destinations.size() == 7);
  CHECK(ag.output_size(8) == doctest::Approx(16 * mb));
  demand a2a = make_collective(c, collective::alltoall, mb, 1);
  CHECK(a2a.chunks.size() == 56);
  CHECK(a2a.output_size(8) == doctest::Approx(8 * mb));
  demand b = make_collective(c, collective::broadcast, mb, 3, 2);
  CHECK(b.chunks.size() == 3);
  CHECK(b.chunks[0].source == 2);
  CHECK(make_collective(c, collective::scatter, mb, 1, 0).chunks.size() == 7);
  demand g = make_collective(c, collective::gather, mb, 1, 5);
  CHECK(g.chunks.size() == 7);
  CHECK(g.chunks[0].destinations == std::vector<device_index>{5});
  CHECK(parse_collective("alltoall") == collective::alltoall);
  CHECK_FALSE(parse_collective("allreduce"));
}

TEST_CASE("doppler-demand/1 round trip and errors") {
  cluster c = make_preset("dgx1-v100");
  demand d = merge_jobs({make_collective(c, collective::allgather, mb, 1),
                         make_collective(c, collective::broadcast, mb, 1, 3)},
                        {1.0, 2.5});
  demand back = parse_demand(to_json_text(d, c), c);
  REQUIRE(back.chunks.size() == d.chunks.size());
  CHECK(back.jobs.size() == 2);
  CHECK(back.jobs[1].weight == 2.5);
  CHECK(back.chunks.back().job == 1);
  CHECK(back.chunks.back().source == 3);
  CHECK(back.chunks[5].destinations == d.chunks[5].destinations);
  CHECK(back.chunk_bytes == d.chunk_bytes);

  auto bad = [&](const std::string& text, errc code, const std::string& path) {
    try {
      parse_demand(text, c, "d.json");
      FAIL("accepted: " << text);
    } catch (const error& e) {
      CHECK_MESSAGE(e.code() == code, e.what());
      CHECK_MESSAGE(e.path() == path, std::string(e.what()));
      CHECK(e.file() == "d.json");
    }
  };
  bad(R"({"format":"doppler-demand/2","chunk_bytes":1,"chunks":[]})", errc::bad_format_tag, "format");
  bad(R"({"format":"doppler-demand/1","chunks":[]})", errc::missing_field, "chunk_bytes");
  bad(R"({"format":"doppler-demand/1","chunk_bytes":1,"chunks":[{"id":0,"source":"gpu9","destinations":["gpu1"]}]})",
      errc::unknown_id, "chunks[0].source");
  bad(R"({"format":"doppler-demand/1","chunk_bytes":1,"chunks":[{"id":0,"source":"gpu0","destinations":["gpu1","nv"]}]})",
      errc::unknown_id, "chunks[0].destinations[1]");
  bad(R"({"format":"doppler-demand/1","chunk_bytes":1,"chunks":[{"id":0,"source":"gpu0","destinations":["gpu0"]}]})",
      errc::bad_value, "chunks[0].destinations[0]");
  bad(R"({"format":"doppler-demand/1","chunk_bytes":1,"chunks":[{"id":0,"source":"gpu0","destinations":["gpu1"]},{"id":0,"source":"gpu1","destinations":["gpu2"]}]})",
      errc::duplicate_id, "chunks[1].id");
  bad(R"({"format":"doppler-demand/1","chunk_bytes":1,"chunks":[{"id":1.5,"source":"gpu0","destinations":["gpu1"]}]})",
      errc::bad_value, "chunks[0].id");
}

TEST_CASE("the time-expanded network: tau, delta, beta") {
  cluster c = make_preset("dgx1-v100");  // 25 and 50 GB/s links, 0.7 us
  network fast(c, 1e6, epoch_mode::fast);
  CHECK(fast.tau() == doctest::Approx(1e6 / 50e9));  // 20 us: alpha/tau = 0.035 <= 0.1, no delay
  auto l01 = *fast.find_link(0, 1), l02 = *fast.find_link(0, 2);
  CHECK(fast.links()[l01].window == 1);
  CHECK(fast.links()[l01].offset == 1);
  CHECK(fast.links()[l02].window == 2);  // a 25 GB/s link holds a chunk for 2 epochs
  CHECK(fast.links()[l02].cap == 1);
  CHECK(fast.links()[l02].offset == 2);
  network slow(c, 1e6, epoch_mode::slow);
  CHECK(slow.links()[l01].cap == 2);
  CHECK(slow.links()[l02].cap == 1);
  // Small chunks: latency dominates, delta = ceil(alpha/tau).
  network tiny(c, 1e4, epoch_mode::fast);  // tau = 0.2 us, alpha = 0.7 us -> delta 4
  CHECK(tiny.links()[l01].offset == 5);
  CHECK(tiny.epochs_between(0, 5) == 10);  // two NVLink hops
  // Through a switch: one hop with both latencies.
  cluster h = make_preset("dgx-h100");
  network hn(h, 450e3, epoch_mode::fast);  // tau = 1 us; 0.5 + 0.5 us -> delta 1
  node_index sw = static_cast<node_index>(h.device_count());
  CHECK(hn.links()[*hn.find_link(0, sw)].offset == 0);
  CHECK(hn.links()[*hn.find_link(sw, 1)].offset == 2);
  CHECK(hn.epochs_between(0, 7) == 2);
}

namespace {

/// The optimal 2-epoch allgather on a line of 3, written by hand.
schedule line_schedule() {
  schedule s;
  s.topology = "line3";
  s.method = "hand";
  s.epoch_seconds = 1;
  s.epochs = 2;
  s.chunk_bytes = mb;
  s.sends = {{0, 0, 1, 0}, {1, 1, 0, 0}, {1, 1, 2, 0}, {2, 2, 1, 0}, {0, 1, 2, 1}, {2, 1, 0, 1}};
  return s;
}

}  // namespace

TEST_CASE("validator accepts a hand-made optimal schedule and replays it") {
  cluster c = line(3);
  demand d = make_collective(c, collective::allgather, mb, 1);
  schedule s = line_schedule();
  replay_report r = validate_schedule(c, d, s);
  CHECK(r.epochs_used == 2);
  CHECK(r.transfer_seconds == doctest::Approx(2.0));
  CHECK(r.simulated_seconds == doctest::Approx(2.0));
  CHECK(r.algbw == doctest::Approx(3 * mb / 2.0));
  CHECK(r.bytes_moved == doctest::Approx(6 * mb));
  CHECK(r.peak_buffer_bytes[1] == doctest::Approx(3 * mb));
  // The schedule format round-trips.
  schedule back = parse_schedule(to_json_text(s, c), c);
  CHECK(back.sends == s.sends);
  CHECK(back.epochs == 2);
  CHECK(back.epoch_seconds == 1);
}

TEST_CASE("schedule_trace: every send on its link's track at the replay's times") {
  cluster c = line(3);
  demand d = make_collective(c, collective::allgather, mb, 1);
  schedule s = line_schedule();
  replay_report r = validate_schedule(c, d, s);
  // 1 MB over 1 MB/s links: every send takes 1 s; the epoch-1 relays wait for their chunk (at 1 s).
  REQUIRE(r.send_begin.size() == s.sends.size());
  CHECK(r.send_begin == std::vector<double>{0, 0, 0, 0, 1, 1});
  CHECK(r.send_end == std::vector<double>{1, 1, 1, 1, 2, 2});
  auto j = nlohmann::json::parse(schedule_trace(c, s, r));
  std::map<int, std::string> link_of;  // pid -> process name
  std::vector<nlohmann::json> sends;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") link_of[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X") sends.push_back(e);
  }
  CHECK(link_of.size() == 4);  // the four directed links the sends use
  REQUIRE(sends.size() == s.sends.size());
  std::map<std::string, std::vector<std::pair<double, double>>> on_link;
  for (const auto& e : sends) {
    const std::string link = link_of.at(e["pid"].get<int>());
    CHECK(link == "link " + e["args"]["from"].get<std::string>() + " -> " + e["args"]["to"].get<std::string>());
    CHECK(e["name"] == "chunk " + std::to_string(e["args"]["chunk"].get<int>()));
    CHECK(e["dur"].get<double>() == doctest::Approx(1e6));
    on_link[link].emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  }
  // gpu1 -> gpu2 carries chunk 1 in [0, 1 s), then relays chunk 0 in [1 s, 2 s).
  CHECK(on_link["link gpu1 -> gpu2"] == std::vector<std::pair<double, double>>{{0, 1e6}, {1e6, 2e6}});
  for (auto& [link, spans] : on_link)  // a link serves its sends one at a time
    for (std::size_t k = 1; k < spans.size(); ++k) CHECK(spans[k].first >= spans[k - 1].second);
  CHECK(j["otherData"]["makespan_s"].get<double>() == doctest::Approx(2.0));
  CHECK(j["otherData"]["source"] == "simulator");
  CHECK(j["otherData"]["schedule"]["method"] == "hand");
  // A report of another schedule is refused, not read past its end.
  replay_report empty;
  expect_error([&] { schedule_trace(c, s, empty); }, errc::internal, "validate_schedule");
}

TEST_CASE("validator rejects broken schedules naming the first violated send") {
  cluster c = line(3);
  demand d = make_collective(c, collective::allgather, mb, 1);
  auto reject = [&](schedule s, const std::string& path, const std::string& needle) {
    try {
      validate_schedule(c, d, s);
      FAIL("accepted a broken schedule expected to fail with " << needle);
    } catch (const error& e) {
      CHECK_MESSAGE(e.code() == errc::bad_value, std::string(e.what()));
      CHECK_MESSAGE(e.path() == path, std::string(e.what()));
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, std::string(e.what()));
    }
  };
  schedule s = line_schedule();
  s.sends.push_back({0, 2, 1, 1});  // gpu2 sends chunk 0 back before it has arrived
  reject(s, "sends[6]", "gpu2 does not hold the chunk in that epoch (it arrives at epoch 2)");
  s = line_schedule();
  s.sends[4].epoch = 0;  // gpu1 forwards chunk 0 at once: its link is already full then
  reject(s, "sends[4]", "over capacity");
  s = line_schedule();
  s.sends.push_back({0, 0, 2, 0});  // no link gpu0 -> gpu2
  reject(s, "sends[6]", "there is no link");
  s = line_schedule();
  s.sends.push_back({2, 1, 0, 1});  // a second chunk on gpu1 -> gpu0 in epoch 1
  s.sends.back().chunk = 0;
  s.sends.insert(s.sends.begin(), send{1, 1, 0, 1});
  reject(s, "sends[6]", "over capacity");
  s = line_schedule();
  s.sends.erase(s.sends.begin() + 5);  // gpu0 never gets chunk 2
  reject(s, "sends", "gpu0 never receives chunk 2");
  s = line_schedule();
  s.sends[0].chunk = 7;
  reject(s, "sends[0].chunk", "not in the demand");
  s = line_schedule();
  s.epochs = 1;
  reject(s, "epochs", "the sends need 2");
  s = line_schedule();
  s.sends.push_back({0, 1, 0, 5});  // gpu1 returns chunk 0 long after the end: the header must cover it
  reject(s, "sends[6]", "arrives at epoch 6, after the header's 2 epochs");
}

TEST_CASE("validator: switches forward in the same epoch and copy only when allowed") {
  cluster c = star(3);
  node_index sw = 3;
  demand d = make_collective(c, collective::broadcast, mb, 1, 0);
  schedule s;
  s.epoch_seconds = 1;
  s.chunk_bytes = mb;
  s.epochs = 1;
  s.sends = {{0, 0, sw, 0}, {0, sw, 1, 0}, {0, sw, 2, 0}};
  CHECK(validate_schedule(c, d, s).epochs_used == 1);
  try {
    validate_schedule(c, d, s, {.switch_copy = false});
    FAIL("a switch copy was accepted");
  } catch (const error& e) {
    CHECK(e.path() == "sends[2]");
    CHECK(std::string(e.what()).find("copy") != std::string::npos);
  }
  s.sends[2].epoch = 1;  // the switch would have to store the chunk for an epoch
  s.epochs = 2;
  try {
    validate_schedule(c, d, s);
    FAIL("a storing switch was accepted");
  } catch (const error& e) {
    CHECK(e.path() == "sends[2]");
    CHECK(std::string(e.what()).find("did not enter switch sw") != std::string::npos);
  }
}
