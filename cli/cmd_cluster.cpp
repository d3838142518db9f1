// Cluster subcommand: write a preset as doppler-cluster/1, or list the presets.

#include "commands.hpp"

#include <doppler/runtime/cluster.hpp>

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace doppler::cli {

void add_cluster_commands(CLI::App& app) {
  auto* cmd = app.add_subcommand("cluster", "Write a cluster preset (or a checked copy of a cluster file) as doppler-cluster/1");
  struct opts {
    std::string spec, out;
    bool list = false;
  };
  auto o = std::make_shared<opts>();
  std::string names;  // from the catalog, so a new preset is listed here too
  for (const auto& [name, what] : preset_catalog()) names += (names.empty() ? "" : ", ") + name;
  cmd->add_option("preset", o->spec, "Preset name (" + names + ") or a doppler-cluster/1 file");
  cmd->add_option("-o,--output", o->out, "Output file (default: stdout)");
  cmd->add_flag("--list", o->list, "List the presets (the default without a preset)");
  cmd->callback([o, cmd] {
    check_outputs(*cmd, {{o->out, "--output", true}}, {{o->spec, "preset"}});
    if (o->list || o->spec.empty()) {
      std::cout << "cluster presets:\n";
      for (auto& [name, what] : preset_catalog()) std::cout << fmt::format("  {:<18} {}\n", name, what);
      return;
    }
    cluster c = load_cluster_or_preset(o->spec);
    std::string dest = o->out.empty() ? "-" : o->out;
    save_cluster(c, dest);
    if (dest != "-")
      std::cout << fmt::format("wrote {}: {} devices, {} switches, {} directed links\n", dest, c.device_count(),
                               c.switches().size(), c.links().size());
  });
}

}  // namespace doppler::cli
