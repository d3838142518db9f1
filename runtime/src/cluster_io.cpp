// Reading and writing `doppler-cluster/1` (docs/clusters.md).
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include "json_util.hpp"

namespace doppler {

namespace {

constexpr std::string_view format_tag = "doppler-cluster/1";

using detail::json;
using detail::json_reader;

device read_device(const json_reader& r, const json& v, const std::string& p) {
  r.expect_object(v, p);
  device d;
  d.id = r.string(v, "id", p);
  std::string kind = r.string(v, "kind", p);
  auto k = parse_device_kind(kind);
  if (!k) r.fail(errc::unknown_kind, json_reader::join(p, "kind"), "\"" + kind + "\" is not gpu or cpu");
  d.kind = *k;
  d.flops = r.number(v, "flops", p, true);
  d.memory = r.number(v, "memory", p, true);
  d.host = r.opt_string(v, "host", p).value_or("");
  return d;
}

link_spec read_link(const json_reader& r, const json& v, const std::string& p) {
  r.expect_object(v, p);
  link_spec l;
  l.src = r.string(v, "src", p);
  l.dst = r.string(v, "dst", p);
  l.bandwidth = r.number(v, "bandwidth", p, true);
  l.latency = r.opt_number(v, "latency", p, false, true).value_or(0.0);
  l.duplex = r.opt_bool(v, "duplex", p).value_or(false);
  return l;
}

}  // namespace

cluster parse_cluster(std::string_view text, const std::string& file) {
  json root = parse_json(text, file);
  json_reader r(file);
  r.expect_format(root, format_tag);
  std::string name = r.opt_string(root, "name", "").value_or("");

  std::vector<device> devices;
  const json* ds = r.array(root, "devices", "", true);
  for (std::size_t i = 0; i < ds->size(); ++i)
    devices.push_back(read_device(r, (*ds)[i], json_reader::index("devices", i)));

  std::vector<std::string> switches;
  if (const json* ss = r.array(root, "switches", "", false)) {
    for (std::size_t i = 0; i < ss->size(); ++i) {
      const json& s = (*ss)[i];
      if (!s.is_string())
        r.fail(errc::bad_type, json_reader::index("switches", i),
               "must be a string (a switch id), got " + std::string(s.type_name()));
      switches.push_back(s.get<std::string>());
    }
  }

  std::vector<link_spec> links;
  if (const json* ls = r.array(root, "links", "", false))
    for (std::size_t i = 0; i < ls->size(); ++i)
      links.push_back(read_link(r, (*ls)[i], json_reader::index("links", i)));

  try {
    return cluster(std::move(name), std::move(devices), std::move(switches), std::move(links));
  } catch (const error& e) {
    if (!e.file().empty()) throw;
    throw e.with_file(file);
  }
}

cluster load_cluster(const std::string& path) { return parse_cluster(read_file(path), path); }

std::string to_json_text(const cluster& c) {
  // One device, switch list and link per line: diffs stay readable and the file greps well.
  // nlohmann writes doubles in their shortest round-trip form, so the reader gets them back exactly.
  using ordered = nlohmann::ordered_json;
  std::string out = "{\n  \"format\": " + ordered(format_tag).dump() + ",\n";
  out += "  \"name\": " + ordered(c.name()).dump() + ",\n";
  out += "  \"devices\": [";
  bool first = true;
  for (const device& d : c.devices()) {
    ordered o;
    o["id"] = d.id;
    o["kind"] = std::string(to_string(d.kind));
    o["flops"] = d.flops;
    o["memory"] = d.memory;
    if (!d.host.empty()) o["host"] = d.host;
    out += (first ? "\n    " : ",\n    ") + o.dump();
    first = false;
  }
  out += "\n  ],\n  \"switches\": [";
  first = true;
  for (const std::string& s : c.switches()) {
    out += (first ? "" : ", ") + ordered(s).dump();
    first = false;
  }
  out += "],\n  \"links\": [";
  first = true;
  for (const link_spec& l : c.link_specs()) {
    ordered o;
    o["src"] = l.src;
    o["dst"] = l.dst;
    o["bandwidth"] = l.bandwidth;
    o["latency"] = l.latency;
    o["duplex"] = l.duplex;
    out += (first ? "\n    " : ",\n    ") + o.dump();
    first = false;
  }
  out += first ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

void save_cluster(const cluster& c, const std::string& path) { write_file_atomic(path, to_json_text(c)); }

}  // namespace doppler
