// doppler — place, simulate, run and learn ML dataflow graphs on several devices.
// Exit codes: 0 success, 2 bad input (the message names the file, the JSON path and the reason),
// 130 stopped by Ctrl-C or SIGTERM with its state saved (train), 1 any other failure.

#include "commands.hpp"

#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/error.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  doppler::cli::restart_with_pinned_kernels(argv);  // before anything runs: it may restart the process
  // The libraries' warnings (e.g. the comm planner falling back to a direct copy) go to stderr:
  // stdout carries `--json` objects and `-o -` documents, which a log line would corrupt.
  spdlog::set_default_logger(spdlog::stderr_color_mt("doppler"));
  CLI::App app{
      "doppler: work-conserving execution, learned placement and planned communication for ML "
      "dataflow graphs.\n"
      "Graphs are doppler-graph/1 JSON files (or the DOPPLER paper's .txt graphs); clusters are\n"
      "doppler-cluster/1 files or preset names (see `doppler cluster --list`).",
      "doppler"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "doppler 0.1.0 (CPU kernels: OpenBLAS " + doppler::cpu::blas_core() + ")");
  doppler::cli::add_graph_commands(app);
  doppler::cli::add_cluster_commands(app);
  doppler::cli::add_sim_commands(app);
  doppler::cli::add_comm_commands(app);
#ifdef DOPPLER_HAVE_ACTORS
  doppler::cli::add_run_commands(app);
#endif
  doppler::cli::add_learn_commands(app);
  // A bare `doppler`: the help, which lists the commands (CLI11 would only say a subcommand is
  // required), and exit 2 as for any missing command.
  if (argc <= 1) {
    std::cerr << app.help();
    return 2;
  }
  // A first word that names no command: say so (CLI11 would only say a subcommand is required).
  const std::string word = argv[1];
  if (!word.empty() && word[0] != '-' &&
      app.get_subcommands([&](CLI::App* sub) { return sub->check_name(word); }).empty()) {
    std::string known;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      known += (known.empty() ? "" : ", ") + sub->get_name();
    std::cerr << "doppler: unknown command '" << doppler::excerpt(argv[1]) << "' (commands: " << known
              << "; see doppler --help)\n";
    return 2;
  }
  // An option before any command: doppler's own are --help and --version (CLI11 would only say a
  // subcommand is required).
  if (word.size() > 1 && word[0] == '-' && word != "-h" && word != "--help" && word != "--version") {
    std::cerr << "doppler: unknown option '" << doppler::excerpt(word) << "' before the command (doppler COMMAND "
              << "[OPTIONS]; see doppler --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const doppler::cli::interrupted& e) {
    std::cerr << "doppler: " << e.what() << "\n";
    return 130;
  } catch (const doppler::error& e) {
    std::cerr << "doppler: " << e.what() << "\n";
    return doppler::is_bad_input(e.code()) ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "doppler: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
