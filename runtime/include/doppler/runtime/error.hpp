#pragma once
/// Errors of the doppler libraries: one enum with a message per value, and an exception that carries
/// the enum, the file, the JSON path (e.g. `ops[17].inputs[1]`) and the reason. The CLI maps
/// `is_bad_input(code)` to exit code 2 and everything else to 1.

#include <stdexcept>
#include <string>
#include <string_view>

namespace doppler {

/// Every error class the libraries report.
enum class errc {
  io,              ///< a file could not be read or written
  bad_json,        ///< not JSON (message carries line and column)
  bad_format_tag,  ///< `format` missing or not the expected tag
  bad_type,        ///< a field has the wrong JSON type
  missing_field,   ///< a required field or attribute is absent
  bad_value,       ///< a number is non-positive, non-finite or out of range; an empty string
  duplicate_id,    ///< two objects share an id
  unknown_id,      ///< a reference to an id that does not exist
  cycle,           ///< the graph has a cycle
  unknown_kind,    ///< an op kind, device kind or preset name doppler does not know
  shape_mismatch,  ///< input shapes disagree with the op kind or the declared shape
  unreachable,     ///< two devices of a cluster cannot reach each other
  bad_argument,    ///< a bad command-line or API argument
  infeasible,      ///< a request that cannot be satisfied (e.g. a graph that does not fit)
  internal,        ///< a bug: an invariant of doppler itself broke
};

/// Short human name of an error class, e.g. "unknown id".
std::string_view to_string(errc code) noexcept;

/// True for the classes that mean "the user's input is wrong" (CLI exit code 2).
bool is_bad_input(errc code) noexcept;

/// A short printable quote of user text for a message: at most `max` bytes of `s`, bytes outside
/// printable ASCII as `\xNN`, and "..." when cut.
std::string excerpt(std::string_view s, std::size_t max = 40);

/// The exception every doppler library throws for a reportable error.
class error : public std::runtime_error {
 public:
  error(errc code, std::string file, std::string path, std::string reason);
  error(errc code, std::string reason) : error(code, {}, {}, std::move(reason)) {}

  errc code() const noexcept { return code_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& path() const noexcept { return path_; }
  const std::string& reason() const noexcept { return reason_; }

  /// The same error attributed to a file (used when an in-memory check is reported for a file).
  error with_file(std::string file) const { return error(code_, std::move(file), path_, reason_); }

 private:
  errc code_;
  std::string file_, path_, reason_;
};

}  // namespace doppler
