// Larger topologies: the dgx2-2 preset and its TE-CCL bounds, greedy at scale, MSCCL export, the CLI.
#include "comm_fixtures.hpp"

#include <doppler/comm/comm.hpp>  // the umbrella header compiles on its own
#include <doppler/comm/msccl.hpp>
#include <doppler/comm/planner.hpp>
#include <doppler/comm/topologies.hpp>

#include <algorithm>
#include <regex>
#include <set>

using namespace doppler;
using namespace doppler::comm;
using namespace comm_fixtures;

TEST_CASE("dgx2-2 follows TE-CCL's DGX-2 model and its cut bounds") {
  cluster c = make_dgx2_2();
  CHECK(c.device_count() == 32);
  CHECK(c.switches().size() == 2);
  CHECK(c.links().size() == 2 * 32 + 16);  // 32 duplex GPU-switch links, 16 one-way NIC links
  auto g1 = *c.find_device("gpu1"), g16 = *c.find_device("gpu16");
  CHECK(c.route_between(g1, g16).links.size() == 1);  // odd gpu1 -> even gpu16 of the other chassis
  // 1 GB outputs: allgather bound 129.03 GB/s (GPU ingress), alltoall 12.5 GB/s (the NIC cut).
  demand ag = make_collective(c, collective::allgather, 1e9 / 32, 1);
  network net(c, ag.chunk_bytes);
  lower_bound b = compute_lower_bound(net, ag);
  CHECK_FALSE(b.exact_cuts);
  CHECK(ag.output_size(32) / b.cut_seconds / 1e9 == doctest::Approx(129.03).epsilon(1e-3));
  demand a2a = make_collective(c, collective::alltoall, 1e9 / 32 / 32, 1);
  network net2(c, a2a.chunk_bytes);
  lower_bound b2 = compute_lower_bound(net2, a2a);
  CHECK(a2a.output_size(32) / b2.cut_seconds / 1e9 == doctest::Approx(12.5).epsilon(1e-3));
}

TEST_CASE("ndv2-4 follows TE-CCL's 4-chassis NDv2 model: bound 16.67 GB/s, greedy above 90% of it") {
  cluster c = load_comm_cluster("ndv2-4");
  CHECK(c.device_count() == 32);
  CHECK(c.switches().size() == 1);
  demand d = make_collective(c, collective::allgather, 1e9 / 32, 1);
  plan_result r = plan(c, d, plan_options{}.with_method("greedy"));
  CHECK(d.output_size(32) / r.bound.cut_seconds / 1e9 == doctest::Approx(50.0 / 3).epsilon(1e-3));
  CHECK(r.fraction_of_bound() > 0.9);
  expect_error([] { load_comm_cluster("ndv2-x"); }, errc::bad_argument, "chassis count");
}

TEST_CASE("greedy plans a 256-GPU allgather near its bound") {
  cluster c = make_h100_pod(32);
  CHECK(c.device_count() == 256);
  demand d = make_collective(c, collective::allgather, 1 << 20, 1);
  plan_result r = plan(c, d, plan_options{}.with_method("greedy"));
  CHECK(r.report.epochs_used == r.sched.epochs);
  CHECK(r.fraction_of_bound() > 0.9);
  CHECK(r.sched.solve_seconds < 30);
}

