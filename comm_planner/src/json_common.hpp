#pragma once
// Shared pieces of the demand and schedule readers: integers, node names, number formatting.
#include "json_util.hpp"

#include <doppler/runtime/cluster.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace doppler::comm::detail {

using doppler::detail::json;
using doppler::detail::json_reader;

/// A whole number in [lo, hi] at obj[key] (required).
inline std::int64_t integer(const json_reader& r, const json& obj, const char* key, const std::string& path,
                            std::int64_t lo, std::int64_t hi) {
  auto it = obj.find(key);
  std::string p = json_reader::join(path, key);
  if (it == obj.end()) r.fail(errc::missing_field, p, "required integer is missing");
  if (!it->is_number()) r.fail(errc::bad_type, p, "must be an integer, got " + std::string(it->type_name()));
  double v = it->get<double>();
  if (!std::isfinite(v) || std::floor(v) != v) r.fail(errc::bad_value, p, "must be a whole number");
  if (v < static_cast<double>(lo) || v > static_cast<double>(hi))
    r.fail(errc::bad_value, p, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<std::int64_t>(v);
}

/// Node (device or switch) ids of a cluster → node index.
class node_names {
 public:
  explicit node_names(const cluster& c) {
    for (node_index n = 0; n < c.node_count(); ++n) index_.emplace(c.node_id(n), n);
    devices_ = c.device_count();
  }
  /// Resolves obj[key]; `device_only` rejects switches.
  node_index get(const json_reader& r, const json& obj, const char* key, const std::string& path,
                 bool device_only) const {
    return resolve(r, r.string(obj, key, path), json_reader::join(path, key), device_only);
  }
  /// Resolves a node id found at JSON path `p`.
  node_index resolve(const json_reader& r, const std::string& id, const std::string& p, bool device_only) const {
    auto it = index_.find(id);
    if (it == index_.end()) r.fail(errc::unknown_id, p, "\"" + id + "\" is not a node of the cluster");
    if (device_only && it->second >= devices_)
      r.fail(errc::bad_value, p, "\"" + id + "\" is a switch; switches hold no chunks");
    return it->second;
  }

 private:
  std::unordered_map<std::string, node_index> index_;
  std::size_t devices_ = 0;
};

}  // namespace doppler::comm::detail
