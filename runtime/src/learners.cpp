// The learner registry and the placer-backed baseline learners (learner.hpp).
#include <doppler/runtime/learner.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/json.hpp>
#include <doppler/runtime/placer.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

namespace doppler {

learner_train_report learner_interface::train(const graph&, const cluster&, int) { return {}; }

namespace {

/// A fixed placer as a learner: observations change nothing.
class placer_learner final : public learner_interface {
 public:
  placer_learner(std::string placer_name, learner_config cfg)
      : name_(std::move(placer_name)), cfg_(std::move(cfg)), placer_(make_placer(name_)) {
    if (!cfg_.policy.empty()) load(cfg_.policy);
  }
  std::string_view name() const noexcept override { return name_; }
  placement place(const graph& g, const cluster& c, bool explore, std::uint64_t seed) override {
    placer_options po;
    po.seed = explore ? seed : cfg_.seed;
    po.sim = cfg_.sim;
    return placer_->place(g, c, cfg_.costs, po);
  }
  void observe(const graph&, const cluster&, const placement&, double) override {}
  void save(const std::string& path) const override {
    nlohmann::json j{{"format", "doppler-learner/1"}, {"learner", name_}};
    write_file_atomic(path, j.dump() + "\n");
  }
  void load(const std::string& path) override {
    const nlohmann::json j = parse_json(read_file(path), path);
    if (!j.is_object() || !j.contains("format") || j["format"] != "doppler-learner/1")
      throw error(errc::bad_format_tag, path, "format", "expected \"doppler-learner/1\"");
    if (!j.contains("learner") || !j["learner"].is_string())
      throw error(errc::bad_type, path, "learner", "expected the learner's name (a string)");
    if (j["learner"] != name_)
      throw error(errc::bad_value, path, "learner", "the file is for learner '" + j["learner"].get<std::string>() +
                                                        "', not '" + name_ + "'");
  }

 private:
  std::string name_;
  learner_config cfg_;
  std::unique_ptr<placer> placer_;
};

struct entry {
  std::string description;
  learner_factory make;
};

struct registry {
  std::mutex mutex;
  std::map<std::string, entry, std::less<>> entries;

  registry() {
    for (const char* p : {"cp", "heft"})
      entries[p] = {std::string("the ") + p + " placer as a learner (a baseline: ignores observations)",
                    [name = std::string(p)](const learner_config& cfg) { return make_placer_learner(name, cfg); }};
  }
};

registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace

std::unique_ptr<learner_interface> make_placer_learner(const std::string& placer_name, const learner_config& cfg) {
  return std::make_unique<placer_learner>(placer_name, cfg);
}

void register_learner(const std::string& name, const std::string& description, learner_factory make) {
  if (name.empty()) throw error(errc::bad_argument, "register_learner: empty name");
  if (!make) throw error(errc::bad_argument, "register_learner: no factory for '" + name + "'");
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  r.entries[name] = {description, std::move(make)};
}

bool has_learner(std::string_view name) {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  return r.entries.find(name) != r.entries.end();
}

std::vector<std::string> learner_names() {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [n, e] : r.entries) out.push_back(n);
  return out;
}

std::string learner_description(std::string_view name) {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? std::string() : it->second.description;
}

std::unique_ptr<learner_interface> make_learner(std::string_view name, const learner_config& cfg) {
  learner_factory make;
  {
    auto& r = the_registry();
    std::lock_guard lock(r.mutex);
    auto it = r.entries.find(name);
    if (it == r.entries.end()) {
      std::string known;
      for (const auto& [n, e] : r.entries) known += (known.empty() ? "" : ", ") + n;
      std::string hint = name == "doppler" ? " ('doppler' needs the LibTorch learner: doppler-learn)" : "";
      throw error(errc::unknown_kind, "", "--learner",
                  "unknown learner '" + std::string(name) + "' (known: " + known + ")" + hint);
    }
    make = it->second.make;
  }
  auto l = make(cfg);
  if (!l) throw error(errc::internal, "learner '" + std::string(name) + "': the factory returned nothing");
  return l;
}

bool may_explore(int run, int explored, double fraction) {
  if (!(fraction >= 0 && fraction <= 1))
    throw error(errc::bad_argument, "", "--explore",
                "the exploration fraction must be in [0, 1], got " + std::to_string(fraction));
  if (run <= 1) return false;
  return explored < static_cast<int>(std::ceil(fraction * run - 1e-9));
}

}  // namespace doppler
