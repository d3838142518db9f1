// The cluster model: presets, routes, the `doppler-cluster/1` reader/writer and its errors.
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>

using namespace doppler;

namespace {

const std::string data_dir = std::string(DOPPLER_TEST_DATA_DIR) + "/clusters/";

/// Runs `f`, which must throw `doppler::error` of class `code` whose message contains `needle`.
void expect_error(const std::function<void()>& f, errc code, const std::string& needle) {
  try {
    f();
    FAIL("no error thrown; expected " << to_string(code) << " mentioning " << needle);
  } catch (const error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos,
                  "'" << e.what() << "' does not mention '" << needle << "'");
  }
}

/// A parse of `text` must fail with `code` at JSON path `path` (and name the file).
void expect_bad(const std::string& text, errc code, const std::string& path) {
  try {
    parse_cluster(text, "bad.json");
    FAIL("accepted: " << text);
  } catch (const error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(e.path() == path, e.what());
    CHECK_MESSAGE(std::string(e.what()).find("bad.json: " + path) != std::string::npos, e.what());
  }
}

void check_same(const cluster& a, const cluster& b) {
  CHECK(a.name() == b.name());
  REQUIRE(a.device_count() == b.device_count());
  for (device_index d = 0; d < a.device_count(); ++d) {
    CHECK(a[d].id == b[d].id);
    CHECK(a[d].kind == b[d].kind);
    CHECK(a[d].flops == b[d].flops);  // exact: the writer keeps every bit
    CHECK(a[d].memory == b[d].memory);
    CHECK(a[d].host == b[d].host);
  }
  REQUIRE(a.switches().size() == b.switches().size());
  for (std::size_t s = 0; s < a.switches().size(); ++s) CHECK(a.switches()[s] == b.switches()[s]);
  REQUIRE(a.link_specs().size() == b.link_specs().size());
  for (std::size_t l = 0; l < a.link_specs().size(); ++l) {
    const link_spec &x = a.link_specs()[l], &y = b.link_specs()[l];
    CHECK(x.src == y.src);
    CHECK(x.dst == y.dst);
    CHECK(x.bandwidth == y.bandwidth);
    CHECK(x.latency == y.latency);
    CHECK(x.duplex == y.duplex);
  }
  REQUIRE(a.links().size() == b.links().size());
  for (device_index i = 0; i < a.device_count(); ++i)
    for (device_index j = 0; j < a.device_count(); ++j)
      CHECK(a.route_between(i, j).links == b.route_between(i, j).links);
}

device_index dev(const cluster& c, std::string_view id) {
  auto d = c.find_device(id);
  REQUIRE_MESSAGE(d.has_value(), id);
  return *d;
}

/// The node ids a route visits, source first.
std::string path_ids(const cluster& c, std::string_view a, std::string_view b) {
  const route& r = c.route_between(dev(c, a), dev(c, b));
  std::string s(a);
  for (link_index l : r.links) s += ">" + c.node_id(c.links()[l].dst);
  return s;
}

std::string all_preset_names[] = {"p100x4",  "dgx1-v100", "ndv2-2",         "dgx-h100",
                                  "h100-2x8", "cpu:3",     "doppler-paper:5"};

/// A unit device for API-built clusters.
device unit(const char* id, device_kind kind = device_kind::gpu) { return {id, kind, 1, 1, ""}; }

/// One device with the given fields, as JSON text.
std::string doc(const std::string& devices, const std::string& rest = "") {
  return R"({"format": "doppler-cluster/1", "name": "t", "devices": [)" + devices + "]" + rest + "}";
}
const std::string two_gpus = R"({"id": "a", "kind": "gpu", "flops": 1e12, "memory": 1e9},
                                {"id": "b", "kind": "gpu", "flops": 1e12, "memory": 1e9})";
std::string with_links(const std::string& links, const std::string& switches = "[]") {
  return doc(two_gpus, R"(, "switches": )" + switches + R"(, "links": [)" + links + "]");
}
const std::string ab = R"({"src": "a", "dst": "b", "bandwidth": 1e9, "latency": 1e-6, "duplex": true})";

}  // namespace

