// train()'s resumable state on disk (trainer.hpp: train_state, save_train_state, load_train_state):
// one CBOR document, format "doppler-train-state/1". Numbers are stored exactly (CBOR's doubles);
// the large arrays (an episode's features, the policy's checkpoint) as byte strings in this host's
// (little-endian) layout, so a state is meant to be resumed on the machine kind that wrote it.
#include <doppler/learner/trainer.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace doppler::learner {

namespace {

using json = nlohmann::json;
constexpr const char* state_format = "doppler-train-state/1";

template <class T>
json bytes_of(const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return json::binary(std::move(b));
}

json placement_json(const placement& p) {
  return {{"device", bytes_of(p.device)}, {"order", bytes_of(p.order)}, {"method", p.method}};
}

json episode_json(const episode& e) {
  return {{"result", placement_json(e.result)},
          {"ready_off", bytes_of(e.ready_off)},
          {"ready", bytes_of(e.ready)},
          {"dev_feat", bytes_of(e.dev_feat)},
          {"dev_valid", bytes_of(e.dev_valid)},
          {"pair_feat", bytes_of(e.pair_feat)},
          {"pair_valid", bytes_of(e.pair_valid)},
          {"teacher_op_off", bytes_of(e.teacher_op_off)},
          {"teacher_dev_off", bytes_of(e.teacher_dev_off)},
          {"teacher_ops", bytes_of(e.teacher_ops)},
          {"teacher_devs", bytes_of(e.teacher_devs)},
          {"agree", {e.sel_agree, e.plc_agree, e.both_agree}},
          {"log_prob", e.log_prob},
          {"temperature", e.temperature},
          {"dynamic_sel", e.dynamic_sel},
          {"sel_rows", bytes_of(e.sel_rows)},
          {"sel_feat", bytes_of(e.sel_feat)}};
}

/// Field access with errors naming the file and the field.
struct reader {
  const std::string& file;

