#pragma once
// Running the built `doppler` (DOPPLER_CLI_PATH, a compile definition of the CLI tests) from a
// test: stdout and stderr captured apart, under a 60 s timeout so a hang fails (rc 124); a sanitizer
// report on its stderr fails the calling test whatever its exit status (sanitizer_output.hpp).
#include "sanitizer_output.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace cli_run {

struct result {
  int rc = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// The whole file (empty when it cannot be read).
inline std::string slurp(const std::string& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `PROGRAM ARGS` in `dir`; `env`, when given, are arguments of env(1) that change its
/// environment first (e.g. "-u OPENBLAS_CORETYPE", "OPENBLAS_CORETYPE=Zen").
inline result run_program(const std::string& program, const temp_dir& dir, const std::string& args,
                          const std::string& env = "") {
  const std::string cmd = "cd '" + dir.path.string() + "' && " + (env.empty() ? "" : "env " + env + " ") +
                          "timeout 60 '" + program + "' " + args + " >" + (dir / "_out") + " 2>" + (dir / "_err");
  const int status = std::system(cmd.c_str());
  result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "_out");
  r.err = slurp(dir / "_err");
  CHECK_MESSAGE(!sanitizer_output::has_report(r.err), "a sanitizer reported in `" << program << " " << args << "`:\n" << r.err);
  return r;
}

/// Runs `doppler ARGS` in `dir` (run_program with the built CLI).
inline result run(const temp_dir& dir, const std::string& args, const std::string& env = "") {
  return run_program(DOPPLER_CLI_PATH, dir, args, env);
}

}  // namespace cli_run
