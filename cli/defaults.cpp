// What commands work on when they are not told (commands.hpp: load_graph_or_default).

#include "commands.hpp"

#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>

#include <iostream>

namespace doppler::cli {

graph load_graph_or_default(const std::string& path) {
  if (!path.empty()) return load_graph(path);
  graph g = make_workload("llama-block", workload_params{});
  std::cerr << fmt::format("note: no --graph given: using the generated Llama block ({} ops; `doppler workload "
                           "llama-block --help` for its parameters)\n",
                           g.size());
  return g;
}

}  // namespace doppler::cli
