// `doppler-placement/1` and `doppler-costs/1`: round trips, and bad inputs rejected with the error
// class and the JSON path.
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/placement.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

using namespace doppler;

namespace {

graph tiny() {
  graph_builder b("tiny-mlp");
  b.add(op_spec{"x", op_kind::synthetic, {}, {}, {}, 1.0, 8.0, ""});
  b.add(op_spec{"h", op_kind::synthetic, {"x"}, {}, {}, 1.0, 8.0, ""});
  b.add(op_spec{"a", op_kind::synthetic, {"h"}, {}, {}, 1.0, 8.0, ""});
  b.add(op_spec{"s", op_kind::synthetic, {"a", "x"}, {}, {}, 1.0, 8.0, ""});
  return std::move(b).build();
}

const graph g = tiny();
const cluster c = make_preset("doppler-paper:2");

std::string dev(device_index d) { return c[d].id; }

/// A placement text with the given assignment and order bodies.
std::string text(const std::string& assignment, const std::string& order = "") {
  std::string s = R"({"format": "doppler-placement/1", "graph": "tiny-mlp", "method": "hand", "assignment": )" +
                  assignment;
  if (!order.empty()) s += R"(, "order": )" + order;
  return s + "}";
}

std::string good_assignment() {
  return R"({"x": ")" + dev(0) + R"(", "h": ")" + dev(0) + R"(", "a": ")" + dev(1) + R"(", "s": ")" + dev(1) + R"("})";
}

void expect_bad(const std::string& t, errc code, const std::string& path) {
  CAPTURE(t);
  try {
    parse_placement(t, g, c, "p.json");
    FAIL("accepted");
  } catch (const error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(e.path() == path, e.what());
    CHECK_MESSAGE(e.file() == "p.json", e.what());
  }
}

void expect_bad_costs(const std::string& t, errc code, const std::string& path) {
  CAPTURE(t);
  try {
    cost_model::parse(t, "c.json");
    FAIL("accepted");
  } catch (const error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(e.path() == path, e.what());
    CHECK_MESSAGE(std::string(e.what()).find("c.json") != std::string::npos, e.what());
  }
}

}  // namespace

TEST_CASE("placement: parse, write, round trip with and without order") {
  placement p = parse_placement(text(good_assignment(), R"(["x", "h", "a", "s"])"), g, c);
  CHECK(p.method == "hand");
  CHECK(p.device == std::vector<device_index>{0, 0, 1, 1});
  CHECK(p.order == std::vector<op_index>{0, 1, 2, 3});
  placement q = parse_placement(to_json_text(p, g, c), g, c);
  CHECK(q.device == p.device);
  CHECK(q.order == p.order);
  CHECK(q.method == p.method);

  placement no_order{{1, 0, 1, 0}, {}, "rr"};
  placement r = parse_placement(to_json_text(no_order, g, c), g, c);
  CHECK(r.device == no_order.device);
  CHECK(r.order.empty());

  auto path = (std::filesystem::temp_directory_path() / "doppler_test_placement.json").string();
  save_placement(p, g, c, path);
  placement loaded = load_placement(path, g, c);
  CHECK(loaded.device == p.device);
  CHECK(loaded.order == p.order);
  std::filesystem::remove(path);
  CHECK_THROWS_AS(load_placement(path, g, c), error);
}

