#pragma once
/// Parsing the JSON of doppler's files: nlohmann's parser, strict where it is lenient.

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace doppler {

/// Parses JSON text. Malformed text throws `error(errc::bad_json)` naming `file` with the line and
/// column; a key repeated within one object (where nlohmann keeps the last value silently) throws
/// `error(errc::bad_value)` naming the file, the key and the object it repeats in.
nlohmann::json parse_json(std::string_view text, const std::string& file);

/// nlohmann's lexer takes a NUL byte for the end of the input, so a document followed by a NUL and
/// anything at all would parse, and one cut by a NUL would report "unexpected end of input". Throws
/// `error(errc::bad_json)` naming `file` and the line and column of the first NUL byte, if any
/// (parse_json and the graph reader call it first).
void reject_nul_bytes(std::string_view text, const std::string& file);

}  // namespace doppler