TEST_CASE("every preset builds with the documented devices, links and numbers") {
  cluster p = make_preset("p100x4");
  CHECK(p.device_count() == 4);
  CHECK(p.link_specs().size() == 6);
  CHECK(p.links().size() == 12);
  CHECK(p[0].flops == 9.3e12);
  CHECK(p.total_flops() == doctest::Approx(4 * 9.3e12));
  for (device_index i = 0; i < 4; ++i)
    for (device_index j = 0; j < 4; ++j)
      if (i != j) CHECK(p.route_between(i, j).links.size() == 1);

  cluster v = make_preset("dgx1-v100");
  CHECK(v.device_count() == 8);
  CHECK(v.link_specs().size() == 16);  // 24 NVLinks over 16 connected pairs
  CHECK(v.switches().empty());
  CHECK(v.max_device_flops() == 15.7e12);
  CHECK(v[3].memory == 16.0 * 1024 * 1024 * 1024);
  for (device_index g = 0; g < 8; ++g) {  // six 25 GB/s NVLinks per GPU
    double out = 0;
    for (const link& l : v.links())
      if (l.src == g) out += l.bandwidth;
    CHECK(out == 6 * 25e9);
  }

  cluster n = make_preset("ndv2-2");
  CHECK(n.device_count() == 16);
  CHECK(n.link_specs().size() == 34);
  CHECK(n.links().size() == 66);  // 32 duplex NVLink pairs + 2 one-way InfiniBand links
  CHECK(n[8].host == "node1");
  CHECK(n[9].memory == 32.0 * 1024 * 1024 * 1024);

  cluster h = make_preset("dgx-h100");
  CHECK(h.device_count() == 8);
  CHECK(h.switches().size() == 1);
  CHECK(h.node_count() == 9);
  CHECK(h.node_id(8) == "nvswitch");
  CHECK(h.links().size() == 16);
  CHECK(h[7].flops == 67e12);
  CHECK(h[7].memory == 80.0 * 1024 * 1024 * 1024);

  cluster hh = make_preset("h100-2x8");
  CHECK(hh.device_count() == 16);
  CHECK(hh.switches().size() == 3);
  CHECK(hh.link_specs().size() == 32);
  CHECK(hh[15].host == "node1");

  cluster c = make_preset("cpu:4");
  CHECK(c.device_count() == 4);
  CHECK(c[0].kind == device_kind::cpu);
  CHECK(c[0].id == "cpu0");
  CHECK(c[0].flops == 2e10);
  CHECK(c[0].memory == 4e9);
  CHECK(c.link_specs().size() == 6);
  CHECK(c.route_between(0, 3).bandwidth == 5e9);
  CHECK(c.route_between(0, 3).latency == 1e-6);
  cluster co = make_preset("cpu:4:flops=3e10:bw=8e9:mem=1e10:lat=0");
  CHECK(co[2].flops == 3e10);
  CHECK(co[2].memory == 1e10);
  CHECK(co.route_between(1, 2).bandwidth == 8e9);
  CHECK(co.route_between(1, 2).latency == 0);
  cluster one = make_preset("cpu:1");
  CHECK(one.device_count() == 1);
  CHECK(one.links().empty());

  cluster d = make_preset("doppler-paper:8");
  CHECK(d.device_count() == 8);
  CHECK(d.link_specs().size() == 28);
  CHECK(d.total_flops() == 8e10);
  CHECK(d.transfer_time(0, 7, 1e10) == 1.0);  // zero latency, 1e10 B/s

  CHECK(preset_catalog().size() == 8);
  for (const auto& [name, what] : preset_catalog()) CHECK_FALSE(what.empty());
}