TEST_CASE("placement: bad inputs name the error class and the JSON path") {
  const std::string ga = good_assignment();
  expect_bad(R"({"format": "doppler-graph/1", "assignment": {}})", errc::bad_format_tag, "format");
  expect_bad(R"({"format": "doppler-placement/1"})", errc::missing_field, "assignment");
  expect_bad(R"({"format": "doppler-placement/1", "assignment": [1]})", errc::bad_type, "assignment");
  expect_bad(text(R"({"x": ")" + dev(0) + R"(", "nope": ")" + dev(0) + "\"}"), errc::unknown_id, "assignment.nope");
  expect_bad(text(R"({"x": "tpu9", "h": ")" + dev(0) + "\"}"), errc::unknown_id, "assignment.x");
  expect_bad(text(R"({"x": 3})"), errc::bad_type, "assignment.x");
  expect_bad(text(R"({"x": ")" + dev(0) + R"(", "h": ")" + dev(0) + R"(", "a": ")" + dev(1) + "\"}"),
             errc::missing_field, "assignment.s");
  expect_bad(text(ga, R"(["x", "h", "a"])"), errc::bad_value, "order");
  expect_bad(text(ga, R"(["x", "h", "h", "s"])"), errc::duplicate_id, "order[2]");
  expect_bad(text(ga, R"(["x", "h", "zz", "s"])"), errc::unknown_id, "order[2]");
  expect_bad(text(ga, R"(["x", "h", 5, "s"])"), errc::bad_type, "order[2]");
  expect_bad(text(ga, R"(["x", "a", "h", "s"])"), errc::bad_value, "order[1]");  // a before its input h
  expect_bad(text(ga, R"({"x": 0})"), errc::bad_type, "order");
  expect_bad("{\"format\": ", errc::bad_json, "");
  // graph, cluster and method are informative but strings (a fuzzed -1e308 for cluster passed).
  for (const char* field : {"graph", "cluster", "method"})
    expect_bad(R"({"format": "doppler-placement/1", ")" + std::string(field) + R"(": -1e308, "assignment": )" +
                   good_assignment() + "}",
               errc::bad_type, field);
  // A repeated key names its path (the last value once won silently), also inside an array.
  expect_bad(text(R"({"x": ")" + dev(1) + R"(", "x": ")" + dev(0) + R"(", "h": ")" + dev(0) + R"(", "a": ")" + dev(1) +
                  R"(", "s": ")" + dev(1) + "\"}"),
             errc::bad_value, "assignment.x");
  expect_bad(R"({"format": "doppler-placement/1", "format": "doppler-placement/1", "assignment": {}})", errc::bad_value,
             "format");
  expect_bad(R"({"format": "doppler-placement/1", "assignment": {}, "extra": [0, {"k": 1, "k": 2}]})", errc::bad_value,
             "extra[1].k");
  // nlohmann's lexer ends the input at a NUL byte: a whole placement, then a NUL and anything, once
  // parsed; a NUL inside the document read as "unexpected end of input".
  const std::string whole =
      text(R"({"x": ")" + dev(0) + R"(", "h": ")" + dev(0) + R"(", "a": ")" + dev(1) + R"(", "s": ")" + dev(1) + "\"}");
  CHECK_NOTHROW(parse_placement(whole, g, c, "p.json"));
  for (const std::string& t : {whole + std::string("\0{junk", 6), std::string("\n\n  \0", 5) + whole}) {
    expect_bad(t, errc::bad_json, "");
    try {
      parse_placement(t, g, c, "p.json");
    } catch (const error& e) {
      CHECK(std::string(e.what()).find("a NUL byte at line") != std::string::npos);
    }
  }
  try {
    parse_placement(std::string("\n\n  \0", 5) + whole, g, c, "p.json");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("line 3, column 3 (byte 4)") != std::string::npos);
  }
}

TEST_CASE("placement: check_placement rejects incomplete and inconsistent placements") {
  CHECK_NOTHROW(check_placement(placement{{0, 1, 0, 1}, {}, ""}, g, c));
  CHECK_THROWS_AS(check_placement(placement{{0, 1, 0}, {}, ""}, g, c), error);
  try {
    check_placement(placement{{0, 1, 9, 1}, {}, ""}, g, c);
    FAIL("accepted");
  } catch (const error& e) {
    CHECK(e.code() == errc::unknown_id);
    CHECK(e.path() == "assignment.a");
  }
  CHECK_THROWS_AS(check_placement(placement{{0, 1, 2, 1}, {}, ""}, g, c), error);  // one past the last device
  CHECK_THROWS_AS(check_placement(placement{{0, 0, 0, 0}, {0, 1, 2}, ""}, g, c), error);
  CHECK_THROWS_AS(check_placement(placement{{0, 0, 0, 0}, {0, 1, 1, 3}, ""}, g, c), error);
  CHECK_THROWS_AS(check_placement(placement{{0, 0, 0, 0}, {3, 0, 1, 2}, ""}, g, c), error);
  CHECK_THROWS_AS(check_placement(placement{{0, 0, 0, 0}, {0, 1, 2, 8}, ""}, g, c), error);
  CHECK_THROWS_AS(to_json_text(placement{{0, 0}, {}, ""}, g, c), error);
}

