#pragma once
// The `doppler` subcommands. Each add_* registers its subcommands on the app; the callbacks throw
// doppler::error for bad input, which main() turns into a message on stderr and exit code 2.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/graph.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace doppler::cli {

/// A command stopped early on SIGINT or SIGTERM after saving what it needs to continue (train's
/// OUTPUT.resume); main() prints the message and exits with 130, the shell's code for Ctrl-C.
struct interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// workload, validate, info, convert
void add_graph_commands(CLI::App& app);
/// cluster
void add_cluster_commands(CLI::App& app);
/// place, simulate, compare
void add_sim_commands(CLI::App& app);
/// run, calibrate, worker (only with the CAF actor layer: DOPPLER_HAVE_ACTORS)
void add_run_commands(CLI::App& app);
/// train, place-learned (cmd_learn.cpp in doppler-learn; `doppler` forwards them to it)
void add_learn_commands(CLI::App& app);

/// Refuses an output path whose directory is missing or not writable, or that is a directory, before
/// any work is done (a training or a run that fails at its end on a typo loses its work); "" and
/// "-" pass. Errors name the path and `flag`.
void check_output_path(const std::string& path, const char* flag);
/// Refuses `-o ''`: where an empty --output means "not given" (a default name follows) it must not
/// be typed; errors name --output.
void check_output_given(const CLI::App& cmd, const std::string& out);

/// A file a command writes (`flag` names it: "--output", "--csv") or reads (its input flag).
struct file_arg {
  std::string path;
  std::string flag;
  bool stdout_ok = false;  ///< an output that may be "-" (stdout): the command's report then goes to stderr
};
/// Every output of a command checked before its work: an output flag given an empty value
/// (`--csv ''`) is refused, "-" is refused where the output is not `stdout_ok` (the report on stdout
/// would mix with it), each path passes check_output_path, no two outputs are the same file (the
/// later write would replace the earlier one), and no output is one of the command's existing input
/// files (writing it would destroy the input). "" (not given) and "-" pass the last two.
/// Errors are errc::bad_argument naming the flags.
void check_outputs(const CLI::App& cmd, const std::vector<file_arg>& outputs, const std::vector<file_arg>& inputs = {});
/// `flag` once per path of a repeatable input option (the --graph list).
std::vector<file_arg> input_args(const std::vector<std::string>& paths, const std::string& flag);

/// First thing in main(): sets OPENBLAS_CORETYPE=Haswell and ATEN_CPU_CAPABILITY=avx2 where the CPU
/// has AVX2 and FMA, unless the user set them or DOPPLER_NATIVE_KERNELS=1 (kernels.cpp says why), and
/// when the OpenBLAS loaded before main runs other kernels, starts this program again with the same
/// arguments (execv) so that it loads with the pinned ones.
/// Every process started from here (doppler-learn, by forward_to_learn_twin) inherits them.
void restart_with_pinned_kernels(char** argv);

/// Re-executes this command in the LibTorch twin `doppler-learn` (cmd_learn_forward.cpp); in
/// doppler-learn itself it throws errc::internal.
[[noreturn]] void forward_to_learn_twin();

/// `DEVICE:FACTOR` (a device id or index of `c`, a finite factor ≥ 1), the value of `flag`
/// (simulate --straggler, run --straggler, train --real-straggler); errc::bad_argument naming the
/// flag otherwise (flags.cpp).
std::pair<device_index, double> parse_straggler(const std::string& s, const cluster& c,
                                                const std::string& flag = "--straggler");
/// parse_straggler of every value.
std::vector<std::pair<device_index, double>> parse_stragglers(const std::vector<std::string>& values, const cluster& c,
                                                              const std::string& flag = "--straggler");

/// A CLI11 transform for unsigned 64-bit options (the seeds): CLI11 would wrap "-1" to 2^64 - 1, clamp
/// a decimal beyond 2^64 - 1 to it without a word and read a leading 0 as octal; the value is passed
/// on in canonical decimal (flags.cpp). Use with ->transform(), not ->check() (which cannot rewrite).
CLI::Validator non_negative();
/// A CLI11 transform for signed 64-bit options (workload dimensions): CLI11 would clamp a decimal
/// beyond 2^63 - 1 to it (the range check after it then printed a number the user never typed) and
/// read a leading 0 as octal; passed on in canonical decimal. Use with ->transform().
CLI::Validator int64_text();
/// --streams: 1 to max_streams (more would ask for that many worker threads or queue slots per
/// device); errc::bad_argument naming the flag otherwise (flags.cpp).
void check_streams_flag(int streams);
/// A chunk size flag (`flag`: --chunk-bytes): 1 byte to 1 TiB, the comm planner's range
/// (comm::min_chunk_bytes..max_chunk_bytes); errc::bad_argument naming the flag otherwise (flags.cpp).
void check_chunk_bytes_flag(double bytes, const char* flag = "--chunk-bytes");
/// A comm planner method (plan-comm --method, --methods; run and simulate --plan-method, --refine):
/// one of comm::method_names(); errc::bad_argument naming the flag and the known ones otherwise.
void check_comm_method_flag(const std::string& method, const char* flag);
/// --max-chunks (planned transfers' most chunks per tensor): at least 1 (flags.cpp).
void check_max_chunks_flag(std::uint32_t chunks);

/// What a command works on when it is not told: a bare `doppler place`, `simulate`, `compare`, `run`
/// or `train` places (runs, trains on) the generated Llama block on 4 virtual CPU devices, and says
/// so on stderr (defaults.cpp).
/// The graph without --graph: `path` loaded, or with an empty `path` (the flag not given: the flag
/// itself refuses an empty value, graph_file_check) the generated Llama block (`doppler workload
/// llama-block`, its default parameters), with a note on stderr.
graph load_graph_or_default(const std::string& path);
/// How reports name the graph of `path` (empty: the generated default).
std::string graph_label(const std::string& path);
/// The --graph help suffix of those commands.
inline constexpr const char* default_graph_help = " (default: the generated Llama block, `doppler workload llama-block`)";
/// The cluster without --cluster: `cpu:4`, 4 virtual CPU devices (of whatever cores the host has).
inline constexpr const char* default_cluster = "cpu:4";

/// The help text of `--busy-wait` (run; train and calibrate with their worker flag's name in front).
inline constexpr const char* busy_wait_help =
    "Seconds a run waits for worker devices that are serving another engine's run (a worker serves one run at "
    "a time; the later run waits its turn) before it fails; 0: fail at once";
/// Prints a note on stderr when `cluster` (a command's --cluster option) was not given, so a
/// forgotten --cluster is seen.
void note_default_cluster(const CLI::Option* cluster);
/// The check of --graph options: a path may not be empty (an unset shell variable would otherwise
/// pick the default graph).
CLI::Validator graph_file_check();
/// Registers a command's single --graph (with graph_file_check and the default named) and --cluster
/// (default `cluster`'s value); returns the --cluster option for note_default_cluster.
CLI::Option* add_graph_cluster_options(CLI::App* cmd, std::string& graph, std::string& cluster);

/// plan-comm, check-schedule, compare-comm (cmd_comm.cpp)
void add_comm_commands(CLI::App& app);

}  // namespace doppler::cli
