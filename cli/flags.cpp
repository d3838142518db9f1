// Checks of flags several commands share: unsigned seeds, --streams, --chunk-bytes, --straggler.

#include "commands.hpp"

#include <doppler/comm/network.hpp>  // the chunk size range
#include <doppler/comm/planner.hpp>  // method_names
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/sim.hpp>  // max_streams

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace doppler::cli {

namespace {

/// Reads `s` as a whole decimal T with nothing around it (CLI11 alone reads "+5", " 5", "0x10" and a
/// leading 0 as octal, and clamps what lies beyond T's range without a word) and rewrites it in
/// canonical decimal for CLI11 to convert. Returns the reason it is not one, or "" when it is.
template <class T>
std::string canonical_integer(std::string& s, const std::string& out_of_range) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) return out_of_range + ", got " + s;
  if (ec != std::errc() || end != s.data() + s.size()) return "must be a decimal integer (digits only), got '" + s + "'";
  s = std::to_string(v);
  return {};
}

}  // namespace

CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& s) {
        if (s.find('-') != std::string::npos) return "must be >= 0, got " + s;
        return canonical_integer<std::uint64_t>(
            s, "must be at most " + std::to_string(std::numeric_limits<std::uint64_t>::max()));
      },
      "N >= 0");
}

CLI::Validator int64_text() {
  return CLI::Validator(
      [](std::string& s) {
        return canonical_integer<std::int64_t>(
            s, "must be within 64 bits (at most " + std::to_string(std::numeric_limits<std::int64_t>::max()) + ")");
      },
      "INT");
}

void check_streams_flag(int streams) {
  if (streams < 1 || streams > max_streams)
    throw error(errc::bad_argument, "", "--streams",
                "must be in [1, " + std::to_string(max_streams) + "], got " + std::to_string(streams));
}

void check_chunk_bytes_flag(double bytes, const char* flag) {
  if (!(bytes >= comm::min_chunk_bytes && bytes <= comm::max_chunk_bytes))
    throw error(errc::bad_argument, "", flag,
                fmt::format("{:.10g} is not a chunk size: chunks are {:.10g} to {:.10g} bytes (1 TiB)", bytes,
                            comm::min_chunk_bytes, comm::max_chunk_bytes));
}

void check_comm_method_flag(const std::string& method, const char* flag) {
  const auto names = comm::method_names();
  if (std::find(names.begin(), names.end(), method) != names.end()) return;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw error(errc::bad_argument, "", flag, "unknown method \"" + method + "\" (known: " + known + ")");
}

void check_max_chunks_flag(std::uint32_t chunks) {
  if (chunks < 1) throw error(errc::bad_argument, "", "--max-chunks", "must be at least 1");
}

std::pair<device_index, double> parse_straggler(const std::string& s, const cluster& c, const std::string& flag) {
  auto colon = s.rfind(':');
  auto bad = [&](const std::string& why) { return error(errc::bad_argument, "", flag, "'" + s + "': " + why); };
  if (colon == std::string::npos) throw bad("expected DEVICE:FACTOR");
  std::string dev = s.substr(0, colon), fac = s.substr(colon + 1);
  std::optional<device_index> d = c.find_device(dev);
  if (!d) {
    try {
      std::size_t used = 0;
      unsigned long i = std::stoul(dev, &used);
      if (used == dev.size() && i < c.device_count()) d = static_cast<device_index>(i);
    } catch (const std::exception&) {
    }
  }
  if (!d) throw bad("no device '" + dev + "' in cluster '" + c.name() + "'");
  double f = 0;
  try {
    std::size_t used = 0;
    f = std::stod(fac, &used);
    if (used != fac.size()) throw std::invalid_argument("trailing characters");  // "2x", "3junk"
  } catch (const std::exception&) {
    throw bad("factor '" + fac + "' is not a number");
  }
  // ≤ 1e6: a slower device than that is a device to leave out, and the runtime's slowed waits
  // (nanoseconds in 64 bits) overflow near 1e10 × a second-long op.
  if (!(f >= 1.0) || !(f <= 1e6)) throw bad("factor must be a number in [1, 1e6]");
  return {*d, f};
}

std::vector<std::pair<device_index, double>> parse_stragglers(const std::vector<std::string>& values, const cluster& c,
                                                              const std::string& flag) {
  std::vector<std::pair<device_index, double>> out;
  std::map<device_index, double> product;  // several entries for one device multiply: the product too is ≤ 1e6
  for (const auto& v : values) {
    const auto [d, f] = parse_straggler(v, c, flag);
    double& p = product.try_emplace(d, 1.0).first->second;
    p *= f;
    if (!(p <= 1e6))
      throw error(errc::bad_argument, "", flag,
                  fmt::format("the factors of device '{}' multiply to {:g}, more than 1e6", c[d].id, p));
    out.emplace_back(d, f);
  }
  return out;
}

}  // namespace doppler::cli
