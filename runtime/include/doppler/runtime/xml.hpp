#pragma once
/// Escaping text for the XML doppler writes (MSCCL schedules, SVG plots).

#include <string>
#include <string_view>

namespace doppler {

/// `s` with & < > " ' as entities: safe as element text and inside a quoted attribute value.
/// Tab, newline and carriage return become character references (an attribute keeps them); the other
/// C0 control characters, which XML 1.0 allows in no form, become U+FFFD, so a name read from JSON
/// ("a\u0001b") still gives a well-formed document.
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
      case '\t': o += "&#9;"; break;
      case '\n': o += "&#10;"; break;
      case '\r': o += "&#13;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20)
          o += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER, in UTF-8
        else
          o += ch;
    }
  }
  return o;
}

}  // namespace doppler