TEST_CASE("dgx1-v100 routes follow the hybrid cube-mesh") {
  cluster v = make_preset("dgx1-v100");
  // 2-link pairs carry 50 GB/s, 1-link pairs 25 GB/s, both one hop.
  for (auto [a, b] : {std::pair{"gpu0", "gpu1"}, {"gpu0", "gpu4"}, {"gpu2", "gpu6"}, {"gpu5", "gpu7"}}) {
    const route& r = v.route_between(dev(v, a), dev(v, b));
    CHECK(r.links.size() == 1);
    CHECK(r.bandwidth == 50e9);
  }
  for (auto [a, b] : {std::pair{"gpu0", "gpu2"}, {"gpu1", "gpu5"}, {"gpu3", "gpu7"}, {"gpu4", "gpu6"}}) {
    const route& r = v.route_between(dev(v, a), dev(v, b));
    CHECK(r.links.size() == 1);
    CHECK(r.bandwidth == 25e9);
  }
  // The 12 pairs without NVLink go through one other GPU, picking the widest of the 2-hop ways.
  int two_hop = 0;
  for (device_index i = 0; i < 8; ++i)
    for (device_index j = 0; j < 8; ++j)
      if (i != j && v.route_between(i, j).links.size() == 2) ++two_hop;
  CHECK(two_hop == 24);
  CHECK(path_ids(v, "gpu0", "gpu5") == "gpu0>gpu4>gpu5");  // 50+50 beats gpu1's 50+25
  CHECK(v.route_between(0, 5).bandwidth == 50e9);
  CHECK(v.route_between(0, 5).latency == doctest::Approx(1.4e-6));
  CHECK(path_ids(v, "gpu1", "gpu4") == "gpu1>gpu0>gpu4");
  // Hand-computed transfer times: latency + bytes / bottleneck.
  CHECK(v.transfer_time(0, 1, 1e9) == doctest::Approx(0.7e-6 + 1e9 / 50e9));
  CHECK(v.transfer_time(0, 2, 1e9) == doctest::Approx(0.7e-6 + 1e9 / 25e9));
  CHECK(v.transfer_time(0, 5, 2.5e8) == doctest::Approx(1.4e-6 + 2.5e8 / 50e9));
  CHECK(v.transfer_time(3, 3, 1e9) == 0.0);
  CHECK(v.route_between(3, 3).links.empty());
  CHECK(std::isinf(v.route_between(3, 3).bandwidth));
  CHECK(v.route_between(3, 3).time(1e9) == 0.0);
}

TEST_CASE("multi-node presets route through the right switches and links") {
  cluster h = make_preset("h100-2x8");
  CHECK(path_ids(h, "gpu0", "gpu1") == "gpu0>nvswitch0>gpu1");
  CHECK(h.route_between(0, 1).bandwidth == 450e9);
  CHECK(h.route_between(0, 1).latency == doctest::Approx(1e-6));
  CHECK(path_ids(h, "gpu9", "gpu15") == "gpu9>nvswitch1>gpu15");
  CHECK(path_ids(h, "gpu0", "gpu8") == "gpu0>net>gpu8");
  CHECK(path_ids(h, "gpu13", "gpu2") == "gpu13>net>gpu2");
  CHECK(h.route_between(0, 8).bandwidth == 50e9);
  CHECK(h.route_between(0, 8).latency == doctest::Approx(5e-6));
  CHECK(h.transfer_time(0, 8, 1e9) == doctest::Approx(5e-6 + 0.02));

  cluster d = make_preset("dgx-h100");
  CHECK(path_ids(d, "gpu2", "gpu7") == "gpu2>nvswitch>gpu7");
  CHECK(d.transfer_time(2, 7, 450e6) == doctest::Approx(1e-6 + 1e-3));

  cluster n = make_preset("ndv2-2");  // chassis 0 leaves by gpu0 -> gpu9, chassis 1 by gpu8 -> gpu1
  CHECK(path_ids(n, "gpu0", "gpu9") == "gpu0>gpu9");
  CHECK(path_ids(n, "gpu9", "gpu0").find("gpu8>gpu1") != std::string::npos);
  CHECK(path_ids(n, "gpu3", "gpu12").find("gpu0>gpu9") != std::string::npos);
  CHECK(n.route_between(dev(n, "gpu3"), dev(n, "gpu12")).bandwidth == 12.5e9);
  CHECK(n.route_between(dev(n, "gpu0"), dev(n, "gpu9")).latency == doctest::Approx(1.3e-6));
}

