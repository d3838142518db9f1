#pragma once
/// Several jobs at once: a demand whose chunks belong to weighted jobs, planned jointly over the
/// shared links (the traffic-engineering view), compared with each job planned alone (on an idle
/// network: a lower reference, not simultaneously achievable) and with first-come-first-served
/// sharing (each job, in order, planned on the capacity the earlier ones left).

#include <doppler/comm/planner.hpp>

#include <string>
#include <vector>

namespace doppler::comm {

struct tenant_outcome {
  std::string job;
  double weight = 1;
  std::int32_t joint_epochs = 0, alone_epochs = 0, fcfs_epochs = 0;  ///< the job's completion epoch
};

struct tenant_comparison {
  std::vector<tenant_outcome> jobs;
  plan_result joint;
  schedule fcfs;  ///< the first-come-first-served union, validated
  /// Σ weight × completion epochs, per policy (lower is better).
  double weighted_joint = 0, weighted_alone = 0, weighted_fcfs = 0;
};

/// Plans `d` (which must have jobs) jointly with `opt`, each job alone, and first-come-first-served
/// in job order (greedy or milp around the earlier jobs' sends).
tenant_comparison compare_tenants(const cluster& c, const demand& d, const plan_options& opt);

}  // namespace doppler::comm
