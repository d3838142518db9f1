#pragma once
/// Escaping text for the XML doppler writes (MSCCL schedules, SVG plots).

#include <string>
#include <string_view>

namespace doppler {

/// `s` with & < > " ' as entities: safe as element text and inside a quoted attribute value.
inline std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += ch;
    }
  }
  return o;
}

}  // namespace doppler