TEST_CASE("route order: latency first, then hops, then the widest bottleneck") {
  // a-b direct at 10 us; a-c-b at 1+1 us: the lower latency wins despite one more hop.
  cluster lat("lat", {unit("a"), unit("b"), unit("c")}, {},
              {{"a", "b", 1e12, 10e-6, true}, {"a", "c", 1e9, 1e-6, true}, {"c", "b", 1e9, 1e-6, true}});
  CHECK(path_ids(lat, "a", "b") == "a>c>b");
  CHECK(lat.transfer_time(0, 1, 1e3) == doctest::Approx(2e-6 + 1e3 / 1e9));
  // Equal latency: the direct, narrow link beats the wide detour through a switch.
  cluster hops("hops", {unit("a", device_kind::cpu), unit("b", device_kind::cpu)}, {"s"},
               {{"a", "b", 1e6, 0, true}, {"a", "s", 1e12, 0, true}, {"s", "b", 1e12, 0, true}});
  CHECK(path_ids(hops, "a", "b") == "a>b");
  // Equal latency and hops: the wider switch wins.
  cluster wide("wide", {unit("a"), unit("b")}, {"s1", "s2"},
               {{"a", "s1", 1e9, 1e-6, true}, {"s1", "b", 1e9, 1e-6, true},
                {"a", "s2", 2e9, 1e-6, true}, {"s2", "b", 3e9, 1e-6, true}});
  CHECK(path_ids(wide, "a", "b") == "a>s2>b");
  CHECK(wide.route_between(0, 1).bandwidth == 2e9);
  // Directed links: each way may take its own route.
  cluster ring("ring", {unit("a"), unit("b"), unit("c")}, {},
               {{"a", "b", 1e9, 0, false}, {"b", "c", 1e9, 0, false}, {"c", "a", 1e9, 0, false}});
  CHECK(path_ids(ring, "a", "b") == "a>b");
  CHECK(path_ids(ring, "b", "a") == "b>c>a");
  CHECK(ring.links().size() == 3);
  CHECK(ring.links()[2].spec == 2);
}

TEST_CASE("save and load give back every preset field by field") {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("doppler_test_cluster_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  for (const std::string& name : all_preset_names) {
    CAPTURE(name);
    cluster c = make_preset(name);
    check_same(c, parse_cluster(to_json_text(c)));
    std::string file = (dir / "c.json").string();
    save_cluster(c, file);
    cluster back = load_cluster(file);
    check_same(c, back);
    CHECK(to_json_text(back) == to_json_text(c));
    check_same(c, load_cluster_or_preset(file));
  }
  // Awkward doubles (within cluster_limits) survive exactly.
  cluster odd("odd",
              {{"x", device_kind::cpu, (0.1 + 0.2) * 1e10, 1e9 / 3, "h"},
               {"y", device_kind::gpu, 6.02214076e20, 1.0000000000000002, ""}},
              {}, {{"x", "y", 1e10 / 7, 5e-324, false}, {"y", "x", 123456789.123456789, 0, false}});
  check_same(odd, parse_cluster(to_json_text(odd)));
  fs::remove_all(dir);
}

TEST_CASE("the format's own example and a fixture file load") {
  cluster pair = load_cluster(data_dir + "pair.json");
  CHECK(pair.name() == "pair");
  CHECK(pair.device_count() == 2);
  CHECK(pair[1].host == "node0");
  CHECK(pair.links().size() == 2);
  CHECK(pair.transfer_time(0, 1, 2e10) == doctest::Approx(1.0 + 2e-6));
  CHECK(pair.find_device("gpu1") == device_index{1});
  CHECK_FALSE(pair.find_device("gpu9").has_value());
  // Unknown extra fields are ignored; latency, duplex, host and switches are optional.
  cluster extra = parse_cluster(R"({"format": "doppler-cluster/1", "future": 1, "devices": [
      {"id": "a", "kind": "cpu", "flops": 1, "memory": 1, "colour": "red"},
      {"id": "b", "kind": "cpu", "flops": 1, "memory": 1}],
    "links": [{"src": "a", "dst": "b", "bandwidth": 1}, {"src": "b", "dst": "a", "bandwidth": 2}]})");
  CHECK(extra.name().empty());
  CHECK(extra.route_between(1, 0).bandwidth == 2);
  CHECK(extra.route_between(0, 1).latency == 0);
  expect_error([] { load_cluster(data_dir + "unknown_endpoint.json"); }, errc::unknown_id,
               "unknown_endpoint.json: links[1].dst");
  expect_error([] { load_cluster(data_dir + "no_such_file.json"); }, errc::io, "no_such_file.json");
}

