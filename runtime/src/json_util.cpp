#include "json_util.hpp"

#include <doppler/runtime/json.hpp>

#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

namespace doppler {

nlohmann::json parse_json(std::string_view text, const std::string& file) {
  using json = nlohmann::json;
  // The containers still open: an object's keys so far and its current key, an array's next index.
  // The path to a repeated key is built from them only when there is one.
  struct frame {
    bool array = false;
    std::unordered_set<std::string> keys;
    const std::string* key = nullptr;  // in `keys`: stable while the frame lives
    std::size_t index = 0;
  };
  std::vector<frame> open;
  auto path_to = [&](const std::string& last) {
    std::string at;
    for (std::size_t i = 0; i + 1 < open.size(); ++i)
      at += open[i].array ? "[" + std::to_string(open[i].index) + "]" : (at.empty() ? "" : ".") + *open[i].key;
    return at.empty() ? last : at + "." + last;
  };
  auto value_done = [&] {
    if (!open.empty() && open.back().array) ++open.back().index;
  };
  auto cb = [&](int, json::parse_event_t ev, json& parsed) -> bool {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open.emplace_back().array = ev == json::parse_event_t::array_start;
        break;
      case json::parse_event_t::key: {
        frame& f = open.back();
        auto [it, fresh] = f.keys.insert(parsed.get_ref<const std::string&>());
        if (!fresh)
          throw error(errc::bad_value, file, path_to(*it),
                      "duplicate key \"" + *it + "\" (a repeated key is an error, not a silent override)");
        f.key = &*it;
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open.pop_back();
        value_done();
        break;
      case json::parse_event_t::value:
        value_done();
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line L, column C: ...";
    // a number beyond double range ("1e999") is an out_of_range.406 error, not a parse_error.
    std::string what = e.what();
    auto pos = what.find("] ");
    throw error(errc::bad_json, file, "", excerpt(pos == std::string::npos ? what : what.substr(pos + 2), 200));
  }
}

}  // namespace doppler

namespace doppler::detail {

json parse_json(std::string_view text, const std::string& file) { return doppler::parse_json(text, file); }

void json_reader::expect_format(const json& root, std::string_view tag) const {
  if (!root.is_object()) fail(errc::bad_type, "", "the document must be a JSON object");
  auto it = root.find("format");
  if (it == root.end())
    fail(errc::bad_format_tag, "format", "missing; expected \"" + std::string(tag) + "\"");
  if (!it->is_string() || it->get_ref<const std::string&>() != tag)
    fail(errc::bad_format_tag, "format",
         "is " + it->dump() + "; expected \"" + std::string(tag) + "\"");
}

void json_reader::expect_object(const json& v, const std::string& path) const {
  if (!v.is_object()) fail(errc::bad_type, path, "must be an object, got " + std::string(v.type_name()));
}

const json* json_reader::array(const json& obj, const char* key, const std::string& path,
                               bool required) const {
  auto it = obj.find(key);
  std::string p = join(path, key);
  if (it == obj.end()) {
    if (required) fail(errc::missing_field, p, "required array is missing");
    return nullptr;
  }
  if (!it->is_array()) fail(errc::bad_type, p, "must be an array, got " + std::string(it->type_name()));
  return &*it;
}

std::string json_reader::string(const json& obj, const char* key, const std::string& path) const {
  auto v = opt_string(obj, key, path);
  if (!v) fail(errc::missing_field, join(path, key), "required string is missing");
  return *v;
}

std::optional<std::string> json_reader::opt_string(const json& obj, const char* key,
                                                   const std::string& path) const {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (!it->is_string())
    fail(errc::bad_type, join(path, key), "must be a string, got " + std::string(it->type_name()));
  return it->get<std::string>();
}

double json_reader::number(const json& obj, const char* key, const std::string& path, bool positive,
                           bool non_negative) const {
  auto v = opt_number(obj, key, path, positive, non_negative);
  if (!v) fail(errc::missing_field, join(path, key), "required number is missing");
  return *v;
}

std::optional<double> json_reader::opt_number(const json& obj, const char* key,
                                              const std::string& path, bool positive,
                                              bool non_negative) const {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  std::string p = join(path, key);
  if (!it->is_number()) fail(errc::bad_type, p, "must be a number, got " + std::string(it->type_name()));
  double v = it->get<double>();
  if (!std::isfinite(v)) fail(errc::bad_value, p, "must be finite");
  if (positive && !(v > 0)) fail(errc::bad_value, p, "must be positive, got " + it->dump());
  if (non_negative && v < 0) fail(errc::bad_value, p, "must be >= 0, got " + it->dump());
  return v;
}

std::optional<bool> json_reader::opt_bool(const json& obj, const char* key,
                                          const std::string& path) const {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (!it->is_boolean())
    fail(errc::bad_type, join(path, key), "must be true or false, got " + std::string(it->type_name()));
  return it->get<bool>();
}

}  // namespace doppler::detail