TEST_CASE("cost model: defaults, set_efficiency, file round trip") {
  cost_model cm;
  CHECK(cm.efficiency(op_kind::synthetic) == 1.0);
  CHECK(cm.efficiency(op_kind::matmul) == doctest::Approx(0.7));
  CHECK(cm.efficiency(op_kind::softmax) < 0.5);
  device d{"g", device_kind::gpu, 1e12, 1e9, ""};
  op o;
  o.kind = op_kind::synthetic;
  o.flops = 1e12;
  CHECK(cm.op_time(o, d) == 1.0);
  o.kind = op_kind::matmul;
  CHECK(cm.op_time(o, d) == doctest::Approx(1.0 / 0.7));
  o.flops = 0;
  CHECK(cm.op_time(o, d) == 0.0);

  cm.set_efficiency(op_kind::matmul, 0.55).set_efficiency(op_kind::rope, 1.0 / 3.0);
  cost_model back = cost_model::parse(cm.to_json_text());
  for (op_kind k : all_op_kinds()) CHECK(back.efficiency(k) == cm.efficiency(k));
  // Kinds not named keep their defaults.
  cost_model partial = cost_model::parse(R"({"format": "doppler-costs/1", "efficiency": {"add": 0.5}})");
  CHECK(partial.efficiency(op_kind::add) == 0.5);
  CHECK(partial.efficiency(op_kind::matmul) == cost_model{}.efficiency(op_kind::matmul));

  auto path = (std::filesystem::temp_directory_path() / "doppler_test_costs.json").string();
  write_file_atomic(path, cm.to_json_text());
  CHECK(cost_model::load(path).efficiency(op_kind::matmul) == 0.55);
  std::filesystem::remove(path);

  CHECK_THROWS_AS(cm.set_efficiency(op_kind::add, 0), error);
  CHECK_THROWS_AS(cm.set_efficiency(op_kind::add, 1.5), error);
  CHECK_THROWS_AS(cm.set_efficiency(op_kind::add, std::nan("")), error);
}

TEST_CASE("cost model: bad files name the error class and the JSON path") {
  expect_bad_costs(R"({"efficiency": {}})", errc::bad_format_tag, "format");
  expect_bad_costs(R"({"format": "doppler-costs/1"})", errc::missing_field, "efficiency");
  expect_bad_costs(R"({"format": "doppler-costs/1", "efficiency": []})", errc::bad_type, "efficiency");
  expect_bad_costs(R"({"format": "doppler-costs/1", "efficiency": {"conv": 0.5}})", errc::unknown_kind,
                   "efficiency.conv");
  expect_bad_costs(R"({"format": "doppler-costs/1", "efficiency": {"matmul": "fast"}})", errc::bad_type,
                   "efficiency.matmul");
  expect_bad_costs(R"({"format": "doppler-costs/1", "efficiency": {"matmul": 0}})", errc::bad_value,
                   "efficiency.matmul");
  expect_bad_costs(R"({"format": "doppler-costs/1", "efficiency": {"add": 1.01}})", errc::bad_value,
                   "efficiency.add");
  expect_bad_costs(R"({"format": "doppler-costs/1", "efficiency": {"add": -0.5}})", errc::bad_value,
                   "efficiency.add");
}
