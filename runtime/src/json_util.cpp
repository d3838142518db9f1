#include "json_util.hpp"

#include <doppler/runtime/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace doppler {

namespace {

/// nlohmann's DOM, built through its SAX interface so that a key repeated within an object is an
/// error: the key goes into the object's own map with try_emplace (no copy of every key into a
/// set), and the JSON path to the repeat is put together only when there is one.
class strict_dom final : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;
  explicit strict_dom(const std::string& file) : file_(file) {}
  json root;

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& text) override {
    if (!std::isfinite(v)) throw error(errc::bad_json, file_, "", "number overflow parsing '" + excerpt(text) + "'");
    return put(json(v));
  }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override {
    open_.push_back({place(json::object()), nullptr});
    return true;
  }
  bool key(string_t& k) override {
    auto [it, fresh] = open_.back().node->get_ref<json::object_t&>().try_emplace(k);
    if (!fresh)
      throw error(errc::bad_value, file_, path_to(it->first),
                  "duplicate key \"" + it->first + "\" (a repeated key is an error, not a silent override)");
    open_.back().key = &it->first;
    slot_ = &it->second;
    return true;
  }
  bool end_object() override { return pop(); }
  bool start_array(std::size_t) override {
    open_.push_back({place(json::array()), nullptr});
    return true;
  }
  bool end_array() override { return pop(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line L, column C: ..."
    std::string what = e.what();
    auto pos = what.find("] ");
    throw error(errc::bad_json, file_, "", excerpt(pos == std::string::npos ? what : what.substr(pos + 2), 200));
  }

 private:
  struct frame {
    json* node;
    const std::string* key;  // an object's current key (a node of its map: stable)
  };
  /// Where the next value goes: the root, the end of the open array, or the open object's slot.
  json* place(json&& v) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *open_.back().node;
    if (top.is_array()) {
      auto& a = top.get_ref<json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();  // stable: the array grows again only after this value is closed
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool put(json&& v) {
    place(std::move(v));
    return true;
  }
  bool pop() {
    open_.pop_back();
    return true;
  }
  std::string path_to(const std::string& last) const {
    std::string at;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      const json& n = *open_[i].node;
      at += n.is_array() ? "[" + std::to_string(n.size() - 1) + "]" : (at.empty() ? "" : ".") + *open_[i].key;
    }
    return at.empty() ? last : at + "." + last;
  }

  const std::string& file_;
  std::vector<frame> open_;
  json* slot_ = nullptr;
};

}  // namespace

void reject_nul_bytes(std::string_view text, const std::string& file) {
  const auto at = text.find('\0');
  if (at == std::string_view::npos) return;
  const auto before = text.substr(0, at);
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  const auto last_newline = before.rfind('\n');
  const auto column = 1 + (last_newline == std::string_view::npos ? at : at - last_newline - 1);
  throw error(errc::bad_json, file, "",
              "a NUL byte at line " + std::to_string(line) + ", column " + std::to_string(column) +
                  " (byte " + std::to_string(at) + "): not JSON text");
}

nlohmann::json parse_json(std::string_view text, const std::string& file) {
  reject_nul_bytes(text, file);
  strict_dom dom(file);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &dom))  // a parse error has thrown already
    throw error(errc::bad_json, file, "", "not JSON");
  return std::move(dom.root);
}

}  // namespace doppler

namespace doppler::detail {

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
