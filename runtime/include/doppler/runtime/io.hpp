#pragma once
/// File helpers: whole-file reads with clear errors, and atomic writes (temp file + rename), so a
/// reader never sees a half-written doppler file.

#include <string>
#include <string_view>

namespace doppler {

/// Reads a whole file; throws `error(errc::io)` naming the file when it cannot.
std::string read_file(const std::string& path);

/// Writes `text` to `path` atomically: a temporary file beside the final target (symlinks are
/// followed, so a link keeps pointing at the new file), flushed, renamed over it. An existing target
/// that is not a regular file (a FIFO, a device) is written directly, without a rename. "-" writes
/// to stdout. Every failure (ENOSPC included) throws `error(errc::io)` naming `path`.
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace doppler
