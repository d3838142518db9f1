#pragma once
/// A placement: a device for every op, plus an optional priority order (`doppler-placement/1`).

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace doppler {

struct placement {
  std::vector<device_index> device;  ///< device[op], one per op of the graph
  std::vector<op_index> order;       ///< optional: a topological priority order over all ops
  std::string method;                ///< which placer made it
};

/// The same placement: the same device for every op and the same order (`method` aside).
inline bool same_placement(const placement& a, const placement& b) {
  return a.device == b.device && a.order == b.order;
}

/// Checks a placement against its graph and cluster: every op placed on an existing device; `order`
/// (when present) is a permutation of all ops and topological. Throws `doppler::error` naming the op.
void check_placement(const placement& p, const graph& g, const cluster& c);

/// Serializes to `doppler-placement/1` (assignment by op id and device id).
std::string to_json_text(const placement& p, const graph& g, const cluster& c);
/// Parses `doppler-placement/1` against a graph and a cluster; errors name the file, the JSON path
/// (`assignment.h`, `order[3]`) and the reason (unknown op, unknown device, op missing, ...).
placement parse_placement(std::string_view text, const graph& g, const cluster& c,
                          const std::string& file = "<placement>");
placement load_placement(const std::string& path, const graph& g, const cluster& c);
void save_placement(const placement& p, const graph& g, const cluster& c, const std::string& path);

}  // namespace doppler
