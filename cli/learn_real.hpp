#pragma once
// Phase III of `doppler train` (cmd_learn_real.cpp): RL on makespans the actor runtime measures,
// driven through the learner actor, on one graph or several. doppler-learn with the actor layer only.

#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/placement.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace doppler::cli {

/// Phase III's settings (from the train_options and the --real-* flags).
struct real_phase_options {
  int episodes = 0;   ///< measured exploring episodes, over all graphs
  int repeat = 1;     ///< runs averaged per measurement
  int check = 5;      ///< final check: measurements of phase II's and the written greedy placement (>= 1)
  /// Per cluster (index as in run_real_phase's clusters): devices the real runtime slows (--real-straggler).
  std::vector<std::vector<std::pair<device_index, double>>> stragglers;
  std::string backend = "cpu";  ///< the engines' kernels, by name (`run --backend`)
  /// One cluster only: `doppler worker`s serving its devices (as `run --workers`), and their token.
  std::vector<std::string> workers;  ///< HOST:PORT
  std::string token;
  double busy_wait = 60;             ///< seconds a run waits its turn on workers another engine uses
};

/// What phase III did, per graph and in all.
struct real_phase_result {
  struct per_graph {
    /// The final check (real_phase_options::check fresh measurements of each, interleaved): mean
    /// measured makespan of the greedy placement phase II left and its standard error ...
    double initial_greedy = 0, initial_se = 0;
    double final_greedy = 0, final_se = 0;  ///< ... and of the written parameters' greedy placement
    double cp = 0;              ///< several graphs: the cp placement measured (the curve's unit)
    placement greedy;           ///< the selected parameters' greedy placement
  };
  std::vector<per_graph> graphs;
  int updates = 0, evaluations = 0, confirmed = 0;
  int check = 0;                ///< final-check measurements of each placement
  bool kept_initial = false;    ///< the parameters written are phase II's (none measured faster)
  double seconds = 0;
};

/// Runs phase III with `pol` (moved into a `doppler` learner served by an actor) on `graphs`, each
/// on its cluster (`cluster_of(k)`; one engine per distinct cluster): the learner places (a sampled
/// rollout), the engine measures, the learner takes a REINFORCE step every `t.real_batch` episodes
/// of one graph (batches take turns over the graphs); after every `t.real_eval_every` steps the
/// greedy placement of every graph is measured (an evaluation of the parameters, model selection);
/// before choosing, the initial and the two best evaluations are re-measured `t.real_confirm` times.
/// The selected parameters are written to `out`; then phase II's greedy placement and theirs are
/// measured `o.check` times each, interleaved (per_graph's means and standard errors). Rows go to
/// `curve` (and `t.on_episode`) numbered after its last row: `real` episodes and `real-greedy`
/// evaluations, in seconds with one graph, with several divided by that graph's measured cp
/// makespan (`problem` = the graph's index).
real_phase_result run_real_phase(learner::policy pol, const std::vector<graph>& graphs,
                                 const std::function<const cluster&(std::size_t)>& cluster_of, std::size_t n_clusters,
                                 const cost_model& cm, const learner::train_options& t, const real_phase_options& o,
                                 const std::string& out, std::vector<learner::train_row>& curve);

}  // namespace doppler::cli
