// The curriculum file (curriculum.hpp).
#include <doppler/learner/curriculum.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/json.hpp>
#include <doppler/runtime/placer.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <initializer_list>

namespace doppler::learner {

namespace {

using json = nlohmann::json;

struct reader {
  const std::string& file;

  [[noreturn]] void fail(errc code, const std::string& path, const std::string& why) const {
    throw error(code, file, path, why);
  }
  /// The object at `path`, rejecting keys not in `known`.
  void keys(const json& j, const std::string& path, std::initializer_list<const char*> known) const {
    if (!j.is_object()) fail(errc::bad_type, path.empty() ? "$" : path, "expected an object");
    for (const auto& [k, v] : j.items()) {
      bool ok = false;
      for (const char* name : known) ok = ok || k == name;
      if (ok) continue;
      std::string expected;
      for (const char* name : known) expected += (expected.empty() ? "" : ", ") + std::string(name);
      fail(errc::bad_value, path.empty() ? k : path + "." + k, "unknown key (expected one of: " + expected + ")");
    }
  }
  void number(const json& j, const std::string& path, const char* key, double& out, double lo, double hi) const {
    if (!j.contains(key)) return;
    const auto& v = j.at(key);
    std::string p = path.empty() ? key : path + "." + key;
    if (!v.is_number()) fail(errc::bad_type, p, "expected a number");
    double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
      fail(errc::bad_value, p, fmt::format("must be in [{:g}, {:g}], got {}", lo, hi, v.dump()));  // 1e-12, not 0.000000
    out = x;
  }
  void integer(const json& j, const std::string& path, const char* key, int& out, int lo,
               int hi = 1'000'000'000) const {
    if (!j.contains(key)) return;
    const auto& v = j.at(key);
    std::string p = path.empty() ? key : path + "." + key;
    if (!v.is_number_integer()) fail(errc::bad_type, p, "expected an integer");
    // an unsigned value beyond long long's range reads as negative: compare it as what it is
    const bool too_big = v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi);
    auto x = too_big ? static_cast<long long>(hi) + 1 : v.get<long long>();
    if (x < lo || x > hi)
      fail(errc::bad_value, p, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
    out = static_cast<int>(x);
  }
  void boolean(const json& j, const std::string& path, const char* key, bool& out) const {
    if (!j.contains(key)) return;
    if (!j.at(key).is_boolean()) fail(errc::bad_type, path + "." + key, "expected true or false");
    out = j.at(key).get<bool>();
  }
};

}  // namespace

curriculum parse_curriculum(std::string_view text, const std::string& file, curriculum base) {
  const json j = parse_json(text, file);  // malformed JSON or a repeated key: an error naming the file
  reader r{file};
  namespace L = train_limits;
  // The tag first: a graph or cluster file given as --config is named as the wrong format, not by
  // its first key the curriculum does not know.
  if (!j.is_object() || !j.contains("format") || j["format"] != "doppler-curriculum/1")
    r.fail(errc::bad_format_tag, "format",
           "expected \"doppler-curriculum/1\"" +
               (j.is_object() && j.contains("format") ? ", got " + j["format"].dump() : std::string()));
  r.keys(j, "", {"format", "phases", "imitation", "reinforce", "policy", "model", "seed"});
  auto& t = base.train;
  auto& p = base.policy;
  if (j.contains("phases")) {
    const auto& s = j["phases"];
    r.keys(s, "phases", {"il_episodes", "rl_episodes", "real_episodes", "batch", "real_batch", "real_eval_every",
                          "real_confirm", "real_select_margin"});
    r.integer(s, "phases", "il_episodes", t.il_episodes, 0);
    r.integer(s, "phases", "rl_episodes", t.rl_episodes, 0);
    r.integer(s, "phases", "real_episodes", t.real_episodes, 0);
    r.integer(s, "phases", "batch", t.batch, 1);
    r.integer(s, "phases", "real_batch", t.real_batch, 1);
    r.integer(s, "phases", "real_eval_every", t.real_eval_every, 0);
    r.integer(s, "phases", "real_confirm", t.real_confirm, 0);
    r.number(s, "phases", "real_select_margin", t.real_select_margin, 0, L::select_margin_max);
  }
  if (j.contains("imitation")) {
    const auto& s = j["imitation"];
    r.keys(s, "imitation", {"lr", "epsilon", "epsilon_final", "teacher", "teacher_budget", "teacher_symmetry",
                                 "teacher_forcing"});
    r.number(s, "imitation", "lr", t.il_lr, L::lr_min, L::lr_max);
    r.number(s, "imitation", "epsilon", t.il_epsilon, 0, 1);
    r.number(s, "imitation", "epsilon_final", t.il_epsilon_final, 0, 1);
    r.number(s, "imitation", "teacher_forcing", t.il_teacher_forcing, 0, 1);
    if (s.contains("teacher")) {
      if (!s["teacher"].is_string() || s["teacher"].get<std::string>().empty())
        r.fail(errc::bad_type, "imitation.teacher", "expected \"auto\", \"cp\", a placer name or a placement file");
      base.teacher = s["teacher"].get<std::string>();
    }
    r.integer(s, "imitation", "teacher_budget", base.teacher_budget, 1);
    r.boolean(s, "imitation", "teacher_symmetry", base.teacher_symmetry);
  }
  if (j.contains("reinforce")) {
    const auto& s = j["reinforce"];
    r.keys(s, "reinforce", {"lr", "lr_final", "temperature", "epsilon", "entropy", "entropy_final", "gamma",
                            "baseline_decay", "baseline", "normalize_advantages", "advantage_floor", "algorithm", "ppo_clip",
                            "ppo_epochs", "ppo_target_kl", "self_imitation", "self_imitation_gate"});
    r.number(s, "reinforce", "lr", t.rl_lr, L::lr_min, L::lr_max);
    r.number(s, "reinforce", "lr_final", t.lr_final, 0, 1);
    r.number(s, "reinforce", "temperature", t.temperature, L::temperature_min, L::temperature_max);
    r.number(s, "reinforce", "epsilon", t.rl_epsilon, 0, 1);
    r.number(s, "reinforce", "entropy", t.entropy, 0, L::entropy_max);
    r.number(s, "reinforce", "entropy_final", t.entropy_final, 0, L::entropy_max);
    r.number(s, "reinforce", "gamma", t.gamma, 0, 1);
    r.number(s, "reinforce", "baseline_decay", t.baseline_decay, 0, L::baseline_decay_max);
    if (s.contains("baseline")) {
      if (!s["baseline"].is_string()) r.fail(errc::bad_type, "reinforce.baseline", "expected a string (mean, batch, greedy)");
      try {
        t.baseline = parse_baseline(s["baseline"].get<std::string>());
      } catch (const error& e) {
        r.fail(errc::bad_value, "reinforce.baseline", e.reason());
      }
    }
    r.boolean(s, "reinforce", "normalize_advantages", t.normalize_advantages);
    r.number(s, "reinforce", "advantage_floor", t.advantage_floor, 0, 1);
    if (s.contains("algorithm")) {
      if (!s["algorithm"].is_string() || (s["algorithm"] != "reinforce" && s["algorithm"] != "ppo"))
        r.fail(errc::bad_value, "reinforce.algorithm", "must be \"reinforce\" or \"ppo\"");
      t.ppo = s["algorithm"] == "ppo";
    }
    r.number(s, "reinforce", "ppo_clip", t.ppo_clip, L::ppo_clip_min, L::ppo_clip_max);
    r.integer(s, "reinforce", "ppo_epochs", t.ppo_epochs, 1);
    r.number(s, "reinforce", "ppo_target_kl", t.ppo_target_kl, 0, L::ppo_target_kl_max);
    r.integer(s, "reinforce", "self_imitation", t.self_imitation, 0);
    r.boolean(s, "reinforce", "self_imitation_gate", t.self_imitation_gate);
  }
  if (j.contains("policy")) {
    const auto& s = j["policy"];
    r.keys(s, "policy", {"hidden", "steps", "proj", "mlp", "kind", "ablation", "hint", "hint_budget", "active_search", "sibling",
                              "dynamic_sel"});
    for (const auto& [key, value] : s.items()) base.policy_keys.insert(key);
    r.number(s, "policy", "active_search", p.active_search, 0, policy_options::max_active_search);
    if (s.contains("hint")) {
      if (!s["hint"].is_string()) r.fail(errc::bad_type, "policy.hint", "expected a placer name (or \"\" for none)");
      p.hint = s["hint"].get<std::string>();
      if (!p.hint.empty() && p.hint != "auto" && !is_placer(p.hint))
        r.fail(errc::bad_value, "policy.hint", "unknown placer '" + p.hint + "' (auto, " + placer_list() + ")");
    }
    r.integer(s, "policy", "hint_budget", p.hint_budget, 1);
    r.boolean(s, "policy", "sibling", p.sibling);
    r.boolean(s, "policy", "dynamic_sel", p.dynamic_sel);
    if (s.contains("kind")) {
      if (!s["kind"].is_string() || (s["kind"] != "dual" && s["kind"] != "joint" && s["kind"] != "placeto" &&
                                     s["kind"] != "gdp"))
        r.fail(errc::bad_value, "policy.kind", "must be \"dual\", \"joint\", \"placeto\" or \"gdp\"");
      p.kind = parse_policy_kind(s["kind"].get<std::string>());
    }
    if (s.contains("ablation")) {
      if (!s["ablation"].is_string() ||
          (s["ablation"] != "none" && s["ablation"] != "sel-only" && s["ablation"] != "plc-only"))
        r.fail(errc::bad_value, "policy.ablation", "must be \"none\", \"sel-only\" or \"plc-only\"");
      p.ablation = parse_policy_ablation(s["ablation"].get<std::string>());
      if (p.ablation != policy_ablation::none && p.kind != policy_kind::dual)
        r.fail(errc::bad_value, "policy.ablation", "needs policy kind \"dual\"");
    }
    if (p.active_search > 0 && p.kind != policy_kind::dual)
      r.fail(errc::bad_value, "policy.active_search", "needs policy kind \"dual\"");
    if (p.sibling && p.kind != policy_kind::dual && p.kind != policy_kind::joint)
      r.fail(errc::bad_value, "policy.sibling", "needs policy kind \"dual\" or \"joint\"");
    if (p.dynamic_sel && !p.has_sel_head())
      r.fail(errc::bad_value, "policy.dynamic_sel", "needs policy kind \"dual\" with a SEL head (not ablation \"plc-only\")");
    r.integer(s, "policy", "hidden", p.hidden, 1, policy_options::max_width);
    r.integer(s, "policy", "steps", p.steps, 0, policy_options::max_steps);
    r.integer(s, "policy", "proj", p.proj, 1, policy_options::max_width);
    r.integer(s, "policy", "mlp", p.mlp, 1, policy_options::max_width);
  }
  if (j.contains("model")) {
    const auto& m = j["model"];
    if (m == "simple") t.sim.model = sim_model::simple;
    else if (m == "wc") t.sim.model = sim_model::wc;
    else r.fail(errc::bad_value, "model", "expected \"simple\" or \"wc\"");
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned()) r.fail(errc::bad_type, "seed", "expected an integer >= 0");
    t.seed = j["seed"].get<std::uint64_t>();
    p.seed = t.seed;
  }
  return base;
}

curriculum load_curriculum(const std::string& path, curriculum base) {
  return parse_curriculum(read_file(path), path, std::move(base));
}

}  // namespace doppler::learner
