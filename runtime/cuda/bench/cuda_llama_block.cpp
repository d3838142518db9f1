// cuda_llama_block — the Llama block benchmark on one GPU split into virtual devices (separate
// streams and memory pools), for scripts/gpu-check.sh. Prints markdown.
//
// 1. GPU-resident runs (no actors): tensors stay in device memory, inputs cross virtual devices with
//    cudaMemcpyAsync, completions come back by event; work-conserving (an op launches the moment its
//    inputs are on its device) vs BSP (level by level, copies between levels). Same placement.
// 2. With --actors (needs the CAF layer): the actor engine with the `cuda` actor backend, WC vs BSP,
//    GPU-resident (outputs stay in device memory, device actors copy them device to device) and
//    host-staged (each op uploads its inputs and downloads its output).
// Every run's exits are checked against execute_reference_cuda (1e-4 relative).
//
// usage: cuda_llama_block [--devices 4] [--streams 4] [--small] [--repeat 3] [--placers cp,heft]
//                         [--placement NAME=FILE] [--cluster cpu:4] [--actors]
#include <doppler/cuda/cuda_backend.hpp>
#include <doppler/cuda/resident_runner.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/workloads.hpp>
#ifdef DOPPLER_CUDA_BENCH_ACTORS
#include <doppler/actors/engine.hpp>
#include <doppler/cuda/actor_backend.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace doppler;
namespace dc = doppler::cuda;

namespace {

struct stats {
  double mean = 0, min = 0;
};
stats summarize(const std::vector<double>& xs) {
  stats s;
  s.min = *std::min_element(xs.begin(), xs.end());
  for (double x : xs) s.mean += x / static_cast<double>(xs.size());
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (a <= s.size()) {
    const std::size_t b = std::min(s.find(sep, a), s.size());
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  int devices = 4, streams = 4, repeat = 3;
  bool small = false, with_actors = false;
  std::string cluster_name, placers = "cp";
  std::vector<std::pair<std::string, std::string>> placement_files;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= argc) throw error(errc::bad_argument, arg + " needs a value");
      return argv[++a];
    };
    if (arg == "--devices") devices = std::atoi(value().c_str());
    else if (arg == "--streams") streams = std::atoi(value().c_str());
    else if (arg == "--repeat") repeat = std::atoi(value().c_str());
    else if (arg == "--small") small = true;
    else if (arg == "--actors") with_actors = true;
    else if (arg == "--cluster") cluster_name = value();
    else if (arg == "--placers") placers = value();
    else if (arg == "--placement") {
      const std::string v = value();
      const auto eq = v.find('=');
      if (eq == std::string::npos) throw error(errc::bad_argument, "--placement wants NAME=FILE");
      placement_files.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else throw error(errc::bad_argument, "unknown argument " + arg);
  }
  if (devices < 1 || streams < 1 || repeat < 1) throw error(errc::bad_argument, "devices, streams, repeat must be >= 1");
  std::string why;
  if (!dc::gpu_available(&why)) {
    std::printf("skipped: no GPU (%s)\n", why.c_str());
    return 0;
  }
  workload_params wp = small ? workload_params{} : workload_params::llama_7b();
  wp.shards = devices;
  const graph g = make_workload("llama-block", wp);
  if (cluster_name.empty()) cluster_name = "cpu:" + std::to_string(devices);
  const cluster c = make_preset(cluster_name);
  const cost_model cm;
  const auto gpus = dc::probe_gpus();
  std::printf("### llama-block on %s\n\n", gpus.names.empty() ? "GPU 0" : gpus.names.front().c_str());
  std::printf("dim %lld, heads %lld, seq %lld, shards %lld: %zu ops, %.1f GFLOP; %d virtual devices on GPU 0, "
              "%d streams each; placements for cluster `%s`; %d timed runs after one warm-up.\n\n",
              static_cast<long long>(wp.dim), static_cast<long long>(wp.heads), static_cast<long long>(wp.seq),
              static_cast<long long>(wp.shards), g.size(), g.total_flops() / 1e9, devices, streams,
              cluster_name.c_str(), repeat);

