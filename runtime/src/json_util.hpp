#pragma once
// Private helpers for the DOM-based readers (cluster, placement, ...): typed field access that names
// the file, the JSON path and the reason; parsing is doppler::parse_json (doppler/runtime/json.hpp).

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/json.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace doppler::detail {

using json = nlohmann::json;

/// Reads typed fields of JSON objects, reporting errors against one file.
class json_reader {
 public:
  explicit json_reader(std::string file) : file_(std::move(file)) {}
  const std::string& file() const noexcept { return file_; }

  [[noreturn]] void fail(errc code, const std::string& path, const std::string& reason) const {
    throw error(code, file_, path, reason);
  }
  /// Checks `format` is present and equals `tag`.
  void expect_format(const json& root, std::string_view tag) const;
  /// Checks `v` is an object.
  void expect_object(const json& v, const std::string& path) const;
  /// The array at obj[key] (required unless `optional`; a missing optional array is empty).
  const json* array(const json& obj, const char* key, const std::string& path, bool required) const;

  std::string string(const json& obj, const char* key, const std::string& path) const;
  std::optional<std::string> opt_string(const json& obj, const char* key, const std::string& path) const;
  /// A finite number; `positive` also rejects ≤ 0, `non_negative` rejects < 0.
  double number(const json& obj, const char* key, const std::string& path, bool positive,
                bool non_negative = false) const;
  std::optional<double> opt_number(const json& obj, const char* key, const std::string& path,
                                   bool positive, bool non_negative = false) const;
  std::optional<bool> opt_bool(const json& obj, const char* key, const std::string& path) const;

  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : path + "." + key;
  }
  static std::string index(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  std::string file_;
};

}  // namespace doppler::detail
