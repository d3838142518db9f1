#pragma once
/// File helpers: whole-file reads with clear errors, and atomic writes (temp file + rename), so a
/// reader never sees a half-written doppler file.

#include <cstddef>
#include <string>
#include <string_view>

namespace doppler {

/// The most `read_file` takes from a file that is not a regular file (a pipe, a device), whose size
/// is not known in advance: an endless one (/dev/zero) is an error, not a hang.
inline constexpr std::size_t max_stream_bytes = std::size_t{256} << 20;

/// Reads a whole file; throws `error(errc::io)` naming the file when it cannot (a directory, a
/// pipe or device giving more than `max_stream` bytes).
std::string read_file(const std::string& path, std::size_t max_stream = max_stream_bytes);

/// Writes `text` to `path` atomically: a temporary file beside the final target (symlinks are
/// followed, so a link keeps pointing at the new file), flushed, renamed over it. An existing target
/// that is not a regular file (a FIFO, a device) is written directly, without a rename. "-" writes
/// to stdout. Every failure (ENOSPC included) throws `error(errc::io)` naming `path`.
void write_file_atomic(const std::string& path, std::string_view text);

/// `s` with every byte that is not part of valid UTF-8 replaced by U+FFFD (JSON needs UTF-8: a file
/// name in another encoding became a graph name no JSON writer took).
std::string utf8_replaced(std::string_view s);

}  // namespace doppler
