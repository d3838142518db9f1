#pragma once
/// File helpers: whole-file reads with clear errors, and atomic writes (temp file + rename), so a
/// reader never sees a half-written doppler file.

#include <string>
#include <string_view>

namespace doppler {

/// Reads a whole file; throws `error(errc::io)` naming the file when it cannot.
std::string read_file(const std::string& path);

/// Writes `text` to `path` atomically: a temporary file in the same directory, flushed, renamed.
/// "-" writes to stdout.
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace doppler
