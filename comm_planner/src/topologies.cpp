// Comm-planner topologies beyond the runtime presets: ndv2-N, h100-pod:N (dgx2-2 is a runtime preset now).
#include <doppler/comm/topologies.hpp>
#include <doppler/runtime/error.hpp>

#include <charconv>

namespace doppler::comm {

cluster make_h100_pod(int nodes) {
  if (nodes < 1 || nodes > 256) throw error(errc::bad_argument, "h100-pod:N needs N in 1..256");
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  std::vector<device> devices;
  std::vector<std::string> switches;
  std::vector<link_spec> links;
  for (int h = 0; h < nodes; ++h) {
    std::string sw = "nvswitch" + std::to_string(h);
    switches.push_back(sw);
    for (int i = 0; i < 8; ++i) {
      std::string id = "gpu" + std::to_string(8 * h + i);
      devices.push_back({id, device_kind::gpu, 67e12, 80 * gib, "node" + std::to_string(h)});
      links.push_back({id, sw, 450e9, 0.5e-6, true});
      links.push_back({id, "net", 50e9, 2.5e-6, true});
    }
  }
  switches.push_back("net");
  return cluster("h100-pod:" + std::to_string(nodes), std::move(devices), std::move(switches), std::move(links));
}

cluster make_dgx2_2() { return make_preset("dgx2-2"); }

cluster make_ndv2(int chassis) {
  if (chassis < 3 || chassis > 16) throw error(errc::bad_argument, "ndv2-N needs N in 3..16 (ndv2-2 is a runtime preset)");
  // NVLinks (25 GB/s each) between the 8 V100s of a chassis: the DGX-1V matrix of docs/clusters.md.
  static constexpr int nvlinks[8][8] = {{0, 2, 1, 1, 2, 0, 0, 0}, {2, 0, 1, 2, 0, 1, 0, 0}, {1, 1, 0, 2, 0, 0, 2, 0},
                                        {1, 2, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2, 1, 1}, {0, 1, 0, 0, 2, 0, 1, 2},
                                        {0, 0, 2, 0, 1, 1, 0, 2}, {0, 0, 0, 1, 1, 2, 2, 0}};
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  std::vector<device> devices;
  std::vector<link_spec> links;
  auto id = [](int g) { return "gpu" + std::to_string(g); };
  for (int h = 0; h < chassis; ++h) {
    for (int i = 0; i < 8; ++i) devices.push_back({id(8 * h + i), device_kind::gpu, 15.7e12, 32 * gib, "node" + std::to_string(h)});
    for (int i = 0; i < 8; ++i)
      for (int j = i + 1; j < 8; ++j)
        if (nvlinks[i][j]) links.push_back({id(8 * h + i), id(8 * h + j), nvlinks[i][j] * 25e9, 0.7e-6, true});
    links.push_back({id(8 * h), "ib", 12.5e9, 1.3e-6, false});
    links.push_back({"ib", id(8 * h + 1), 12.5e9, 1.3e-6, false});
  }
  return cluster("ndv2-" + std::to_string(chassis), std::move(devices), {"ib"}, std::move(links));
}

cluster load_comm_cluster(const std::string& spec) {
  if (spec.rfind("ndv2-", 0) == 0 && spec != "ndv2-2") {
    int n = 0;
    auto [end, ec] = std::from_chars(spec.data() + 5, spec.data() + spec.size(), n);
    if (ec != std::errc() || end != spec.data() + spec.size()) throw error(errc::bad_argument, "\"" + spec + "\": ndv2-N needs a chassis count");
    return make_ndv2(n);
  }
  const std::string prefix = "h100-pod:";
  if (spec.rfind(prefix, 0) == 0) {
    int n = 0;
    const char* b = spec.data() + prefix.size();
    const char* e = spec.data() + spec.size();
    auto [end, ec] = std::from_chars(b, e, n);
    if (ec != std::errc() || end != e) throw error(errc::bad_argument, "\"" + spec + "\": h100-pod:N needs a node count");
    return make_h100_pod(n);
  }
  return load_cluster_or_preset(spec);
}

}  // namespace doppler::comm
