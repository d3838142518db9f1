#pragma once
// A fresh temporary directory for one test case, removed (with everything in it) at its end.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

struct temp_dir {
  std::filesystem::path path;

  explicit temp_dir(const std::string& prefix = "doppler_test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// The path of file `f` inside the directory.
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};
