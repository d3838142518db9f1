// The cost model's efficiency table and its `doppler-costs/1` reader/writer (docs/simulator.md).
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include "json_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

namespace doppler {

namespace {

constexpr std::string_view format_tag = "doppler-costs/1";

/// Default fraction of a device's sustained FLOP/s each kind reaches. Matmuls are compute bound;
/// elementwise and normalization kernels are memory bound and reach a small fraction; ops with no
/// FLOPs (input, transpose, concat, slice) take no time whatever their efficiency unless the table
/// gives their kind a bandwidth (none by default); synthetic ops are exact by definition
/// (docs/simulator.md keeps this table in step).
constexpr double default_efficiency(op_kind k) noexcept {
  switch (k) {
    case op_kind::matmul: return 0.7;
    case op_kind::add:
    case op_kind::mul:
    case op_kind::scale:
    case op_kind::exp:
    case op_kind::reduce_sum: return 0.1;
    case op_kind::silu:
    case op_kind::gelu:
    case op_kind::rope: return 0.15;
    case op_kind::softmax:
    case op_kind::rmsnorm: return 0.2;
    case op_kind::input:
    case op_kind::transpose:
    case op_kind::concat:
    case op_kind::slice:
    case op_kind::synthetic: return 1.0;
  }
  return 1.0;
}

// Ranges: beyond them a value is a typo, not a measurement, and its times overflow the bound's sums
// (an efficiency of 1e-300 made a 2e293 s makespan with an infinite lower bound).
bool valid_efficiency(double e) noexcept { return e >= 1e-6 && e <= 1; }
bool valid_bandwidth(double b) noexcept { return b == 0 || (b >= 1e3 && std::isfinite(b)); }
bool valid_overhead(double s) noexcept { return s >= 0 && s <= 1e3; }
bool valid_host_cores(double c) noexcept { return c == 0 || (c >= 0.01 && c <= 1e6); }
// What each range says, in the setters' errors and the file reader's alike.
constexpr const char* efficiency_rule = "must be in [1e-6, 1]";
constexpr const char* bandwidth_rule = "must be 0 (no memory term) or output bytes/s >= 1e3";
constexpr const char* overhead_rule = "must be seconds in [0, 1e3]";
constexpr const char* host_cores_rule = "must be 0 (unlimited) or in [0.01, 1e6]";

}  // namespace

cost_model::cost_model() {
  for (op_kind k : all_op_kinds()) efficiency_[static_cast<int>(k)] = default_efficiency(k);
}

cost_model& cost_model::set_efficiency(op_kind k, double e) {
  if (!valid_efficiency(e))
    throw error(errc::bad_argument, fmt::format("efficiency of {} {}, got {:g}", to_string(k), efficiency_rule, e));
  efficiency_[static_cast<int>(k)] = e;
  return *this;
}

cost_model& cost_model::set_bandwidth(op_kind k, double b) {
  if (!valid_bandwidth(b))
    throw error(errc::bad_argument, fmt::format("bandwidth of {} {}, got {:g}", to_string(k), bandwidth_rule, b));
  bandwidth_[static_cast<int>(k)] = b;
  return *this;
}

cost_model& cost_model::set_overhead(double s) {
  if (!valid_overhead(s))
    throw error(errc::bad_argument, fmt::format("overhead {}, got {:g}", overhead_rule, s));
  overhead_ = s;
  return *this;
}

cost_model& cost_model::set_host_cores(double c) {
  if (!valid_host_cores(c))
    throw error(errc::bad_argument, fmt::format("host_cores {}, got {:g}", host_cores_rule, c));
  host_cores_ = c;
  return *this;
}

cost_model cost_model::parse(std::string_view text, const std::string& file) {
  using detail::json;
  using detail::json_reader;
  json root = parse_json(text, file);
  json_reader r(file);
  r.expect_format(root, format_tag);
  // A misspelt field ("bandwith", "overhed") would silently keep the default: refused.
  static constexpr std::string_view fields[] = {"format", "efficiency", "bandwidth", "overhead", "host_cores"};
  for (const auto& [key, value] : root.items())
    if (std::find(std::begin(fields), std::end(fields), key) == std::end(fields))
      r.fail(errc::bad_value, key, fmt::format("unknown field (a doppler-costs/1 file has {})", fmt::join(fields, ", ")));
  auto it = root.find("efficiency");
  if (it == root.end()) r.fail(errc::missing_field, "efficiency", "required object is missing");
  r.expect_object(*it, "efficiency");
  cost_model cm;
  for (const auto& [name, value] : it->items()) {
    std::string path = json_reader::join("efficiency", name.c_str());
    auto kind = parse_op_kind(name);
    if (!kind) r.fail(errc::unknown_kind, path, "\"" + name + "\" is not an op kind");
    if (!value.is_number())
      r.fail(errc::bad_type, path, "must be a number, got " + std::string(value.type_name()));
    double e = value.get<double>();
    if (!valid_efficiency(e)) r.fail(errc::bad_value, path, std::string(efficiency_rule) + ", got " + value.dump());
    cm.efficiency_[static_cast<int>(*kind)] = e;
  }
  // Optional fields (absent in files written before they existed: those keep the FLOP-only model).
  if (auto b = root.find("bandwidth"); b != root.end()) {
    r.expect_object(*b, "bandwidth");
    for (const auto& [name, value] : b->items()) {
      std::string path = json_reader::join("bandwidth", name.c_str());
      auto kind = parse_op_kind(name);
      if (!kind) r.fail(errc::unknown_kind, path, "\"" + name + "\" is not an op kind");
      if (!value.is_number())
        r.fail(errc::bad_type, path, "must be a number, got " + std::string(value.type_name()));
      double x = value.get<double>();
      if (!valid_bandwidth(x))
        r.fail(errc::bad_value, path, std::string(bandwidth_rule) + ", got " + value.dump());
      cm.bandwidth_[static_cast<int>(*kind)] = x;
    }
  }
  auto scalar = [&](const char* field, double& into, bool (*valid)(double) noexcept, const char* what) {
    auto f = root.find(field);
    if (f == root.end()) return;
    if (!f->is_number()) r.fail(errc::bad_type, field, "must be a number, got " + std::string(f->type_name()));
    double x = f->get<double>();
    if (!valid(x)) r.fail(errc::bad_value, field, std::string(what) + ", got " + f->dump());
    into = x;
  };
  scalar("overhead", cm.overhead_, valid_overhead, overhead_rule);
  scalar("host_cores", cm.host_cores_, valid_host_cores, host_cores_rule);
  return cm;
}

cost_model cost_model::load(const std::string& path) { return parse(read_file(path), path); }

std::string cost_model::to_json_text() const {
  // One kind per line, every kind written: the file documents the whole table it was made from.
  using ordered = nlohmann::ordered_json;
  std::string out = "{\n  \"format\": " + ordered(format_tag).dump() + ",\n  \"efficiency\": {";
  bool first = true;
  for (op_kind k : all_op_kinds()) {
    out += first ? "\n    " : ",\n    ";
    out += ordered(std::string(to_string(k))).dump() + ": " + ordered(efficiency(k)).dump();
    first = false;
  }
  out += "\n  },\n  \"bandwidth\": {";
  first = true;
  for (op_kind k : all_op_kinds()) {
    if (bandwidth(k) <= 0) continue;  // unset kinds have no memory term
    out += first ? "\n    " : ",\n    ";
    out += ordered(std::string(to_string(k))).dump() + ": " + ordered(bandwidth(k)).dump();
    first = false;
  }
  out += first ? "},\n" : "\n  },\n";
  out += "  \"overhead\": " + ordered(overhead_).dump() + ",\n  \"host_cores\": " + ordered(host_cores_).dump() +
         "\n}\n";
  return out;
}

}  // namespace doppler
