#pragma once
/// Placers: one interface, chosen by name from one registry (StarPU-style). Every placer returns a
/// complete placement; those that model memory respect device memory and throw
/// `errc::infeasible` when the graph cannot fit.

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/sim.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace doppler {

struct placer_options {
  std::uint64_t seed = 0;
  int budget = 2000;                 ///< search: simulator evaluations
  sim_options sim;                   ///< how `search` scores candidates (model, mode, streams)
  bool respect_memory = true;
  std::function<void(double)> progress;  ///< optional: called with fraction done (0..1)
};

class placer {
 public:
  virtual ~placer() = default;
  virtual std::string_view name() const noexcept = 0;
  virtual placement place(const graph& g, const cluster& c, const cost_model& cm,
                          const placer_options& opt) = 0;
};

/// Names: single, round-robin, random, cp, heft, m-etf, metis, search.
std::vector<std::string> placer_names();
std::string placer_description(std::string_view name);
/// Throws `errc::unknown_kind` listing the valid names.
std::unique_ptr<placer> make_placer(std::string_view name);

/// One decision of the critical-path teacher, with every choice that tied (the learner's imitation
/// phase trains on all of them).
struct cp_decision {
  op_index op = 0;
  device_index device = 0;
  std::vector<op_index> tied_ops;        ///< ready ops of the same (max) bottom level, `op` included
  std::vector<device_index> tied_devices;///< devices of the same (min) earliest start time, `device` included
};

/// The DOPPLER critical-path teacher exactly: ready set; select max bottom level; place on the device
/// of minimum earliest start time, EST = max(device available, max over preds of pred end + comm if on
/// another device); ties broken by an RNG seeded with `seed`. Fills `decisions` when given.
placement cp_place(const graph& g, const cluster& c, const cost_model& cm, std::uint64_t seed,
                   std::vector<cp_decision>* decisions = nullptr);

}  // namespace doppler
