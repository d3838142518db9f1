// Placements: validation and the `doppler-placement/1` reader/writer (docs/formats.md).
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/placement.hpp>

#include "json_util.hpp"

namespace doppler {

namespace {

constexpr std::string_view format_tag = "doppler-placement/1";
constexpr op_index unset = UINT32_MAX;

using detail::json;
using detail::json_reader;

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

/// Checks that `order` is a permutation of the ops and topological. `at(i)` is the JSON path of
/// entry i (or "order" for an in-memory check); errors are thrown through `fail`.
template <class Fail>
void check_order(const std::vector<op_index>& order, const graph& g, const Fail& fail) {
  if (order.size() != g.size())
    fail(errc::bad_value, std::string("order"),
         "has " + std::to_string(order.size()) + " entries; the graph has " +
             std::to_string(g.size()) + " ops (it must list every op once)");
  std::vector<op_index> pos(g.size(), unset);
  for (std::size_t i = 0; i < order.size(); ++i) {
    op_index v = order[i];
    std::string p = json_reader::index("order", i);
    if (v >= g.size()) fail(errc::unknown_id, p, "op index " + std::to_string(v) + " is out of range");
    if (pos[v] != unset)
      fail(errc::duplicate_id, p,
           "op " + in_quotes(g[v].id) + " already appears at order[" + std::to_string(pos[v]) + "]");
    pos[v] = static_cast<op_index>(i);
  }
  for (std::size_t i = 0; i < order.size(); ++i)
    for (op_index u : g.preds(order[i]))
      if (pos[u] > i)
        fail(errc::bad_value, json_reader::index("order", i),
             "not topological: op " + in_quotes(g[order[i]].id) + " comes before its input " +
                 in_quotes(g[u].id) + " (order[" + std::to_string(pos[u]) + "])");
}

}  // namespace

void check_placement(const placement& p, const graph& g, const cluster& c) {
  auto fail = [](errc code, const std::string& path, const std::string& reason) {
    throw error(code, "", path, reason);
  };
  if (p.device.size() != g.size())
    fail(errc::bad_value, "assignment",
         "places " + std::to_string(p.device.size()) + " ops; the graph has " +
             std::to_string(g.size()));
  for (op_index v = 0; v < g.size(); ++v)
    if (p.device[v] >= c.device_count())
      fail(errc::unknown_id, "assignment." + g[v].id,
           "device index " + std::to_string(p.device[v]) + " is out of range; the cluster has " +
               std::to_string(c.device_count()) + " devices");
  if (!p.order.empty()) check_order(p.order, g, fail);
}

std::string to_json_text(const placement& p, const graph& g, const cluster& c) {
  check_placement(p, g, c);
  using ordered = nlohmann::ordered_json;
  // One op per line, in graph order: placements of big graphs stay greppable and diffable.
  std::string out = "{\n  \"format\": " + ordered(format_tag).dump() + ",\n";
  out += "  \"graph\": " + ordered(g.name()).dump() + ",\n";
  out += "  \"cluster\": " + ordered(c.name()).dump() + ",\n";
  out += "  \"method\": " + ordered(p.method).dump() + ",\n";
  out += "  \"assignment\": {";
  for (op_index v = 0; v < g.size(); ++v) {
    out += v == 0 ? "\n    " : ",\n    ";
    out += ordered(g[v].id).dump() + ": " + ordered(c[p.device[v]].id).dump();
  }
  out += g.size() == 0 ? "}" : "\n  }";
  if (!p.order.empty()) {
    out += ",\n  \"order\": [";
    for (std::size_t i = 0; i < p.order.size(); ++i) {
      out += i == 0 ? "" : (i % 16 == 0 ? ",\n    " : ", ");
      out += ordered(g[p.order[i]].id).dump();
    }
    out += "]";
  }
  out += "\n}\n";
  return out;
}

placement parse_placement(std::string_view text, const graph& g, const cluster& c,
                          const std::string& file) {
  json root = parse_json(text, file);
  json_reader r(file);
  r.expect_format(root, format_tag);
  placement p;
  p.method = r.opt_string(root, "method", "").value_or("");
  // What it was made for: informative, not compared with the graph and cluster given, but a string.
  r.opt_string(root, "graph", "");
  r.opt_string(root, "cluster", "");

  auto it = root.find("assignment");
  if (it == root.end()) r.fail(errc::missing_field, "assignment", "required object is missing");
  r.expect_object(*it, "assignment");
  std::vector<device_index> device(g.size(), unset);
  for (const auto& [id, value] : it->items()) {
    std::string path = "assignment." + id;
    auto v = g.find(id);
    if (!v) r.fail(errc::unknown_id, path, "the graph has no op " + in_quotes(id));
    if (!value.is_string())
      r.fail(errc::bad_type, path, "must be a string (a device id), got " + std::string(value.type_name()));
    const auto& dev = value.get_ref<const std::string&>();
    auto d = c.find_device(dev);
    if (!d) r.fail(errc::unknown_id, path, "the cluster has no device " + in_quotes(dev));
    device[*v] = *d;
  }
  for (op_index v = 0; v < g.size(); ++v)
    if (device[v] == unset)
      r.fail(errc::missing_field, "assignment." + g[v].id, "op " + in_quotes(g[v].id) + " is not placed");
  p.device = std::move(device);

  if (const json* order = r.array(root, "order", "", false)) {
    p.order.reserve(order->size());
    for (std::size_t i = 0; i < order->size(); ++i) {
      const json& e = (*order)[i];
      std::string path = json_reader::index("order", i);
      if (!e.is_string())
        r.fail(errc::bad_type, path, "must be a string (an op id), got " + std::string(e.type_name()));
      const auto& id = e.get_ref<const std::string&>();
      auto v = g.find(id);
      if (!v) r.fail(errc::unknown_id, path, "the graph has no op " + in_quotes(id));
      p.order.push_back(*v);
    }
    check_order(p.order, g, [&](errc code, const std::string& path, const std::string& reason) {
      r.fail(code, path, reason);
    });
  }
  return p;
}

placement load_placement(const std::string& path, const graph& g, const cluster& c) {
  return parse_placement(read_file(path), g, c, path);
}

void save_placement(const placement& p, const graph& g, const cluster& c, const std::string& path) {
  write_file_atomic(path, to_json_text(p, g, c));
}

}  // namespace doppler
