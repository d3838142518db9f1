// The curriculum file: fields land in train/policy options; bad input names the JSON path.
#include <doppler/learner/curriculum.hpp>
#include <doppler/runtime/error.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace doppler;
using namespace doppler::learner;

TEST_CASE("a curriculum sets the fields it names and keeps the others") {
  auto c = parse_curriculum(R"({"format": "doppler-curriculum/1",
      "phases": {"il_episodes": 12, "rl_episodes": 34, "batch": 5, "real_batch": 2, "real_eval_every": 0},
      "imitation": {"lr": 0.02, "epsilon_final": 0.0, "teacher": "search", "teacher_budget": 500,
                    "teacher_symmetry": true, "teacher_forcing": 0.25},
      "reinforce": {"temperature": 0.5, "gamma": 1.0, "normalize_advantages": false, "baseline_decay": 0.9,
                    "advantage_floor": 0.05, "algorithm": "ppo", "ppo_epochs": 3,
                    "ppo_target_kl": 0.02},
      "policy": {"hidden": 128, "steps": 6, "kind": "joint"},
      "model": "wc", "seed": 7})");
  CHECK(c.train.il_episodes == 12);
  CHECK(c.train.rl_episodes == 34);
  CHECK(c.train.real_episodes == 0);
  CHECK(c.train.batch == 5);
  CHECK(c.train.real_batch == 2);
  CHECK(c.train.real_eval_every == 0);
  CHECK(c.train.il_lr == doctest::Approx(0.02));
  CHECK(c.train.il_epsilon == doctest::Approx(train_options{}.il_epsilon));
  CHECK(c.train.il_epsilon_final == 0);
  CHECK(c.train.temperature == doctest::Approx(0.5));
  CHECK(c.train.gamma == 1.0);
  CHECK_FALSE(c.train.normalize_advantages);
  CHECK(c.train.baseline_decay == doctest::Approx(0.9));
  CHECK(c.train.advantage_floor == doctest::Approx(0.05));
  CHECK(c.train.ppo);
  CHECK(c.train.ppo_epochs == 3);
  CHECK(c.train.ppo_target_kl == doctest::Approx(0.02));
  CHECK(c.train.ppo_clip == doctest::Approx(train_options{}.ppo_clip));
  CHECK(c.train.sim.model == sim_model::wc);
  CHECK(c.train.seed == 7);
  CHECK(c.policy.hidden == 128);
  CHECK(c.policy.steps == 6);
  CHECK(c.policy.mlp == policy_options{}.mlp);
  CHECK(c.policy.seed == 7);
  CHECK(c.policy.kind == policy_kind::joint);
  CHECK(c.teacher == "search");
  CHECK(c.teacher_budget == 500);
  CHECK(c.teacher_symmetry);
  CHECK(c.train.il_teacher_forcing == doctest::Approx(0.25));
  CHECK_FALSE(parse_curriculum(R"({"format": "doppler-curriculum/1"})").teacher_symmetry);
  CHECK(parse_curriculum(R"({"format": "doppler-curriculum/1"})").teacher == "auto");
  CHECK(parse_curriculum(R"({"format": "doppler-curriculum/1"})").policy.active_search == 0);
  CHECK(parse_curriculum(R"({"format": "doppler-curriculum/1", "policy": {"active_search": 0.05}})")
            .policy.active_search == doctest::Approx(0.05));
  CHECK_FALSE(parse_curriculum(R"({"format": "doppler-curriculum/1"})").train.self_imitation_gate);
  CHECK(parse_curriculum(R"({"format": "doppler-curriculum/1", "reinforce": {"self_imitation": 2, "self_imitation_gate": true}})")
            .train.self_imitation_gate);
}

