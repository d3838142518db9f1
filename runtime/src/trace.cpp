// Chrome trace event JSON of a run (docs/simulator.md, "Trace"): Perfetto and
// chrome://tracing open it. One process per device and per link that carried a transfer; events
// that overlap on one process (several streams, or the simple model's uncontended transfers) go to
// separate threads ("lanes"), since a viewer nests events of one thread.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/trace_json.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

namespace doppler {

namespace trace_json {

std::string quote(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

std::string micros(double seconds) {
  const double us = seconds * 1e6;
  // JSON has no inf: a time past ~1.8e302 s made the whole trace unreadable.
  if (!std::isfinite(us))
    throw error(errc::bad_value, "", "trace", fmt::format("a time of {:g} s does not fit a trace's microseconds", seconds));
  return fmt::format("{}", us);
}

}  // namespace trace_json

using trace_json::micros;
using trace_json::quote;

std::string chrome_trace(const graph& g, const cluster& c, const sim_result& r, std::string_view source,
                         std::string_view backend) {
  const std::size_t devices = c.device_count();
  auto pid_of = [&](const trace_event& e) -> std::size_t {
    return e.what == trace_event::kind::op ? e.where + 1 : devices + e.where + 1;
  };
  // Lanes: per process, greedily the lowest lane whose last event ended by this one's start.
  std::vector<std::uint32_t> idx(r.events.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
    const trace_event &x = r.events[a], &y = r.events[b];
    auto px = pid_of(x), py = pid_of(y);
    return px != py ? px < py : x.start < y.start;
  });
  std::vector<std::uint32_t> lane(r.events.size(), 0);
  std::vector<std::pair<std::size_t, std::uint32_t>> lanes_used;  // (pid, lane count)
  std::vector<double> lane_end;
  std::size_t cur_pid = SIZE_MAX;
  for (std::uint32_t i : idx) {
    const trace_event& e = r.events[i];
    if (pid_of(e) != cur_pid) {
      cur_pid = pid_of(e);
      lane_end.clear();
      lanes_used.emplace_back(cur_pid, 0);
    }
    std::uint32_t k = 0;
    while (k < lane_end.size() && lane_end[k] > e.start) ++k;
    if (k == lane_end.size()) lane_end.push_back(e.end);
    lane_end[k] = e.end;
    lane[i] = k;
    lanes_used.back().second = static_cast<std::uint32_t>(lane_end.size());
  }

  std::string out;
  out.reserve(200 * r.events.size() + 4096);
  auto it = std::back_inserter(out);
  trace_json::event_list events(out);
  // Metadata: names and a stable order for every device and every link (FORMATS.md: one process per
  // device and per link), so a link that carried nothing shows as an empty row.
  for (device_index d = 0; d < devices; ++d) {
    events.item();
    fmt::format_to(it, R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})",
                   d + 1, quote(c[d].id + " (" + std::string(to_string(c[d].kind)) + ")"));
    events.item();
    fmt::format_to(it, R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})",
                   d + 1, d);
  }
  for (link_index l = 0; l < c.links().size(); ++l) {
    const link& lk = c.links()[l];
    events.item();
    fmt::format_to(it, R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})",
                   devices + l + 1, quote("link " + c.node_id(lk.src) + " -> " + c.node_id(lk.dst)));
    events.item();
    fmt::format_to(it, R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})",
                   devices + l + 1, devices + l);
  }
  for (const auto& [pid, count] : lanes_used)
    for (std::uint32_t k = 0; k < count; ++k) {
      events.item();
      fmt::format_to(it, R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{} {}"}}}})",
                     pid, k + 1, pid <= devices ? "stream" : "lane", k);
    }

  std::vector<std::string> ids(g.size());  // JSON-quoted op ids, made on first use
  auto id_of = [&](op_index v) -> const std::string& {
    if (ids[v].empty()) ids[v] = quote(g[v].id);
    return ids[v];
  };
  for (std::uint32_t i : idx) {
    const trace_event& e = r.events[i];
    const op& o = g[e.id];
    events.item();
    if (e.what == trace_event::kind::op) {
      fmt::format_to(it,
                     R"({{"name": {}, "cat": "op", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
                     R"("args": {{"op": {}, "kind": "{}", "flops": {}, "bytes": {}}}}})",
                     id_of(e.id), pid_of(e), lane[i] + 1, micros(e.start), micros(e.end - e.start),
                     id_of(e.id), to_string(o.kind), o.flops, o.bytes);
    } else {
      fmt::format_to(it,
                     R"({{"name": {}, "cat": "transfer", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
                     R"("args": {{"op": {}, "kind": "{}", "bytes": {}, "to": {}}}}})",
                     quote(o.id + " -> " + c[e.dst].id), pid_of(e), lane[i] + 1, micros(e.start),
                     micros(e.end - e.start), id_of(e.id), to_string(o.kind), e.bytes > 0 ? e.bytes : o.bytes,
                     quote(c[e.dst].id));
    }
  }
  events.close();
  fmt::format_to(it, "\"displayTimeUnit\": \"ms\", \"otherData\": {{\"makespan_s\": {}, \"source\": {}, {}"
                     "\"cluster\": {}, \"graph\": {}, \"events\": {}}}}}\n",
                 r.makespan, quote(source), backend.empty() ? std::string() : "\"backend\": " + quote(backend) + ", ",
                 quote(c.name()), quote(g.name()), r.events.size());
  return out;
}

}  // namespace doppler