TEST_CASE("bad cluster files are rejected with the JSON path and the reason") {
  expect_error([] { parse_cluster("{\"format\": \"doppler-cluster/1\",\n \"devices\": [}", "bad.json"); },
               errc::bad_json, "line 2, column");
  expect_bad(R"({"devices": []})", errc::bad_format_tag, "format");
  expect_bad(R"({"format": "doppler-graph/1", "devices": []})", errc::bad_format_tag, "format");
  expect_bad(R"({"format": 1, "devices": []})", errc::bad_format_tag, "format");
  expect_bad(R"([1, 2])", errc::bad_type, "");
  expect_bad(R"({"format": "doppler-cluster/1"})", errc::missing_field, "devices");
  expect_bad(R"({"format": "doppler-cluster/1", "devices": {}})", errc::bad_type, "devices");
  expect_bad(doc(""), errc::bad_value, "devices");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1, "memory": 1},
                    {"id": "a", "kind": "gpu", "flops": 1, "memory": 1})"),
             errc::duplicate_id, "devices[1].id");
  expect_bad(doc(R"({"id": "", "kind": "gpu", "flops": 1, "memory": 1})"), errc::bad_value, "devices[0].id");
  expect_bad(doc(R"({"id": 7, "kind": "gpu", "flops": 1, "memory": 1})"), errc::bad_type, "devices[0].id");
  expect_bad(doc(R"("gpu0")"), errc::bad_type, "devices[0]");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 0, "memory": 1})"), errc::bad_value,
             "devices[0].flops");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": "1e12", "memory": 1})"), errc::bad_type,
             "devices[0].flops");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1, "memory": -5})"), errc::bad_value,
             "devices[0].memory");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1})"), errc::missing_field, "devices[0].memory");
  expect_bad(doc(R"({"id": "a", "kind": "tpu", "flops": 1, "memory": 1})"), errc::unknown_kind,
             "devices[0].kind");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1, "memory": 1, "host": 3})"), errc::bad_type,
             "devices[0].host");
  expect_bad(with_links(ab, R"(["a"])"), errc::duplicate_id, "switches[0]");
  expect_bad(with_links(ab, R"(["s", "s"])"), errc::duplicate_id, "switches[1]");
  expect_bad(with_links(ab, R"([1])"), errc::bad_type, "switches[0]");
  expect_bad(with_links(R"({"src": "a", "dst": "c", "bandwidth": 1})"), errc::unknown_id, "links[0].dst");
  expect_bad(with_links(ab + R"(, {"src": "z", "dst": "a", "bandwidth": 1})"), errc::unknown_id,
             "links[1].src");
  expect_bad(with_links(R"({"src": "a", "dst": "a", "bandwidth": 1})"), errc::bad_value, "links[0].dst");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": -1e9, "duplex": true})"), errc::bad_value,
             "links[0].bandwidth");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "duplex": true})"), errc::missing_field,
             "links[0].bandwidth");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1, "latency": "NaN"})"), errc::bad_type,
             "links[0].latency");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1, "latency": -1e-6})"), errc::bad_value,
             "links[0].latency");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1, "duplex": "yes"})"), errc::bad_type,
             "links[0].duplex");
  expect_bad(with_links(R"([])"), errc::bad_type, "links[0]");
  // A second link between the same two nodes: routes take one, so the simulator ignored the other's
  // bandwidth (over two 1e9 B/s links 2 GB took 2 s, as over one) and only the comm planner refused it.
  expect_bad(with_links(ab + ", " + ab), errc::bad_value, "links[1]");
  expect_error([&] { parse_cluster(with_links(ab + R"(, {"src": "b", "dst": "a", "bandwidth": 1})")); },
               errc::bad_value, "a second link b -> a (links[0] already joins them): merge them");
  // Finite but absurd numbers (typos, unit mix-ups) are refused by cluster_limits, naming the range.
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1e-200, "memory": 1})"), errc::bad_value,
             "devices[0].flops");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1e300, "memory": 1})"), errc::bad_value,
             "devices[0].flops");
  expect_bad(doc(R"({"id": "a", "kind": "gpu", "flops": 1, "memory": 1e-9})"), errc::bad_value,
             "devices[0].memory");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1e-30, "duplex": true})"), errc::bad_value,
             "links[0].bandwidth");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1e20, "duplex": true})"), errc::bad_value,
             "links[0].bandwidth");
  expect_bad(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1, "latency": 1e6, "duplex": true})"),
             errc::bad_value, "links[0].latency");
  expect_error([] { parse_cluster(doc(R"({"id": "a", "kind": "gpu", "flops": 1e-200, "memory": 1})")); },
               errc::bad_value, "between 1 and 1e+21 FLOP/s, got 1e-200");
  // The limits themselves are accepted (the test clusters above use flops 1 and memory 1).
  CHECK_NOTHROW(parse_cluster(doc(R"({"id": "a", "kind": "gpu", "flops": 1e21, "memory": 1e18})")));
  const std::string huge = with_links(R"({"src": "a", "dst": "b", "bandwidth": 1, "latency": 1e999})");
  expect_error([&] { parse_cluster(huge, "bad.json"); }, errc::bad_json, "bad.json");
  // Two islands, and a one-way link: unreachable pairs named by their devices.
  expect_bad(with_links(""), errc::unreachable, "links");
  expect_error([] { parse_cluster(with_links(R"({"src": "a", "dst": "b", "bandwidth": 1})")); },
               errc::unreachable, "device \"b\" cannot reach device \"a\"");
  expect_error(
      [] {
        parse_cluster(doc(two_gpus + R"(, {"id": "c", "kind": "cpu", "flops": 1, "memory": 1},
                                         {"id": "d", "kind": "cpu", "flops": 1, "memory": 1})",
                          R"(, "links": [{"src": "a", "dst": "b", "bandwidth": 1, "duplex": true},
                                        {"src": "c", "dst": "d", "bandwidth": 1, "duplex": true}])"));
      },
      errc::unreachable, "device \"a\" cannot reach device \"c\"");
}

