// Named cluster presets. docs/clusters.md gives every number's source; keep the two in step.
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

namespace doppler {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

// Per-hop latencies (NCCL's tuning table, src/graph/tuning.cc hwLat: an NVLink hop 0.5-4 us, the
// network 2.7-14 us, by protocol; TE-CCL's NDv2 model: 0.7 us NVLink, 1.3 us InfiniBand).
constexpr double nvlink_latency = 0.7e-6;
constexpr double nvswitch_hop_latency = 0.5e-6;  // GPU -> NVSwitch or NVSwitch -> GPU
constexpr double net_hop_latency = 2.5e-6;       // GPU -> network or network -> GPU (5 us end to end)
constexpr double ib_latency = 1.3e-6;

constexpr double v100_nvlink = 25e9;  // one NVLink 2.0 link, bytes/s per direction

/// NVLinks (25 GB/s each) between the 8 V100s of a DGX-1V: TE-CCL's `teccl/topologies/dgx1.py`
/// capacity matrix (the same hybrid cube-mesh its NDv2 model uses). Each GPU has 6 links.
constexpr int dgx1v_links[8][8] = {
    {0, 2, 1, 1, 2, 0, 0, 0},  //
    {2, 0, 1, 2, 0, 1, 0, 0},  //
    {1, 1, 0, 2, 0, 0, 2, 0},  //
    {1, 2, 2, 0, 0, 0, 0, 1},  //
    {2, 0, 0, 0, 0, 2, 1, 1},  //
    {0, 1, 0, 0, 2, 0, 1, 2},  //
    {0, 0, 2, 0, 1, 1, 0, 2},  //
    {0, 0, 0, 1, 1, 2, 2, 0},  //
};

struct builder {
  std::vector<device> devices;
  std::vector<std::string> switches;
  std::vector<link_spec> links;

  void add_devices(int n, const char* prefix, device_kind kind, double flops, double memory,
                   const std::string& host) {
    int first = static_cast<int>(devices.size());
    for (int i = 0; i < n; ++i)
      devices.push_back({prefix + std::to_string(first + i), kind, flops, memory, host});
  }
  void link(const std::string& a, const std::string& b, double bandwidth, double latency,
            bool duplex = true) {
    links.push_back({a, b, bandwidth, latency, duplex});
  }
  /// Every pair of devices [first, first + n) joined by one duplex link.
  void full_mesh(int first, int n, double bandwidth, double latency) {
    for (int i = first; i < first + n; ++i)
      for (int j = i + 1; j < first + n; ++j) link(devices[i].id, devices[j].id, bandwidth, latency);
  }
  /// The DGX-1V NVLink matrix over devices [first, first + 8).
  void dgx1v(int first) {
    for (int i = 0; i < 8; ++i)
      for (int j = i + 1; j < 8; ++j)
        if (int k = dgx1v_links[i][j])
          link(devices[first + i].id, devices[first + j].id, k * v100_nvlink, nvlink_latency);
  }
  /// Errors name the preset where a file would be named (`cpu:2:flops=0.5: devices[0].flops: ...`).
  cluster build(std::string_view name) {
    try {
      return cluster(std::string(name), std::move(devices), std::move(switches), std::move(links));
    } catch (const error& e) {
      if (!e.file().empty()) throw;
      throw e.with_file(std::string(name));
    }
  }
};

constexpr int max_virtual_devices = 256;

std::string valid_presets() {
  std::string s;
  for (const auto& [name, what] : preset_catalog()) s += (s.empty() ? "" : ", ") + name;
  return "valid presets: " + s;
}

[[noreturn]] void bad_name(std::string_view name, const std::string& why) {
  throw error(errc::bad_argument, "preset \"" + std::string(name) + "\": " + why + "; " + valid_presets());
}

/// Parses the `N` of `cpu:N` / `doppler-paper:N`.
int parse_count(std::string_view name, std::string_view text) {
  int n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    bad_name(name, "\"" + std::string(text) + "\" is not a device count");
  if (n < 1 || n > max_virtual_devices)
    bad_name(name, "the device count must be 1.." + std::to_string(max_virtual_devices));
  return n;
}

double parse_number(std::string_view name, std::string_view key, std::string_view text, bool zero_ok) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || !std::isfinite(v) ||
      v < 0 || (!zero_ok && v == 0))
    bad_name(name, std::string(key) + "=" + std::string(text) + " is not a " +
                       (zero_ok ? "finite number >= 0" : "positive finite number"));
  return v;
}

