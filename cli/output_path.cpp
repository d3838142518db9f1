// Output paths checked before the work that ends by writing them (commands.hpp).

#include "commands.hpp"

#include <doppler/runtime/error.hpp>

#include <filesystem>

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

}  // namespace doppler::cli