TEST_CASE("the constructor checks what the API passes") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  using devs = std::vector<device>;
  expect_error([&] { cluster("x", devs{{"a", device_kind::gpu, nan, 1, ""}}, {}, {}); }, errc::bad_value,
               "devices[0].flops");
  expect_error([&] { cluster("x", devs{{"a", device_kind::gpu, 1, inf, ""}}, {}, {}); }, errc::bad_value,
               "devices[0].memory");
  expect_error([&] { cluster("x", devs{unit("a"), unit("b")}, {}, {{"a", "b", 1, inf, true}}); },
               errc::bad_value, "links[0].latency");
  expect_error([&] { cluster("x", devs{unit("a"), unit("b")}, {}, {{"a", "b", nan, 0, true}}); },
               errc::bad_value, "links[0].bandwidth");
  expect_error([&] { cluster("x", devs{{"a", static_cast<device_kind>(9), 1, 1, ""}}, {}, {}); },
               errc::unknown_kind, "devices[0].kind");
  CHECK(parse_device_kind("gpu") == device_kind::gpu);
  CHECK(parse_device_kind("cpu") == device_kind::cpu);
  CHECK_FALSE(parse_device_kind("GPU").has_value());
  CHECK(to_string(device_kind::cpu) == "cpu");
}

TEST_CASE("bad preset names list the valid presets") {
  for (const char* name : {"cpu:0", "cpu:x", "cpu:", "cpu:4:flops=abc", "cpu:4:flops=-1", "cpu:4:zzz=1",
                           "cpu:4:bw", "cpu:2:lat=inf", "cpu:100000", "doppler-paper:0",
                           "doppler-paper:2x"}) {
    CAPTURE(name);
    expect_error([&] { make_preset(name); }, errc::bad_argument, "valid presets: p100x4, dgx1-v100");
  }
  expect_error([] { make_preset("foo"); }, errc::unknown_kind, "doppler-paper:N");
  // Numbers a cpu:N option parses but the cluster refuses (cluster_limits): named with the preset.
  expect_error([] { make_preset("cpu:2:flops=0.5"); }, errc::bad_value, "cpu:2:flops=0.5: devices[0].flops");
  expect_error([] { make_preset("cpu:2:bw=1e20"); }, errc::bad_value, "cpu:2:bw=1e20: links[0].bandwidth");
  expect_error([] { make_preset(""); }, errc::unknown_kind, "valid presets");
  expect_error([] { load_cluster_or_preset("foo"); }, errc::unknown_kind, "valid presets");
  expect_error([] { load_cluster_or_preset("nowhere/c.json"); }, errc::io, "nowhere/c.json");
  CHECK(load_cluster_or_preset("dgx-h100").device_count() == 8);
}
