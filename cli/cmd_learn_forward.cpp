// train / place-learned in the everyday `doppler` binary: forwarded to its LibTorch-linked twin
// `doppler-learn` (same directory, same arguments), so `doppler` itself starts in milliseconds
// instead of paying LibTorch's ~1.5 s load on every command. cmd_learn.cpp holds the real commands.

#include "commands.hpp"

#include <doppler/runtime/error.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace doppler::cli {

/// Replaces this process with doppler-learn and the original arguments (its CPU kernels pinned by
/// main(): the variables carry over).
void forward_to_learn_twin() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto twin = (ec ? std::filesystem::path(".") : self.parent_path()) / "doppler-learn";
  if (!std::filesystem::exists(twin))
    throw error(errc::bad_argument, "this doppler was built without LibTorch (DOPPLER_WITH_TORCH=OFF): "
                                    "train, place-learned and run --learner doppler need the learner (" + twin.string() + " not found)");
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t b = 0; b < all.size();) {
    std::size_t e = all.find('\0', b);
    if (e == std::string::npos) e = all.size();
    args.push_back(all.substr(b, e - b));
    b = e + 1;
  }
  if (args.empty()) throw error(errc::internal, "cannot read /proc/self/cmdline");
  args[0] = twin.string();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  throw error(errc::io, twin.string(), "", std::string("cannot start: ") + std::strerror(errno));
}

void add_learn_commands(CLI::App& app) {
  for (auto [name, what] : {std::pair{"train", "Train a DOPPLER policy on one or more graphs: imitation of a teacher, "
                                               "RL in the simulator, RL on measurements (see `doppler train --help`)"},
                            std::pair{"place-learned", "Place a graph with a trained DOPPLER policy (greedy SEL + PLC)"}}) {
    auto* cmd = app.add_subcommand(name, what);
    cmd->prefix_command();
    cmd->allow_extras();
    cmd->set_help_flag();
    cmd->callback([] { forward_to_learn_twin(); });
  }
}

}  // namespace doppler::cli