  [[noreturn]] void fail(errc code, const std::string& field, const std::string& why) const {
    throw error(code, file, field, why);
  }
  const json& at(const json& j, const std::string& where, const char* key) const {
    if (!j.is_object()) fail(errc::bad_type, where, "expected an object");
    auto it = j.find(key);
    if (it == j.end()) fail(errc::missing_field, where + "." + key, "missing");
    return *it;
  }
  /// No number of a state is NaN; amounts (makespans, seconds, sums; +inf for "none yet") are >= 0.
  double number(const json& j, const std::string& where, const char* key) const {
    const json& v = at(j, where, key);
    if (!v.is_number()) fail(errc::bad_type, where + "." + key, "expected a number");
    const double d = v.get<double>();
    if (std::isnan(d)) fail(errc::bad_value, where + "." + key, "NaN");
    return d;
  }
  double amount(const json& j, const std::string& where, const char* key) const {
    return non_negative(number(j, where, key), where + "." + key);
  }
  std::vector<double> amounts(const json& j, const std::string& where, const char* key) const {
    std::vector<double> out = numbers(j, where, key);
    for (double d : out) non_negative(d, where + "." + key);
    return out;
  }
  double non_negative(double d, const std::string& field) const {
    if (!(d >= 0)) fail(errc::bad_value, field, "expected a number >= 0, got " + fmt::format("{}", d));
    return d;
  }
  template <class I>
  I integer(const json& j, const std::string& where, const char* key) const {
    const json& v = at(j, where, key);
    if (!v.is_number_integer()) fail(errc::bad_type, where + "." + key, "expected an integer");
    const auto x = v.get<std::int64_t>();
    if (x < static_cast<std::int64_t>(std::numeric_limits<I>::min()) ||
        (x > 0 && static_cast<std::uint64_t>(x) > static_cast<std::uint64_t>(std::numeric_limits<I>::max())))
      fail(errc::bad_value, where + "." + key, "out of range");
    return static_cast<I>(x);
  }
  std::string text(const json& j, const std::string& where, const char* key) const {
    const json& v = at(j, where, key);
    if (!v.is_string()) fail(errc::bad_type, where + "." + key, "expected a string");
    return v.get<std::string>();
  }
  template <class T>
  std::vector<T> bytes(const json& j, const std::string& where, const char* key) const {
    const json& v = at(j, where, key);
    if (!v.is_binary()) fail(errc::bad_type, where + "." + key, "expected a byte string");
    const auto& b = v.get_binary();
    if (b.size() % sizeof(T) != 0)
      fail(errc::bad_value, where + "." + key, "byte length " + std::to_string(b.size()) + " is not a multiple of " + std::to_string(sizeof(T)));
    std::vector<T> out(b.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), b.data(), b.size());
    return out;
  }
  std::vector<double> numbers(const json& j, const std::string& where, const char* key) const {
    const json& v = at(j, where, key);
    if (!v.is_array()) fail(errc::bad_type, where + "." + key, "expected an array");
    std::vector<double> out;
    for (const auto& x : v) {
      if (!x.is_number()) fail(errc::bad_type, where + "." + key, "expected numbers");
      if (std::isnan(x.get<double>())) fail(errc::bad_value, where + "." + key, "NaN");
      out.push_back(x.get<double>());
    }
    return out;
  }
  placement place(const json& j, const std::string& where) const {
    placement p;
    p.device = bytes<device_index>(j, where, "device");
    p.order = bytes<op_index>(j, where, "order");
    p.method = text(j, where, "method");
    return p;
  }
  episode ep(const json& j, const std::string& where) const {
    episode e;
    e.result = place(at(j, where, "result"), where + ".result");
    e.ready_off = bytes<std::uint32_t>(j, where, "ready_off");
    e.ready = bytes<op_index>(j, where, "ready");
    e.dev_feat = bytes<float>(j, where, "dev_feat");
    e.dev_valid = bytes<std::uint8_t>(j, where, "dev_valid");
    e.pair_feat = bytes<float>(j, where, "pair_feat");
    e.pair_valid = bytes<std::uint8_t>(j, where, "pair_valid");
    e.teacher_op_off = bytes<std::uint32_t>(j, where, "teacher_op_off");
    e.teacher_dev_off = bytes<std::uint32_t>(j, where, "teacher_dev_off");
    e.teacher_ops = bytes<op_index>(j, where, "teacher_ops");
    e.teacher_devs = bytes<device_index>(j, where, "teacher_devs");
    const json& a = at(j, where, "agree");
    if (!a.is_array() || a.size() != 3 || !a[0].is_number_unsigned() || !a[1].is_number_unsigned() || !a[2].is_number_unsigned())
      fail(errc::bad_type, where + ".agree", "expected three counts");
    e.sel_agree = a[0].get<std::size_t>(), e.plc_agree = a[1].get<std::size_t>(), e.both_agree = a[2].get<std::size_t>();
    e.log_prob = number(j, where, "log_prob");
    e.temperature = number(j, where, "temperature");
    if (e.ready_off.empty() || e.ready_off.size() != e.result.order.size() + 1 || e.ready_off.back() != e.ready.size())
      fail(errc::bad_value, where + ".ready_off", "does not match the episode's steps and ready set");
    if (j.contains("dynamic_sel")) {  // absent in states written before 2026-12-07 (static SEL only)
      if (!j["dynamic_sel"].is_boolean()) fail(errc::bad_type, where + ".dynamic_sel", "expected true or false");
      e.dynamic_sel = j["dynamic_sel"].get<bool>();
      e.sel_rows = bytes<std::uint32_t>(j, where, "sel_rows");
      e.sel_feat = bytes<float>(j, where, "sel_feat");
      if (!e.sel_rows_consistent()) fail(errc::bad_value, where + ".sel_rows", "does not match the episode's ready set and SEL features");
    }
    return e;
  }
};

}  // namespace

