#pragma once
// Tiny hand-checkable topologies for the comm planner tests: chunk = 1 MB, links 1 MB/s (τ = 1 s),
// no latency, so every hop is exactly one epoch.
#include <doppler/comm/planner.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

namespace comm_fixtures {

inline constexpr double mb = 1e6;

inline std::vector<doppler::device> gpus(int n) {
  std::vector<doppler::device> v;
  for (int i = 0; i < n; ++i) v.push_back({"gpu" + std::to_string(i), doppler::device_kind::gpu, 1e12, 1e10, "node0"});
  return v;
}

/// gpu0 - gpu1 - ... - gpu(n-1), duplex.
inline doppler::cluster line(int n) {
  std::vector<doppler::link_spec> l;
  for (int i = 0; i + 1 < n; ++i) l.push_back({"gpu" + std::to_string(i), "gpu" + std::to_string(i + 1), mb, 0, true});
  return doppler::cluster("line" + std::to_string(n), gpus(n), {}, l);
}

/// A ring of n, duplex (or one way).
inline doppler::cluster ring(int n, bool duplex = true) {
  std::vector<doppler::link_spec> l;
  for (int i = 0; i < n; ++i)
    l.push_back({"gpu" + std::to_string(i), "gpu" + std::to_string((i + 1) % n), mb, 0, duplex});
  return doppler::cluster("ring" + std::to_string(n), gpus(n), {}, l);
}

/// n GPUs around one switch `sw`, duplex.
inline doppler::cluster star(int n) {
  std::vector<doppler::link_spec> l;
  for (int i = 0; i < n; ++i) l.push_back({"gpu" + std::to_string(i), "sw", mb, 0, true});
  return doppler::cluster("star" + std::to_string(n), gpus(n), {"sw"}, l);
}

/// Runs `f`, which must throw doppler::error of class `code` whose message contains `needle`.
inline void expect_error(const std::function<void()>& f, doppler::errc code, const std::string& needle) {
  try {
    f();
    FAIL("no error thrown; expected one mentioning " << needle);
  } catch (const doppler::error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos,
                  "'" << e.what() << "' does not mention '" << needle << "'");
  }
}

}  // namespace comm_fixtures
