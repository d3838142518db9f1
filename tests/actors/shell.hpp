#pragma once
// Runs a shell command line from a CLI test (the built `doppler` is DOPPLER_CLI_PATH), capturing
// stdout with stderr joined to it.
#include "../sanitizer_output.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace shell {

/// The built `doppler`.
inline const std::string cli = DOPPLER_CLI_PATH;

/// Whether `doppler-learn` (the LibTorch twin) was built beside it; says why a test is skipped when not.
inline bool have_learner() {
  if (std::filesystem::exists(std::filesystem::path(cli).parent_path() / "doppler-learn")) return true;
  MESSAGE("built without LibTorch: skipped");
  return false;
}

struct result {
  int code = 0;
  std::string out;
};

inline result sh(const std::string& cmd) {
  result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  CHECK_MESSAGE(!sanitizer_output::has_report(r.out), "a sanitizer reported in `" << cmd << "`:\n" << r.out);
  return r;
}

/// Runs `cmd`, which must be refused: exit 2 with `expected` in its one-line error (the output is
/// captured for the failure report). Returns the result for further checks.
inline result check_refused(const std::string& cmd, const std::string& expected) {
  result r = sh(cmd);
  CAPTURE(cmd);
  CAPTURE(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find(expected) != std::string::npos);
  return r;
}

}  // namespace shell
