// Demands: checks, collective builders, merging jobs.
#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace doppler::comm {

std::string_view to_string(collective k) noexcept {
  switch (k) {
    case collective::allgather: return "allgather";
    case collective::alltoall: return "alltoall";
    case collective::broadcast: return "broadcast";
    case collective::scatter: return "scatter";
    case collective::gather: return "gather";
  }
  return "?";
}

std::optional<collective> parse_collective(std::string_view s) noexcept {
  for (auto k : {collective::allgather, collective::alltoall, collective::broadcast, collective::scatter,
                 collective::gather})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

double demand::output_size(std::size_t device_count) const {
  if (output_bytes > 0) return output_bytes;
  std::vector<std::size_t> held(device_count, 0);
  for (const chunk& c : chunks) {
    if (c.source < device_count) ++held[c.source];
    for (device_index d : c.destinations)
      if (d < device_count) ++held[d];
  }
  std::size_t most = held.empty() ? 0 : *std::max_element(held.begin(), held.end());
  return static_cast<double>(most) * chunk_bytes;
}

std::optional<std::size_t> demand::find_chunk(std::uint32_t id) const {
  // Builders number chunks 0..n-1 in order: try the direct hit first.
  if (id < chunks.size() && chunks[id].id == id) return id;
  for (std::size_t i = 0; i < chunks.size(); ++i)
    if (chunks[i].id == id) return i;
  return std::nullopt;
}

void demand::validate(const cluster& c, const std::string& file) const {
  if (!(chunk_bytes >= min_chunk_bytes && chunk_bytes <= max_chunk_bytes))
    throw error(errc::bad_value, file, "chunk_bytes",
                fmt::format("{:.10g} is not a chunk size: chunks are {:.10g} to {:.10g} bytes (1 TiB)", chunk_bytes,
                            min_chunk_bytes, max_chunk_bytes));
  // 0: not given (computed from the chunks). Else room for 2^32 chunks of the largest size, which
  // every built collective stays within; 1e300 printed a 290-digit algbw.
  constexpr double max_output_bytes = max_chunk_bytes * 4294967296.0;
  if (output_bytes != 0 && !(output_bytes >= 1 && output_bytes <= max_output_bytes))
    throw error(errc::bad_value, file, "output_bytes",
                fmt::format("{:.10g} is not an output size: 1 to {:.10g} bytes (2^72)", output_bytes, max_output_bytes));
  std::unordered_set<std::uint32_t> ids;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const chunk& ch = chunks[i];
    std::string path = "chunks[" + std::to_string(i) + "]";
    if (!ids.insert(ch.id).second)
      throw error(errc::duplicate_id, file, path + ".id", "chunk id " + std::to_string(ch.id) + " appears twice");
    if (ch.source >= c.device_count())
      throw error(errc::unknown_id, file, path + ".source", "not a device of " + c.name());
    if (ch.destinations.empty())
      throw error(errc::bad_value, file, path + ".destinations", "a chunk needs at least one destination");
    std::unordered_set<device_index> seen;
    for (std::size_t j = 0; j < ch.destinations.size(); ++j) {
      device_index d = ch.destinations[j];
      std::string p = path + ".destinations[" + std::to_string(j) + "]";
      if (d >= c.device_count()) throw error(errc::unknown_id, file, p, "not a device of " + c.name());
      if (d == ch.source) throw error(errc::bad_value, file, p, "the source is not a destination");
      if (!seen.insert(d).second)
        throw error(errc::duplicate_id, file, p, "\"" + c[d].id + "\" is listed twice");
    }
    if (!jobs.empty() && ch.job >= jobs.size())
      throw error(errc::unknown_id, file, path + ".job", "no such job");
  }
  for (std::size_t j = 0; j < jobs.size(); ++j)
    if (!(jobs[j].weight > 0) || !std::isfinite(jobs[j].weight))
      throw error(errc::bad_value, file, "jobs[" + std::to_string(j) + "].weight", "must be positive");
}

