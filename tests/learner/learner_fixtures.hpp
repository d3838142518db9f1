#pragma once
// Helpers the learner tests share: the DOPPLER paper's graphs and per-process temporary file names.
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/graph_io.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace learner_fixtures {

/// One of the paper's graphs (workloads/doppler-paper/NAME).
inline doppler::graph paper(const char* name) {
  return doppler::load_graph(std::string(DOPPLER_PAPER_DIR) + "/" + name);
}

/// A file name in the temporary directory, unique to this test process.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("doppler_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

/// A synthetic op: `flops` of work, an output of `bytes`.
inline doppler::op_spec synth(std::string id, std::vector<std::string> inputs, double flops, double bytes) {
  doppler::op_spec s;
  s.id = std::move(id);
  s.kind = doppler::op_kind::synthetic;
  s.inputs = std::move(inputs);
  s.flops = flops;
  s.bytes = bytes;
  return s;
}

}  // namespace learner_fixtures