/// `cpu:N[:flops=F][:mem=B][:bw=B][:lat=S]`: N virtual CPU devices on this host, full memcpy mesh.
cluster cpu_preset(std::string_view name, std::string_view rest) {
  double flops = 2e10, memory = 4e9, bw = 5e9, lat = 1e-6;
  auto colon = rest.find(':');
  int n = parse_count(name, rest.substr(0, colon));
  while (colon != std::string_view::npos) {
    rest = rest.substr(colon + 1);
    colon = rest.find(':');
    std::string_view opt = rest.substr(0, colon);
    auto eq = opt.find('=');
    std::string_view key = opt.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : opt.substr(eq + 1);
    if (key == "flops") flops = parse_number(name, key, value, false);
    else if (key == "mem") memory = parse_number(name, key, value, false);
    else if (key == "bw") bw = parse_number(name, key, value, false);
    else if (key == "lat") lat = parse_number(name, key, value, true);
    else bad_name(name, "unknown option \"" + std::string(opt) + "\" (options: flops=, mem=, bw=, lat=)");
  }
  builder b;
  b.add_devices(n, "cpu", device_kind::cpu, flops, memory, "localhost");
  b.full_mesh(0, n, bw, lat);
  return b.build(name);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> preset_catalog() {
  return {
      {"p100x4", "4x P100 SXM2, one 20 GB/s NVLink between every pair (a DGX-1P quad)"},
      {"dgx1-v100", "8x V100 SXM2, DGX-1V hybrid cube-mesh, pairs of 1 or 2 NVLinks (25/50 GB/s)"},
      {"ndv2-2", "2 Azure NDv2 chassis (8x V100 each, DGX-1V mesh), 12.5 GB/s InfiniBand between"},
      {"dgx-h100", "8x H100 SXM, each at 450 GB/s per direction into one NVSwitch"},
      {"h100-2x8", "2 DGX-H100 nodes, each GPU also on a 50 GB/s NIC into one network switch"},
      {"dgx2-2", "2 DGX-2 chassis (16x V100 each on an NVSwitch at 125 GB/s), one-way 12.5 GB/s NICs between"},
      {"cpu:N", "N virtual CPU devices on this host (options :flops=F:mem=B:bw=B:lat=S)"},
      {"doppler-paper:N", "N devices of 1e10 FLOP/s, full mesh of 1e10 B/s links, zero latency"},
  };
}

cluster make_preset(std::string_view name) {
  builder b;
  if (name == "p100x4") {
    b.add_devices(4, "gpu", device_kind::gpu, 9.3e12, 16 * gib, "node0");
    b.full_mesh(0, 4, 20e9, nvlink_latency);
    return b.build(name);
  }
  if (name == "dgx1-v100") {
    b.add_devices(8, "gpu", device_kind::gpu, 15.7e12, 16 * gib, "node0");
    b.dgx1v(0);
    return b.build(name);
  }
  if (name == "ndv2-2") {
    for (int c = 0; c < 2; ++c) {
      b.add_devices(8, "gpu", device_kind::gpu, 15.7e12, 32 * gib, "node" + std::to_string(c));
      b.dgx1v(8 * c);
    }
    // TE-CCL's 2-chassis NDv2: GPU 0 of each chassis sends to GPU 1 of the other, one way each.
    b.link("gpu0", "gpu9", 12.5e9, ib_latency, false);
    b.link("gpu8", "gpu1", 12.5e9, ib_latency, false);
    return b.build(name);
  }
  if (name == "dgx-h100" || name == "h100-2x8") {
    const int nodes = name == "dgx-h100" ? 1 : 2;
    for (int h = 0; h < nodes; ++h) {
      std::string sw = nodes == 1 ? "nvswitch" : "nvswitch" + std::to_string(h);
      b.switches.push_back(sw);
      b.add_devices(8, "gpu", device_kind::gpu, 67e12, 80 * gib, "node" + std::to_string(h));
      for (int i = 8 * h; i < 8 * h + 8; ++i) b.link(b.devices[i].id, sw, 450e9, nvswitch_hop_latency);
    }
    if (nodes > 1) {
      b.switches.push_back("net");
      for (const device& d : b.devices) b.link(d.id, "net", 50e9, net_hop_latency);
    }
    return b.build(name);
  }
  if (name == "dgx2-2") {
    // TE-CCL's 2-chassis DGX-2 (`teccl/topologies/dgx2.py`): 16 V100 per chassis on one NVSwitch;
    // odd GPU k of a chassis sends to GPU k-1 of the other over a one-way NIC link.
    for (int h = 0; h < 2; ++h) {
      std::string sw = "nvswitch" + std::to_string(h);
      b.switches.push_back(sw);
      b.add_devices(16, "gpu", device_kind::gpu, 15.7e12, 32 * gib, "node" + std::to_string(h));
      for (int i = 16 * h; i < 16 * h + 16; ++i) b.link(b.devices[i].id, sw, 125e9, 0.35e-6);
    }
    for (int h = 0; h < 2; ++h)
      for (int k = 1; k < 16; k += 2)
        b.link("gpu" + std::to_string(16 * h + k), "gpu" + std::to_string(16 * (1 - h) + k - 1), 12.5e9, 2.6e-6, false);
    return b.build(name);
  }
  if (name.starts_with("cpu:")) return cpu_preset(name, name.substr(4));
  if (name.starts_with("doppler-paper:")) {
    int n = parse_count(name, name.substr(14));
    b.add_devices(n, "gpu", device_kind::gpu, 1e10, 1e15, "sim");
    b.full_mesh(0, n, 1e10, 0.0);
    return b.build(name);
  }
  throw error(errc::unknown_kind, "unknown cluster preset \"" + std::string(name) + "\"; " + valid_presets());
}

cluster load_cluster_or_preset(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(spec, ec)) return load_cluster(spec);
  try {
    return make_preset(spec);
  } catch (const error&) {
    bool looks_like_path = spec.find('/') != std::string::npos ||
                           (spec.size() > 5 && spec.ends_with(".json"));
    if (!looks_like_path) throw;
    throw error(errc::io, spec, "", "no such file, and not a preset name (" + valid_presets() + ")");
  }
}

}  // namespace doppler
