// Chrome trace of a schedule's α-β replay (validate.hpp: schedule_trace): Perfetto and
// chrome://tracing show every link's sends over time, so a planned collective can be inspected the
// way a simulated or measured run is (runtime/src/trace.cpp writes those).
#include <doppler/comm/validate.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/trace_json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <utility>

namespace doppler::comm {

using trace_json::micros;
using trace_json::quote;

std::string schedule_trace(const cluster& c, const schedule& s, const replay_report& rep) {
  if (rep.send_begin.size() != s.sends.size() || rep.send_end.size() != s.sends.size())
    throw error(errc::internal, "", "sends",
                "the replay report has no interval for every send of this schedule (validate_schedule it first)");
  // One process per directed link that carries sends, in (src, dst) order; the replay serves a
  // link's sends one at a time, so one thread per process holds them all without overlap.
  std::map<std::pair<node_index, node_index>, std::size_t> pid;
  for (const send& x : s.sends) pid.emplace(std::pair{x.src, x.dst}, 0);
  std::size_t next = 1;
  for (auto& [link, id] : pid) id = next++;
  std::vector<std::size_t> order(s.sends.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rep.send_begin[a] < rep.send_begin[b];
  });

  std::string out;
  out.reserve(160 * s.sends.size() + 200 * pid.size() + 512);
  auto it = std::back_inserter(out);
  trace_json::event_list events(out);
  for (const auto& [link, id] : pid) {
    events.item();
    fmt::format_to(it, R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})", id,
                   quote("link " + c.node_id(link.first) + " -> " + c.node_id(link.second)));
    events.item();
    fmt::format_to(it, R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})",
                   id, id);
  }
  for (std::size_t i : order) {
    const send& x = s.sends[i];
    events.item();
    fmt::format_to(it,
                   R"({{"name": "chunk {}", "cat": "send", "ph": "X", "pid": {}, "tid": 1, "ts": {}, "dur": {}, )"
                   R"("args": {{"chunk": {}, "epoch": {}, "from": {}, "to": {}, "bytes": {}}}}})",
                   x.chunk, pid.at({x.src, x.dst}), micros(rep.send_begin[i]),
                   micros(rep.send_end[i] - rep.send_begin[i]), x.chunk, x.epoch, quote(c.node_id(x.src)),
                   quote(c.node_id(x.dst)), s.chunk_bytes);
  }
  events.close();
  fmt::format_to(it,
                 "\"displayTimeUnit\": \"ms\", \"otherData\": {{\"makespan_s\": {}, \"source\": \"simulator\", "
                 "\"cluster\": {}, \"schedule\": {{\"method\": {}, \"demand\": {}, \"epochs\": {}, "
                 "\"epoch_seconds\": {}, \"sends\": {}}}}}}}\n",
                 rep.simulated_seconds, quote(c.name()), quote(s.method), quote(s.demand_name), s.epochs,
                 s.epoch_seconds, s.sends.size());
  return out;
}

}  // namespace doppler::comm
