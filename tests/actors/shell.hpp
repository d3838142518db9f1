#pragma once
// Runs a shell command line from a CLI test (the built `doppler` is DOPPLER_CLI_PATH), capturing
// stdout with stderr joined to it.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace shell {

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
  return r;
}

}  // namespace shell