demand make_collective(const cluster& c, collective kind, double chunk_bytes, int chunks_per_gpu,
                       device_index root, std::vector<device_index> participants) {
  if (participants.empty())
    for (device_index d = 0; d < c.device_count(); ++d) participants.push_back(d);
  if (chunks_per_gpu < 1) throw error(errc::bad_argument, "chunks per GPU must be at least 1");
  if (!(chunk_bytes >= min_chunk_bytes && chunk_bytes <= max_chunk_bytes))
    throw error(errc::bad_argument, "", "chunk_bytes",
                fmt::format("{:.10g} is not a chunk size: chunks are {:.10g} to {:.10g} bytes (1 TiB)", chunk_bytes,
                            min_chunk_bytes, max_chunk_bytes));
  for (device_index p : participants)
    if (p >= c.device_count()) throw error(errc::bad_argument, "participant out of range");
  if (root >= c.device_count()) throw error(errc::bad_argument, "root device out of range");
  if (participants.size() < 2) throw error(errc::bad_argument, "a collective needs at least 2 devices");
  const auto n = participants.size();
  const auto k = static_cast<std::size_t>(chunks_per_gpu);
  demand d;
  d.name = std::string(to_string(kind)) + "-" + std::to_string(n) + "x" + std::to_string(k);
  d.chunk_bytes = chunk_bytes;
  auto add = [&](device_index src, std::vector<device_index> dsts) {
    d.chunks.push_back({static_cast<std::uint32_t>(d.chunks.size()), src, std::move(dsts), 0});
  };
  auto others = [&](device_index self) {
    std::vector<device_index> v;
    for (device_index p : participants)
      if (p != self) v.push_back(p);
    return v;
  };
  switch (kind) {
    case collective::allgather:
      for (device_index s : participants)
        for (std::size_t i = 0; i < k; ++i) add(s, others(s));
      d.output_bytes = static_cast<double>(n * k) * chunk_bytes;
      break;
    case collective::alltoall:
      for (device_index s : participants)
        for (device_index t : participants)
          if (s != t)
            for (std::size_t i = 0; i < k; ++i) add(s, {t});
      d.output_bytes = static_cast<double>(n * k) * chunk_bytes;  // includes the part kept locally
      break;
    case collective::broadcast:
      for (std::size_t i = 0; i < k; ++i) add(root, others(root));
      d.output_bytes = static_cast<double>(k) * chunk_bytes;
      break;
    case collective::scatter:
      for (device_index t : participants)
        if (t != root)
          for (std::size_t i = 0; i < k; ++i) add(root, {t});
      d.output_bytes = static_cast<double>(k) * chunk_bytes;
      break;
    case collective::gather:
      for (device_index s : participants)
        if (s != root)
          for (std::size_t i = 0; i < k; ++i) add(s, {root});
      d.output_bytes = static_cast<double>(n * k) * chunk_bytes;
      break;
  }
  return d;
}

demand merge_jobs(const std::vector<demand>& parts, const std::vector<double>& weights) {
  if (parts.empty()) throw error(errc::bad_argument, "merge_jobs: no demands");
  demand out;
  out.chunk_bytes = parts.front().chunk_bytes;
  for (std::size_t j = 0; j < parts.size(); ++j) {
    const demand& p = parts[j];
    if (p.chunk_bytes != out.chunk_bytes)
      throw error(errc::bad_argument, "merge_jobs: jobs must share one chunk size");
    out.name += (j ? "+" : "") + p.name;
    out.jobs.push_back({p.name.empty() ? "job" + std::to_string(j) : p.name,
                        j < weights.size() ? weights[j] : 1.0});
    for (const chunk& c : p.chunks)
      out.chunks.push_back({static_cast<std::uint32_t>(out.chunks.size()), c.source, c.destinations,
                            static_cast<std::uint32_t>(j)});
    out.output_bytes = std::max(out.output_bytes, p.output_bytes);
  }
  return out;
}

}  // namespace doppler::comm