TEST_CASE("curriculum errors name the path") {
  auto path_of = [](const std::string& text) {
    try {
      parse_curriculum(text, "c.json");
    } catch (const error& e) {
      CHECK(e.file() == "c.json");
      return e.path();
    }
    return std::string("no error");
  };
  CHECK(path_of(R"({"phases": {}})") == "format");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "phases": {"il_episodes": -1}})") == "phases.il_episodes");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "phases": {"episodes": 3}})") == "phases.episodes");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "policy": {"kind": "nope"}})") == "policy.kind");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "reinforce": {"gamma": "high"}})") == "reinforce.gamma");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "reinforce": {"epsilon": 2}})") == "reinforce.epsilon");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "model": "fast"})") == "model");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "reinforce": {"algorithm": "a2c"}})") == "reinforce.algorithm");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "reinforce": {"ppo_epochs": 0}})") == "reinforce.ppo_epochs");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "reinforce": {"ppo_target_kl": -0.1}})") == "reinforce.ppo_target_kl");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "typo": 1})") == "typo");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "reinforce": {"self_imitation_gate": 1}})") ==
        "reinforce.self_imitation_gate");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "policy": {"active_search": -1}})") == "policy.active_search");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "policy": {"kind": "gdp", "active_search": 0.1}})") ==
        "policy.active_search");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "imitation": {"teacher": 3}})") == "imitation.teacher");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "imitation": {"teacher_budget": 0}})") ==
        "imitation.teacher_budget");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "imitation": {"teacher_symmetry": 1}})") ==
        "imitation.teacher_symmetry");
  CHECK(path_of(R"({"format": "doppler-curriculum/1", "imitation": {"teacher_forcing": 2}})") ==
        "imitation.teacher_forcing");
  CHECK_THROWS_AS(parse_curriculum("{not json"), error);
  CHECK_THROWS_WITH_AS(parse_curriculum(R"({"format": "doppler-graph/1", "dtype": "f32", "ops": []})", "g.json"),
                       doctest::Contains("got \"doppler-graph/1\""), error);  // the format, not "dtype: unknown key"
  CHECK_THROWS_AS(parse_curriculum("[1, 2]", "a.json"), error);
  CHECK_THROWS_WITH_AS(parse_curriculum(R"({"format": "doppler-curriculum/1", "phases": {"rl_episodes": 5, "rl_episodes": 9}})", "c.json"),
                       doctest::Contains("phases.rl_episodes"), error);  // a repeated key, not the last one silently
  // An unknown key's error names the keys that level accepts (a typo is found at once).
  CHECK_THROWS_WITH_AS(parse_curriculum(R"({"format": "doppler-curriculum/1", "reinforce": {"temprature": 2}})", "c.json"),
                       doctest::Contains("expected one of: lr, lr_final, temperature"), error);
}

// examples/curricula: the recipes docs/learner.md points users at. Each must load, and each must
// set what its name promises (a renamed or mistyped key would otherwise fall back to a default).
TEST_CASE("the example curricula load and set their recipes") {
  const std::string dir = DOPPLER_CURRICULA_DIR;
  const curriculum paper = load_curriculum(dir + "/paper.json");
  CHECK(paper.train.il_episodes == 2000);
  CHECK(paper.train.rl_episodes == 2000);
  CHECK(paper.train.batch == 8);
  CHECK(paper.teacher == "cp");
  CHECK(paper.policy.hidden == 128);
  CHECK(paper.policy.steps == 6);
  CHECK(paper.train.sim.model == sim_model::simple);

  const curriculum budget = load_curriculum(dir + "/search-budget.json");
  CHECK(budget.train.il_episodes == 200);
  CHECK(budget.train.rl_episodes == 20000);  // search's budget in the results tables
  CHECK(budget.train.temperature == doctest::Approx(1.5));
  CHECK(budget.train.self_imitation == 2);
  CHECK(budget.train.self_imitation_gate);
  CHECK(budget.policy.active_search == doctest::Approx(0.05));
  CHECK(budget.policy.sibling);

  const curriculum tune = load_curriculum(dir + "/fine-tune.json");
  CHECK(tune.train.il_episodes == 0);  // the checkpoint given with --init is phase I's result
  CHECK(tune.train.rl_episodes == 20000);
  CHECK(tune.train.temperature == doctest::Approx(0.7));
  CHECK(tune.policy.active_search == doctest::Approx(0.05));
  CHECK_FALSE(tune.policy.sibling);  // a checkpoint brings its own features
}
