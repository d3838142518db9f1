// What commands work on when they are not told (commands.hpp: load_graph_or_default and friends).

#include "commands.hpp"

#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>

#include <iostream>

namespace doppler::cli {

graph load_graph_or_default(const std::string& path) {
  if (!path.empty()) return load_graph(path);
  graph g = make_workload("llama-block", workload_params{});
  std::cerr << fmt::format("note: no --graph given: using the generated Llama block ({} ops); pass --graph FILE "
                           "for another graph (`doppler workload` generates them)\n",
                           g.size());
  return g;
}

std::string graph_label(const std::string& path) { return path.empty() ? "generated:llama-block" : path; }

void note_default_cluster(const CLI::Option* cluster) {
  if (cluster->count() > 0) return;
  std::cerr << fmt::format("note: no --cluster given: using {} (4 virtual CPU devices)\n", default_cluster);
}

CLI::Validator graph_file_check() {
  return CLI::Validator([](const std::string& s) { return s.empty() ? std::string("an empty path") : std::string(); },
                        "PATH", "graph path");
}

CLI::Option* add_graph_cluster_options(CLI::App* cmd, std::string& graph, std::string& cluster) {
  cmd->add_option("--graph", graph,
                  std::string("Graph: doppler-graph/1 JSON or a DOPPLER paper .txt file") + default_graph_help)
      ->check(graph_file_check());
  return cmd->add_option("--cluster", cluster, "Cluster: a doppler-cluster/1 file or a preset name")
      ->capture_default_str();
}

}  // namespace doppler::cli
