// Output paths checked before the work that ends by writing them (commands.hpp).

#include "commands.hpp"

#include <doppler/runtime/error.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace doppler::cli {

void check_output_path(const std::string& path, const char* flag) {
  if (path.empty() || path == "-") return;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw error(errc::bad_argument, path, flag, "directory '" + dir.string() + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0) throw error(errc::bad_argument, path, flag, "directory '" + dir.string() + "' is not writable");
  if (std::filesystem::is_directory(path, ec)) throw error(errc::bad_argument, path, flag, "is a directory");
}

void check_output_given(const CLI::App& cmd, const std::string& out) {
  if (cmd.count("--output") > 0 && out.empty())
    throw error(errc::bad_argument, "", "--output", "is empty: give a file name");
}

namespace {

/// The same file: both exist and are one inode, or (for outputs not yet written) their absolute
/// normalized paths are equal.
bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  auto ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  auto cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

bool names_a_file(const std::string& path) { return !path.empty() && path != "-"; }

}  // namespace

void check_outputs(const CLI::App& cmd, const std::vector<file_arg>& outputs, const std::vector<file_arg>& inputs) {
  for (const file_arg& o : outputs) {
    if (o.path.empty()) {
      const CLI::Option* opt = cmd.get_option_no_throw(o.flag);
      if (opt && opt->count() > 0) throw error(errc::bad_argument, "", o.flag, "is empty: give a file name");
      continue;
    }
    if (o.path == "-" && !o.stdout_ok)
      throw error(errc::bad_argument, "", o.flag,
                  "'-' (stdout) is not an output here: the command's report goes to stdout; give a file name");
    check_output_path(o.path, o.flag.c_str());
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const file_arg& o = outputs[i];
    if (!names_a_file(o.path)) continue;
    for (std::size_t k = i + 1; k < outputs.size(); ++k)
      if (names_a_file(outputs[k].path) && same_file(o.path, outputs[k].path))
        throw error(errc::bad_argument, o.path, o.flag,
                    "is also " + outputs[k].flag + "'s file: one output would replace the other");
    for (const file_arg& in : inputs) {
      std::error_code ec;
      if (names_a_file(in.path) && std::filesystem::is_regular_file(in.path, ec) && same_file(o.path, in.path))
        throw error(errc::bad_argument, o.path, o.flag,
                    "is the " + in.flag + " input: writing it would destroy the input (choose another name)");
    }
  }
}

std::vector<file_arg> input_args(const std::vector<std::string>& paths, const std::string& flag) {
  std::vector<file_arg> out;
  for (const auto& p : paths) out.push_back({p, flag});
  return out;
}

}  // namespace doppler::cli
