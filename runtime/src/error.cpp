#include <doppler/runtime/error.hpp>

namespace doppler {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::io: return "i/o error";
    case errc::bad_json: return "malformed JSON";
    case errc::bad_format_tag: return "bad format tag";
    case errc::bad_type: return "wrong type";
    case errc::missing_field: return "missing field";
    case errc::bad_value: return "bad value";
    case errc::duplicate_id: return "duplicate id";
    case errc::unknown_id: return "unknown id";
    case errc::cycle: return "cycle";
    case errc::unknown_kind: return "unknown kind";
    case errc::shape_mismatch: return "shape mismatch";
    case errc::unreachable: return "unreachable";
    case errc::bad_argument: return "bad argument";
    case errc::infeasible: return "infeasible";
    case errc::internal: return "internal error";
  }
  return "error";
}

bool is_bad_input(errc code) noexcept {
  switch (code) {
    case errc::io:
    case errc::internal:
      return false;
    default:
      return true;
  }
}

std::string excerpt(std::string_view s, std::size_t max) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x20 && b < 0x7f) {
      out += static_cast<char>(b);
    } else {
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

namespace {
std::string compose(errc code, const std::string& file, const std::string& path,
                    const std::string& reason) {
  std::string msg;
  if (!file.empty()) msg += file + ": ";
  if (!path.empty()) msg += path + ": ";
  msg += std::string(to_string(code)) + ": " + reason;
  return msg;
}
}  // namespace

error::error(errc code, std::string file, std::string path, std::string reason)
    : std::runtime_error(compose(code, file, path, reason)),
      code_(code),
      file_(std::move(file)),
      path_(std::move(path)),
      reason_(std::move(reason)) {}

}  // namespace doppler