  const std::uint64_t seed = 1;
  const auto t_ref = std::chrono::steady_clock::now();
  const std::vector<tensor> ref = dc::execute_reference_cuda(g, seed);
  const double ref_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ref).count();
  std::printf("single-device GPU reference (1 stream, incl. downloads of every op): %.3f s\n\n", ref_s);

  std::vector<std::pair<std::string, placement>> plans;
  for (const std::string& name : split(placers, ','))
    plans.emplace_back(name, make_placer(name)->place(g, c, cm, placer_options{}));
  for (const auto& [name, file] : placement_files) {
    try {
      plans.emplace_back(name, load_placement(file, g, c));
    } catch (const std::exception& e) {
      std::printf("placement %s skipped: %s\n\n", name.c_str(), e.what());
    }
  }

  dc::device_options o;
  o.streams = streams;
  std::vector<std::unique_ptr<dc::cuda_device>> owned;
  std::vector<dc::cuda_device*> devs;
  for (int d = 0; d < devices; ++d) {
    owned.push_back(std::make_unique<dc::cuda_device>(d, o));
    devs.push_back(owned.back().get());
  }

  std::printf("| path | placement | mode | mean s | min s | copies | max rel. error |\n|---|---|---|---|---|---|---|\n");
  for (const auto& [name, p] : plans) {
    double wc_mean = 0;
    for (const bool wc : {true, false}) {
      std::vector<double> times;
      std::size_t copies = 0;
      double err = 0;
      for (int r = 0; r <= repeat; ++r) {  // run 0 warms up
        dc::resident_runner<dc::cuda_device> run(g, p, devs, seed);
        const double s = wc ? run.wc() : run.bsp();
        if (r > 0) times.push_back(s);
        copies = run.copies();
        if (r == repeat)
          for (op_index i = 0; i < g.size(); ++i)
            if (g.succs(i).empty())
              err = std::max(err, max_rel_diff(devs[0]->download(run.output(i), 0), ref[i]));
        for (auto* d : devs) d->synchronize();
      }
      const stats st = summarize(times);
      if (wc) wc_mean = st.mean;
      std::printf("| gpu-resident | %s | %s | %.4f | %.4f | %zu | %.1e%s |\n", name.c_str(), wc ? "wc" : "bsp", st.mean,
                  st.min, copies, err, err <= 1e-4 ? "" : " FAIL");
      if (!wc) std::printf("| | %s | bsp / wc | %.2fx | | | |\n", name.c_str(), st.mean / wc_mean);
    }
  }
#ifdef DOPPLER_CUDA_BENCH_ACTORS
  if (with_actors) {
    owned.clear();
    devs.clear();
    for (const bool resident : {true, false}) {
      auto backend = std::make_shared<dc::actor_backend>(devices, o, resident);
      engine e(c, engine_options{}.with_streams(streams).with_custom_backend(backend));
      const char* how = resident ? "actors (gpu-resident)" : "actors (host-staged)";
      for (const auto& [name, p] : plans) {
        e.run(g, p, run_options{}.with_seed(seed));  // warm-up
        for (exec_mode mode : {exec_mode::wc, exec_mode::bsp}) {
          const run_result r = e.run(g, p, run_options{}.with_mode(mode).with_repeat(repeat).with_seed(seed));
          double err = 0;
          for (op_index i = 0; i < g.size(); ++i)
            if (g.succs(i).empty()) err = std::max(err, max_rel_diff(r.outputs[i], ref[i]));
          std::printf("| %s | %s | %s | %.4f | %.4f | %llu | %.1e%s |\n", how, name.c_str(),
                      mode == exec_mode::wc ? "wc" : "bsp", r.mean_makespan(), r.min_makespan(),
                      static_cast<unsigned long long>(r.transfers.back()), err, err <= 1e-4 ? "" : " FAIL");
        }
      }
    }
  }
#else
  if (with_actors) std::printf("\n(--actors: skipped, this build has no CAF actor layer)\n");
#endif
  std::printf("\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cuda_llama_block: %s\n", e.what());
  return 1;
}
