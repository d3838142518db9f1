// `doppler-schedule/1` reader and writer.
#include "json_common.hpp"

#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace doppler::comm {

namespace {
constexpr const char* schedule_tag = "doppler-schedule/1";
}

schedule parse_schedule(std::string_view text, const cluster& c, const std::string& file) {
  using namespace detail;
  json root = doppler::parse_json(text, file);
  json_reader r(file);
  r.expect_format(root, schedule_tag);
  node_names names(c);
  schedule s;
  s.topology = r.opt_string(root, "topology", "").value_or("");
  if (!s.topology.empty() && s.topology != c.name())
    r.fail(errc::bad_value, "topology",
           "the schedule is for \"" + s.topology + "\", not for the cluster \"" + c.name() + "\" it is read with");
  s.demand_name = r.opt_string(root, "demand", "").value_or("");
  s.method = r.opt_string(root, "method", "").value_or("");
  s.epoch_seconds = r.number(root, "epoch_seconds", "", true);
  s.epochs = static_cast<std::int32_t>(integer(r, root, "epochs", "", 0, 1 << 28));
  s.chunk_bytes = r.number(root, "chunk_bytes", "", true);
  if (!(s.chunk_bytes >= min_chunk_bytes && s.chunk_bytes <= max_chunk_bytes))
    r.fail(errc::bad_value, "chunk_bytes",
           fmt::format("{:.10g} is not a chunk size: chunks are {:.10g} to {:.10g} bytes (1 TiB)", s.chunk_bytes, min_chunk_bytes,
                       max_chunk_bytes));
  s.transfer_seconds = r.opt_number(root, "transfer_seconds", "", false, true).value_or(0);
  s.lower_bound_seconds = r.opt_number(root, "lower_bound_seconds", "", false, true).value_or(0);
  s.solve_seconds = r.opt_number(root, "solve_seconds", "", false, true).value_or(0);
  s.proved_optimal = r.opt_bool(root, "proved_optimal", "").value_or(false);
  s.note = r.opt_string(root, "note", "").value_or("");
  if (root.contains("replan_epoch")) s.replan_epoch = static_cast<std::int32_t>(integer(r, root, "replan_epoch", "", 0, 1 << 28));
  const json* sends = r.array(root, "sends", "", true);
  s.sends.reserve(sends->size());
  for (std::size_t i = 0; i < sends->size(); ++i) {
    std::string p = json_reader::index("sends", i);
    const json& o = (*sends)[i];
    r.expect_object(o, p);
    send x;
    x.chunk = static_cast<std::uint32_t>(integer(r, o, "chunk", p, 0, 0xFFFFFFF0LL));
    x.src = names.get(r, o, "src", p, false);
    x.dst = names.get(r, o, "dst", p, false);
    x.epoch = static_cast<std::int32_t>(integer(r, o, "epoch", p, 0, 1 << 28));
    s.sends.push_back(x);
  }
  return s;
}

schedule load_schedule(const std::string& path, const cluster& c) {
  return parse_schedule(read_file(path), c, path);
}

std::string to_json_text(const schedule& s, const cluster& c) {
  using json = nlohmann::ordered_json;
  json head;
  head["format"] = schedule_tag;
  head["topology"] = s.topology;
  head["demand"] = s.demand_name;
  head["method"] = s.method;
  head["epoch_seconds"] = s.epoch_seconds;
  head["epochs"] = s.epochs;
  head["chunk_bytes"] = s.chunk_bytes;
  std::string text = head.dump();
  text.pop_back();  // reopen the object to append the sends one per line
  text += ",\n \"sends\": [";
  for (std::size_t i = 0; i < s.sends.size(); ++i) {
    const send& x = s.sends[i];
    json o;
    o["chunk"] = x.chunk;
    o["src"] = c.node_id(x.src);
    o["dst"] = c.node_id(x.dst);
    o["epoch"] = x.epoch;
    text += (i ? ",\n  " : "\n  ") + o.dump();
  }
  text += "\n ],\n";
  json tail;
  tail["transfer_seconds"] = s.transfer_seconds;
  tail["lower_bound_seconds"] = s.lower_bound_seconds;
  tail["solve_seconds"] = s.solve_seconds;
  tail["proved_optimal"] = s.proved_optimal;
  if (!s.note.empty()) tail["note"] = s.note;
  if (s.replan_epoch >= 0) tail["replan_epoch"] = s.replan_epoch;
  std::string t = tail.dump();
  text += " " + t.substr(1) + "\n";
  return text;
}

void save_schedule(const schedule& s, const cluster& c, const std::string& path) {
  write_file_atomic(path, to_json_text(s, c));
}

void canonicalize(schedule& s) {
  std::sort(s.sends.begin(), s.sends.end(), [](const send& a, const send& b) {
    return std::tie(a.epoch, a.src, a.dst, a.chunk) < std::tie(b.epoch, b.src, b.dst, b.chunk);
  });
}

}  // namespace doppler::comm
