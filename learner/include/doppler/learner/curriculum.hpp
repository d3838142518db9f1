#pragma once
/// The training curriculum as one JSON file (`doppler-curriculum/1`): every field of train_options
/// and policy_options, each optional (absent = the default). Example:
///
///   {"format": "doppler-curriculum/1",
///    "phases": {"il_episodes": 200, "rl_episodes": 2000, "real_episodes": 0, "batch": 8},
///    "imitation": {"lr": 0.01, "epsilon": 0.3, "epsilon_final": 0.05, "teacher": "auto",
///                  "teacher_budget": 2000, "teacher_symmetry": false},
///    "reinforce": {"lr": 0.01, "lr_final": 0.2, "temperature": 1.0, "epsilon": 0.0,
///                  "entropy": 0.01, "entropy_final": 0.001, "gamma": 0.99,
///                  "baseline_decay": 0, "normalize_advantages": true},
///    "policy": {"hidden": 64, "steps": 4, "proj": 32, "mlp": 64, "hint": "", "hint_budget": 20000},
///    "model": "simple", "seed": 0}

#include <doppler/learner/policy.hpp>
#include <doppler/learner/trainer.hpp>

#include <set>
#include <string>
#include <string_view>

namespace doppler::learner {

struct curriculum {
  train_options train;
  policy_options policy;
  /// Phase I's teacher (`doppler train --teacher`): "auto" (the hint's placement when
  /// policy.hint is set, else cp, or single where that simulates faster), "cp", a placer name or a
  /// placement file; the CLI resolves it (the learner library takes a placement: problem::with_teacher).
  std::string teacher = "auto";
  int teacher_budget = 2000;  ///< search as the teacher: simulator evaluations
  bool teacher_symmetry = false;  ///< a placement teacher relabels interchangeable parts (--teacher-symmetry)
  /// The `policy` keys the file gives (hidden, kind, ...): `doppler train --init` refuses those that
  /// contradict the checkpoint's network rather than ignore them.
  std::set<std::string> policy_keys;
};

/// Parses a curriculum over `base` (fields not named keep base's values). Unknown keys, wrong
/// types and out-of-range values are errors naming `file`, the JSON path and the reason.
curriculum parse_curriculum(std::string_view text, const std::string& file = "<curriculum>",
                            curriculum base = {});
curriculum load_curriculum(const std::string& path, curriculum base = {});

}  // namespace doppler::learner