TEST_CASE("MSCCL export: one peer per thread block, dependencies on receives") {
  cluster c = make_preset("dgx1-v100");
  demand d = make_collective(c, collective::allgather, 1 << 20, 1);
  plan_result r = plan(c, d, plan_options{}.with_method("greedy"));
  network net(c, d.chunk_bytes);
  std::string xml = to_msccl_xml(net, d, r.sched);
  CHECK(xml.rfind("<algo name=\"doppler\"", 0) == 0);
  CHECK(xml.find("ngpus=\"8\"") != std::string::npos);
  std::regex tb_re("<tb id=\"\\d+\" send=\"(-?\\d+)\" recv=\"(-?\\d+)\"");
  std::size_t blocks = 0;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tb_re); it != std::sregex_iterator(); ++it) {
    ++blocks;
    CHECK(((*it)[1] == "-1") != ((*it)[2] == "-1"));  // exactly one peer
  }
  CHECK(blocks > 0);
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t p = xml.find(needle); p != std::string::npos; p = xml.find(needle, p + 1)) ++n;
    return n;
  };
  CHECK(count("type=\"s\"") == r.sched.sends.size());  // no switches on DGX-1: one step per send
  CHECK(count("type=\"r\"") == r.sched.sends.size());
  CHECK(count("hasdep=\"1\"") > 0);  // relayed chunks wait for their receive
  msccl_options tight;
  tight.max_steps_per_tb = 1;
  expect_error([&] { to_msccl_xml(net, d, r.sched, tight); }, errc::bad_argument, "MSCCL allows 1");
  // A name from a demand file is escaped: the attribute stays one well-formed attribute.
  msccl_options odd;
  odd.name = "a<&>\"b";
  odd.collective = "custom";
  const std::string named = to_msccl_xml(net, d, r.sched, odd);
  CHECK(named.rfind("<algo name=\"a&lt;&amp;&gt;&quot;b\"", 0) == 0);
  // Control characters, which XML 1.0 allows in no form, never reach the document raw: tab and
  // newline as character references, the others as U+FFFD.
  odd.name = std::string("x\x01y\tz\n", 6);
  const std::string ctl = to_msccl_xml(net, d, r.sched, odd);
  CHECK(ctl.rfind("<algo name=\"x\xEF\xBF\xBDy&#9;z&#10;\"", 0) == 0);
  CHECK(std::none_of(ctl.begin(), ctl.end(), [](char ch) { return ch > 0 && ch < 0x20 && ch != '\n'; }));
  CHECK(named.find("coll=\"custom\"") != std::string::npos);
}

TEST_CASE("MSCCL export through switches: one step per delivery, no GPU receives a chunk twice") {
  // Several GPUs send a chunk into a switch in one epoch: each send out of it continues one of them.
  // The broadcast on dgx-h100 and the allgather on h100-2x8 (NVSwitch and network switch, with switch
  // copy) once exported 15 steps for 7 deliveries and 278 for 240.
  struct one_case {
    const char* cluster;
    collective kind;
    bool switch_copy;
  };
  for (const one_case& k : {one_case{"dgx-h100", collective::broadcast, true}, one_case{"dgx-h100", collective::broadcast, false},
                            one_case{"h100-2x8", collective::allgather, true}, one_case{"h100-2x8", collective::allgather, false}}) {
    CAPTURE(k.cluster);
    CAPTURE(k.switch_copy);
    cluster c = load_comm_cluster(k.cluster);
    demand d = make_collective(c, k.kind, 1 << 20, 1);
    plan_result r = plan(c, d, plan_options{}.with_method("greedy").with_switch_copy(k.switch_copy));
    network net(c, d.chunk_bytes);
    std::size_t deliveries = 0;  // sends that end at a GPU, from a GPU or out of a switch
    for (const send& x : r.sched.sends) deliveries += !net.is_switch(x.dst);
    const std::string xml = to_msccl_xml(net, d, r.sched);
    std::regex recv_re("type=\"r\" srcbuf=\"\\w\" srcoff=\"-?\\d+\" dstbuf=\"(\\w)\" dstoff=\"(\\d+)\"");
    std::size_t sends = 0, recvs = 0;
    for (std::size_t p = xml.find("type=\"s\""); p != std::string::npos; p = xml.find("type=\"s\"", p + 1)) ++sends;
    // Per GPU, the (buffer, offset) every receive writes: a chunk arrives once.
    std::size_t gpu_at = xml.find("<gpu id=");
    while (gpu_at != std::string::npos) {
      std::size_t next = xml.find("<gpu id=", gpu_at + 1);
      const std::string part = xml.substr(gpu_at, next == std::string::npos ? std::string::npos : next - gpu_at);
      std::set<std::string> written;
      for (auto it = std::sregex_iterator(part.begin(), part.end(), recv_re); it != std::sregex_iterator(); ++it) {
        ++recvs;
        CHECK(written.insert((*it)[1].str() + (*it)[2].str()).second);
      }
      gpu_at = next;
    }
    CHECK(deliveries > 0);
    CHECK(sends == deliveries);
    CHECK(recvs == deliveries);
  }
}