void save_train_state(const std::string& path, const train_state& s, const std::string& settings) {
  json curve = json::array();
  for (const auto& r : s.curve)
    curve.push_back({r.episode, r.phase, r.makespan, r.best, r.loss, r.agreement, r.problem});
  json self = json::array();
  for (const auto& eps : s.self_episode) {
    json one = json::array();
    for (const auto& e : eps) one.push_back(episode_json(e));
    self.push_back(std::move(one));
  }
  const json doc = {
      {"format", state_format},
      {"settings", json::parse(settings)},
      {"phase", s.phase},
      {"done", s.done},
      {"policy", json::binary(std::vector<std::uint8_t>(s.policy.begin(), s.policy.end()))},
      {"curve", std::move(curve)},
      {"curve_best", s.curve_best},
      {"best", placement_json(s.best)},
      {"best_makespan", s.best_makespan},
      {"initial_greedy", s.initial_greedy},
      {"il_seconds", s.il_seconds},
      {"rl_seconds", s.rl_seconds},
      {"agreement", {s.agreement, s.sel_agreement, s.plc_agreement}},
      {"cost_sum", s.cost_sum},
      {"ema", s.ema},
      {"self_best", s.self_best},
      {"cost_n", s.cost_n},
      {"self_episode", std::move(self)},
      {"best_params", json::binary(std::vector<std::uint8_t>(s.best_params.begin(), s.best_params.end()))},
      {"best_greedy", s.best_greedy},
      {"ppo", {s.ppo_steps, s.ppo_updates}},
      {"sil_updates", s.sil_updates},
      {"selected", s.selected},
      {"last_greedy", s.last_greedy},
  };
  const auto bytes = json::to_cbor(doc);
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

train_state load_train_state(const std::string& path, std::string& settings) {
  const std::string raw = read_file(path);
  json doc;
  try {
    doc = json::from_cbor(raw);
  } catch (const json::exception& e) {
    throw error(errc::bad_json, path, "", std::string("not a training state (CBOR): ") + e.what());
  }
  const reader r{path};
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != state_format)
    throw error(errc::bad_format_tag, path, "format", std::string("expected \"") + state_format + "\"");
  const json& set = r.at(doc, "$", "settings");
  if (!set.is_object()) r.fail(errc::bad_type, "$.settings", "expected an object");
  settings = set.dump();
  train_state s;
  s.phase = r.integer<int>(doc, "$", "phase");
  if (s.phase < 1 || s.phase > 3) r.fail(errc::bad_value, "$.phase", "expected 1, 2 or 3");
  s.done = r.integer<int>(doc, "$", "done");
  if (s.done < 0) r.fail(errc::bad_value, "$.done", "negative progress");
  const auto pol = r.bytes<char>(doc, "$", "policy");
  s.policy.assign(pol.begin(), pol.end());
  const json& curve = r.at(doc, "$", "curve");
  if (!curve.is_array()) r.fail(errc::bad_type, "$.curve", "expected an array");
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const json& row = curve[i];
    const std::string where = "$.curve[" + std::to_string(i) + "]";
    if (!row.is_array() || row.size() != 7 || !row[0].is_number_integer() || !row[1].is_string() || !row[6].is_number_integer())
      r.fail(errc::bad_type, where, "expected [episode, phase, makespan, best, loss, agreement, problem]");
    for (int k : {2, 3, 4, 5})
      if (!row[k].is_number()) r.fail(errc::bad_type, where, "expected numbers for makespan, best, loss and agreement");
    // Rows are episodes 1, 2, ... of phases il, rl, real; makespans are >= 0 (a loss may not be).
    if (row[0].get<std::int64_t>() != static_cast<std::int64_t>(i) + 1)
      r.fail(errc::bad_value, where, "episode " + row[0].dump() + " where " + std::to_string(i + 1) + " was expected");
    if (const auto ph = row[1].get<std::string>(); ph != "il" && ph != "rl" && ph != "real")
      r.fail(errc::bad_value, where, "unknown phase \"" + ph + "\" (il, rl or real)");
    for (int k : {2, 3}) r.non_negative(row[k].get<double>(), where);
    if (const double a = row[5].get<double>(); !(a == -1 || (a >= 0 && a <= 1)))  // -1: no teacher in that phase
      r.fail(errc::bad_value, where, "an agreement outside [0, 1] (or -1)");
    if (!(std::isfinite(row[4].get<double>()))) r.fail(errc::bad_value, where, "the loss is not finite");
    if (!row[6].is_number_unsigned()) r.fail(errc::bad_value, where, "a negative problem index");
    s.curve.push_back({row[0].get<int>(), row[1].get<std::string>(), row[2].get<double>(), row[3].get<double>(),
                       row[4].get<double>(), row[5].get<double>(), row[6].get<int>()});
  }
  s.curve_best = r.amount(doc, "$", "curve_best");
  s.best = r.place(r.at(doc, "$", "best"), "$.best");
  s.best_makespan = r.amount(doc, "$", "best_makespan");
  s.initial_greedy = r.amounts(doc, "$", "initial_greedy");
  s.il_seconds = r.amount(doc, "$", "il_seconds");
  s.rl_seconds = r.amount(doc, "$", "rl_seconds");
  const auto agree = r.numbers(doc, "$", "agreement");
  if (agree.size() != 3) r.fail(errc::bad_value, "$.agreement", "expected three fractions");
  s.agreement = agree[0], s.sel_agreement = agree[1], s.plc_agreement = agree[2];
  s.cost_sum = r.amounts(doc, "$", "cost_sum");
  s.ema = r.amounts(doc, "$", "ema");
  s.self_best = r.amounts(doc, "$", "self_best");
  const json& n = r.at(doc, "$", "cost_n");
  if (!n.is_array()) r.fail(errc::bad_type, "$.cost_n", "expected an array");
  for (const auto& x : n) {
    if (!x.is_number_unsigned()) r.fail(errc::bad_type, "$.cost_n", "expected counts");
    s.cost_n.push_back(x.get<std::uint64_t>());
  }
  const json& self = r.at(doc, "$", "self_episode");
  if (!self.is_array()) r.fail(errc::bad_type, "$.self_episode", "expected an array");
  for (std::size_t k = 0; k < self.size(); ++k) {
    if (!self[k].is_array()) r.fail(errc::bad_type, "$.self_episode[" + std::to_string(k) + "]", "expected an array");
    auto& eps = s.self_episode.emplace_back();
    for (std::size_t i = 0; i < self[k].size(); ++i)
      eps.push_back(r.ep(self[k][i], "$.self_episode[" + std::to_string(k) + "][" + std::to_string(i) + "]"));
  }
  const auto bp = r.bytes<char>(doc, "$", "best_params");
  s.best_params.assign(bp.begin(), bp.end());
  s.best_greedy = r.amount(doc, "$", "best_greedy");
  const json& ppo = r.at(doc, "$", "ppo");
  if (!ppo.is_array() || ppo.size() != 2 || !ppo[0].is_number_integer() || !ppo[1].is_number_integer())
    r.fail(errc::bad_type, "$.ppo", "expected [steps, updates]");
  s.ppo_steps = ppo[0].get<std::int64_t>(), s.ppo_updates = ppo[1].get<std::int64_t>();
  s.sil_updates = r.integer<int>(doc, "$", "sil_updates");
  const json& sel = r.at(doc, "$", "selected");
  if (!sel.is_boolean()) r.fail(errc::bad_type, "$.selected", "expected true or false");
  s.selected = sel.get<bool>();
  s.last_greedy = r.amount(doc, "$", "last_greedy");
  const std::size_t n_pb = s.initial_greedy.size();
  if (n_pb == 0) r.fail(errc::bad_value, "$.initial_greedy", "no problems");
  if (!s.sized_for(n_pb))  // phase II reads them by problem
    r.fail(errc::bad_value, "$.cost_sum", "the per-problem state (cost_sum, cost_n, ema, self_best, self_episode) does not have one entry per problem (" + std::to_string(n_pb) + ")");
  for (const auto& row : s.curve)
    if (static_cast<std::size_t>(row.problem) >= n_pb)
      r.fail(errc::bad_value, "$.curve", "a row of problem " + std::to_string(row.problem) + " of " + std::to_string(n_pb));
  return s;
}

}  // namespace doppler::learner
