// `doppler-demand/1` reader and writer.
#include "json_common.hpp"

#include <doppler/comm/demand.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

namespace doppler::comm {

namespace {
constexpr const char* demand_tag = "doppler-demand/1";
}

demand parse_demand(std::string_view text, const cluster& c, const std::string& file) {
  using namespace detail;
  json root = doppler::parse_json(text, file);
  json_reader r(file);
  r.expect_format(root, demand_tag);
  node_names names(c);
  demand d;
  d.name = r.opt_string(root, "name", "").value_or("");
  d.chunk_bytes = r.number(root, "chunk_bytes", "", true);
  d.output_bytes = r.opt_number(root, "output_bytes", "", true).value_or(0);
  if (const json* jobs = r.array(root, "jobs", "", false)) {
    for (std::size_t j = 0; j < jobs->size(); ++j) {
      std::string p = json_reader::index("jobs", j);
      r.expect_object((*jobs)[j], p);
      d.jobs.push_back({r.opt_string((*jobs)[j], "name", p).value_or("job" + std::to_string(j)),
                        r.opt_number((*jobs)[j], "weight", p, true).value_or(1.0)});
    }
  }
  const json* chunks = r.array(root, "chunks", "", true);
  if (chunks->empty()) r.fail(errc::bad_value, "chunks", "a demand needs at least one chunk");
  d.chunks.reserve(chunks->size());
  for (std::size_t i = 0; i < chunks->size(); ++i) {
    std::string p = json_reader::index("chunks", i);
    const json& o = (*chunks)[i];
    r.expect_object(o, p);
    chunk ch;
    ch.id = static_cast<std::uint32_t>(integer(r, o, "id", p, 0, 0xFFFFFFF0LL));
    ch.source = names.get(r, o, "source", p, true);
    const json* dsts = r.array(o, "destinations", p, true);
    std::string dp = json_reader::join(p, "destinations");
    for (std::size_t j = 0; j < dsts->size(); ++j) {
      const json& v = (*dsts)[j];
      std::string jp = json_reader::index(dp, j);
      if (!v.is_string()) r.fail(errc::bad_type, jp, "must be a device id string");
      ch.destinations.push_back(names.resolve(r, v.get<std::string>(), jp, true));
    }
    if (o.contains("job"))
      ch.job = static_cast<std::uint32_t>(integer(r, o, "job", p, 0, d.jobs.empty() ? 0 : d.jobs.size() - 1));
    d.chunks.push_back(std::move(ch));
  }
  d.validate(c, file);
  return d;
}

demand load_demand(const std::string& path, const cluster& c) {
  return parse_demand(read_file(path), c, path);
}

std::string to_json_text(const demand& d, const cluster& c) {
  using json = nlohmann::ordered_json;
  std::string out = "{\"format\": \"" + std::string(demand_tag) + "\", \"name\": " + json(d.name).dump() +
                    ",\n \"chunk_bytes\": " + json(d.chunk_bytes).dump();
  if (d.output_bytes > 0) out += ", \"output_bytes\": " + json(d.output_bytes).dump();
  if (!d.jobs.empty()) {
    json jobs = json::array();
    for (const job& j : d.jobs) jobs.push_back({{"name", j.name}, {"weight", j.weight}});
    out += ",\n \"jobs\": " + jobs.dump();
  }
  out += ",\n \"chunks\": [";
  for (std::size_t i = 0; i < d.chunks.size(); ++i) {
    const chunk& ch = d.chunks[i];
    json o;
    o["id"] = ch.id;
    o["source"] = c[ch.source].id;
    json dsts = json::array();
    for (device_index t : ch.destinations) dsts.push_back(c[t].id);
    o["destinations"] = dsts;
    if (!d.jobs.empty()) o["job"] = ch.job;
    out += (i ? ",\n  " : "\n  ") + o.dump();
  }
  out += "\n ]}\n";
  return out;
}

void save_demand(const demand& d, const cluster& c, const std::string& path) {
  write_file_atomic(path, to_json_text(d, c));
}

}  // namespace doppler::comm
