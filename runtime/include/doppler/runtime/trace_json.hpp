#pragma once
/// Pieces of Chrome trace event JSON (docs/simulator.md, "Trace") shared by the writers of a run's trace
/// (sim.hpp: chrome_trace) and of a comm schedule's replay (comm/validate.hpp: schedule_trace).

#include <string>
#include <string_view>

namespace doppler::trace_json {

/// `s` as a JSON string literal, quoted and escaped.
std::string quote(std::string_view s);

/// Seconds as the trace's microseconds, in the shortest text that reads back to the same double.
std::string micros(double seconds);

/// The `{"traceEvents": [` array being written into `out`: item() adds the separator the next
/// element needs (the caller then appends that element's JSON to `out`); close() ends the array
/// (the caller goes on with the top-level keys after it, e.g. `"otherData": {...}}`).
class event_list {
 public:
  explicit event_list(std::string& out) : out_(out) { out_ += "{\"traceEvents\": [\n"; }
  void item() {
    out_ += first_ ? "  " : ",\n  ";
    first_ = false;
  }
  void close() { out_ += "\n], "; }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace doppler::trace_json
