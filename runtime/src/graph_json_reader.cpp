// Streaming reader for `doppler-graph/1`: nlohmann's SAX interface feeds op specs straight into a
// graph_builder, with no DOM in between (a DOM of a 1M-op file costs ~6x more). Every error carries
// the JSON path of the value that caused it.

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/json.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace doppler {

namespace {

using json = nlohmann::json;

/// Fields of an op object the reader knows; everything else is skipped.
enum class field : std::uint8_t {
  none, id, kind, name, inputs, shape, perm, axis, start, end, factor, base, flops, bytes, skip
};

field field_of(std::string_view key) {
  switch (key.size()) {
    case 2: if (key == "id") return field::id; break;
    case 3: if (key == "end") return field::end; break;
    case 4:
      if (key == "kind") return field::kind;
      if (key == "name") return field::name;
      if (key == "perm") return field::perm;
      if (key == "axis") return field::axis;
      if (key == "base") return field::base;
      break;
    case 5:
      if (key == "shape") return field::shape;
      if (key == "start") return field::start;
      if (key == "flops") return field::flops;
      if (key == "bytes") return field::bytes;
      break;
    case 6:
      if (key == "inputs") return field::inputs;
      if (key == "factor") return field::factor;
      break;
  }
  return field::skip;
}

const char* field_name(field f) {
  switch (f) {
    case field::id: return "id";
    case field::kind: return "kind";
    case field::name: return "name";
    case field::inputs: return "inputs";
    case field::shape: return "shape";
    case field::perm: return "perm";
    case field::axis: return "axis";
    case field::start: return "start";
    case field::end: return "end";
    case field::factor: return "factor";
    case field::base: return "base";
    case field::flops: return "flops";
    case field::bytes: return "bytes";
    default: return "?";
  }
}

/// What a known field holds, for "wrong type" messages.
const char* expected_type(field f) {
  switch (f) {
    case field::id: case field::kind: case field::name: return "a string";
    case field::inputs: return "an array of op ids (strings)";
    case field::shape: case field::perm: return "an array of integers";
    case field::axis: case field::start: case field::end: return "an integer";
    default: return "a number";
  }
}

/// The SAX handler. Positions: top object (depth 1), ops array (2), op object (3), op field array (4).
class graph_sax final : public nlohmann::json_sax<json> {
 public:
  explicit graph_sax(graph_builder& b) : builder_(b) {}

  bool failed() const { return failed_; }
  errc code() const { return code_; }
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }
  bool saw_format() const { return saw_format_; }
  bool saw_ops() const { return saw_ops_; }

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t v) override { return integer(static_cast<std::int64_t>(v)); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(INT64_MAX)) return number(static_cast<double>(v), false);
    return integer(static_cast<std::int64_t>(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return number(v, false); }
  bool binary(binary_t&) override { return scalar("binary"); }

  bool string(string_t& s) override {
    if (skip_ > 0) return true;
    switch (depth_) {
      case 1: return top_string(s);
      case 3: return op_string(s);
      case 4:
        if (field_ == field::inputs) {
          spec_.inputs.push_back(std::move(s));
          ++elem_;
          return true;
        }
        return unexpected("a string");
      default: return unexpected("a string");
    }
  }

  bool start_object(std::size_t) override {
    if (skip_ > 0) { ++skip_; return true; }
    if (depth_ == 0) { depth_ = 1; return true; }
    if (depth_ == 2) {
      depth_ = 3;
      spec_ = op_spec{};
      seen_ = 0;
      keyed_bits_ = 0;
      keyed_.clear();
      return true;
    }
    if (pending_skip()) { skip_ = 1; return true; }
    return unexpected("an object");
  }

  bool end_object() override {
    if (skip_ > 0) { --skip_; return true; }
    if (depth_ == 3) {
      depth_ = 2;
      if (!finish_op()) return false;
      ++op_;
      return true;
    }
    depth_ = 0;  // end of document
    return true;
  }

  bool start_array(std::size_t) override {
    if (skip_ > 0) { ++skip_; return true; }
    if (depth_ == 1 && top_key_ == "ops") {
      depth_ = 2;
      saw_ops_ = true;
      builder_.reserve(reserve_hint);
      return true;
    }
    if (depth_ == 3 && (field_ == field::inputs || field_ == field::shape || field_ == field::perm)) {
      depth_ = 4;
      elem_ = 0;
      mark(field_);
      return true;
    }
    if (pending_skip()) { skip_ = 1; return true; }
    return unexpected("an array");
  }

  bool end_array() override {
    if (skip_ > 0) { --skip_; return true; }
    if (depth_ == 4) { depth_ = 3; return true; }
    if (depth_ == 2) { depth_ = 1; return true; }
    return true;
  }

  bool key(string_t& k) override {
    if (skip_ > 0) return true;
    if (depth_ == 1) {  // a repeated key is an error, not a silent override (nor, for arrays, a concatenation)
      if (std::find(top_keys_.begin(), top_keys_.end(), k) != top_keys_.end())
        return fail(errc::bad_value, k, "duplicate key \"" + k + "\"");
      top_keys_.push_back(k);
      top_key_ = k;
      return true;
    }
    field_ = field_of(k);
    // known fields in a bit set (the hot path: no copy), unknown keys (rare) by name
    const bool again = field_ == field::skip ? std::find(keyed_.begin(), keyed_.end(), k) != keyed_.end()
                                             : (keyed_bits_ & bit(field_)) != 0;
    if (again) return fail(errc::bad_value, op_path() + "." + k, "duplicate key \"" + k + "\"");
    if (field_ == field::skip) keyed_.push_back(k);
    else keyed_bits_ |= bit(field_);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error_position = position;
    std::string what = e.what();
    auto pos = what.find("] ");
    return fail(errc::bad_json, "", excerpt(pos == std::string::npos ? what : what.substr(pos + 2), 200));
  }

  dtype element_type = dtype::f32;
  std::string name;
  std::size_t error_position = 0;  ///< byte offset of a JSON syntax error
  std::size_t reserve_hint = 1024; ///< expected op count (from the text size)

 private:
  // Bits of `seen_` for fields whose presence matters.
  static constexpr unsigned bit(field f) { return 1u << static_cast<unsigned>(f); }
  void mark(field f) { seen_ |= bit(f); }
  bool has(field f) const { return (seen_ & bit(f)) != 0; }

  /// A value at a position we do not read: unknown keys are skipped (forward compatibility).
  bool pending_skip() const {
    if (depth_ == 1)
      return top_key_ != "ops" && top_key_ != "format" && top_key_ != "name" && top_key_ != "dtype";
    return depth_ == 3 && field_ == field::skip;
  }

  std::string op_path() const { return "ops[" + std::to_string(op_) + "]"; }
  std::string field_path() const { return op_path() + "." + field_name(field_); }
  std::string elem_path() const { return field_path() + "[" + std::to_string(elem_) + "]"; }

  bool fail(errc c, std::string p, std::string r) {
    failed_ = true;
    code_ = c;
    path_ = std::move(p);
    reason_ = std::move(r);
    return false;
  }

  bool unexpected(const char* what) {
    if (depth_ == 0) return fail(errc::bad_type, "", std::string("the document must be a JSON object, got ") + what);
    if (depth_ == 1) {
      if (top_key_ == "ops") return fail(errc::bad_type, "ops", std::string("must be an array, got ") + what);
      return fail(errc::bad_type, top_key_, std::string("must be a string, got ") + what);
    }
    if (depth_ == 2) return fail(errc::bad_type, op_path(), std::string("must be an object, got ") + what);
    if (depth_ == 3)
      return fail(errc::bad_type, field_path(), std::string("must be ") + expected_type(field_) + ", got " + what);
    return fail(errc::bad_type, elem_path(),
                std::string("must be ") + (field_ == field::inputs ? "an op id (string)" : "an integer") +
                    ", got " + what);
  }

  bool scalar(const char* what) {
    if (skip_ > 0 || pending_skip()) return true;
    return unexpected(what);
  }

  bool top_string(std::string& s) {
    if (top_key_ == "format") {
      saw_format_ = true;
      if (s != "doppler-graph/1")
        return fail(errc::bad_format_tag, "format", "is \"" + s + "\"; expected \"doppler-graph/1\"");
      return true;
    }
    if (top_key_ == "name") { name = std::move(s); return true; }
    if (top_key_ == "dtype") {
      auto t = parse_dtype(s);
      if (!t) return fail(errc::bad_value, "dtype", "unknown dtype \"" + s + "\" (f32, bf16 or f16)");
      element_type = *t;
      return true;
    }
    if (top_key_ == "ops") return unexpected("a string");
    return true;  // unknown top-level field
  }

  bool op_string(std::string& s) {
    switch (field_) {
      case field::id: spec_.id = std::move(s); mark(field::id); return true;
      case field::name: spec_.name = std::move(s); return true;
      case field::kind: {
        auto k = parse_op_kind(s);
        if (!k) return fail(errc::unknown_kind, field_path(), "unknown op kind \"" + s + "\"");
        spec_.kind = *k;
        mark(field::kind);
        return true;
      }
      case field::skip: return true;
      default: return unexpected("a string");
    }
  }

  bool integer(std::int64_t v) {
    if (skip_ > 0 || pending_skip()) return true;
    if (depth_ == 4) {
      if (field_ == field::inputs) return unexpected("a number");
      (field_ == field::shape ? spec_.shape : spec_.attrs.perm).push_back(v);
      ++elem_;
      return true;
    }
    if (depth_ == 3) {
      switch (field_) {
        case field::axis: spec_.attrs.axis = v; mark(field_); return true;
        case field::start: spec_.attrs.start = v; mark(field_); return true;
        case field::end: spec_.attrs.end = v; mark(field_); return true;
        default: return number(static_cast<double>(v), true);
      }
    }
    return number(static_cast<double>(v), true);
  }

  bool number(double v, bool from_integer) {
    if (skip_ > 0 || pending_skip()) return true;
    if (depth_ == 3) {
      if (!std::isfinite(v)) return fail(errc::bad_value, field_path(), "must be finite");
      switch (field_) {
        case field::factor: spec_.attrs.factor = v; mark(field_); return true;
        case field::base: spec_.attrs.base = v; mark(field_); return true;
        case field::flops: spec_.flops = v; return true;
        case field::bytes: spec_.bytes = v; return true;
        case field::axis:
        case field::start:
        case field::end:
          return !from_integer && v == std::floor(v) ? integral_float(v, field_path()) : unexpected("a fractional number");
        default: return unexpected("a number");
      }
    }
    if (depth_ == 4) {  // an element of shape or perm (integers) or of inputs (strings)
      if (!from_integer && v == std::floor(v) && field_ != field::inputs) return integral_float(v, elem_path());
      return unexpected(from_integer ? "a number" : "a fractional number");
    }
    return unexpected("a number");
  }

  // An integral value that came as a float where an integer belongs: beyond int64 (1e30, 2^64 − 1)
  // out of range, else written as a float (128.0, 1.28e2) — named as such, not as "a fractional number".
  bool integral_float(double v, const std::string& path) {
    if (std::abs(v) >= 9.223372036854775808e18)
      return fail(errc::bad_value, path, fmt::format("must be an integer within 64 bits, got {:g}", v));
    if (v == 0) v = 0;  // -0.0 reads "0, not 0.0"
    return fail(errc::bad_type, path,
                fmt::format("must be written as an integer ({:.0f}, not {:.1f} or another floating-point form)", v, v));
  }

  bool finish_op() {
    if (!has(field::id)) return fail(errc::missing_field, op_path() + ".id", "every op needs an `id`");
    if (!has(field::kind))
      return fail(errc::missing_field, op_path() + ".kind", "op '" + spec_.id + "' needs a `kind`");
    auto need = [&](field f) {
      if (has(f)) return true;
      field_ = f;
      return fail(errc::missing_field, field_path(),
                  std::string(to_string(spec_.kind)) + " op '" + spec_.id + "' needs the attribute `" +
                      field_name(f) + "`");
    };
    switch (spec_.kind) {
      case op_kind::scale: if (!need(field::factor)) return false; break;
      case op_kind::transpose: if (!need(field::perm)) return false; break;
      case op_kind::concat: if (!need(field::axis)) return false; break;
      case op_kind::slice:
        if (!need(field::axis) || !need(field::start) || !need(field::end)) return false;
        break;
      default: break;
    }
    if (has(field::shape) && spec_.shape.empty())
      return fail(errc::bad_value, op_path() + ".shape", "op '" + spec_.id + "': a shape needs at least one extent");
    builder_.push(std::move(spec_));
    return true;
  }

  graph_builder& builder_;
  op_spec spec_;
  std::string top_key_;
  std::vector<std::string> top_keys_, keyed_;  // the keys seen at the top level, the current op's unknown ones
  unsigned keyed_bits_ = 0;                     // the current op's known fields seen (duplicate check)
  field field_ = field::none;
  unsigned seen_ = 0;
  int depth_ = 0;
  int skip_ = 0;
  std::size_t op_ = 0, elem_ = 0;
  bool saw_format_ = false, saw_ops_ = false, failed_ = false;
  errc code_ = errc::internal;
  std::string path_, reason_;
};

}  // namespace

graph parse_graph(std::string_view text, const std::string& file) {
  reject_nul_bytes(text, file);
  graph_builder builder;
  graph_sax sax(builder);
  sax.reserve_hint = text.size() / 80 + 16;  // a typical op takes 60-100 bytes of JSON
  bool ok = json::sax_parse(text.begin(), text.end(), &sax);
  if (sax.failed()) {
    std::string reason = sax.reason();
    if (sax.code() == errc::bad_json && reason.find("line ") == std::string::npos) {
      // nlohmann reports some errors (number overflow) without a location: add it.
      auto upto = text.substr(0, std::min(sax.error_position, text.size()));
      auto line = 1 + std::count(upto.begin(), upto.end(), '\n');
      auto col = upto.size() - (upto.find_last_of('\n') == std::string_view::npos ? 0 : upto.find_last_of('\n') + 1);
      reason = "at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + reason;
    }
    throw error(sax.code(), file, sax.path(), reason);
  }
  if (!ok) throw error(errc::bad_json, file, "", "not a JSON document");
  if (!sax.saw_format()) throw error(errc::bad_format_tag, file, "format", "missing; expected \"doppler-graph/1\"");
  if (!sax.saw_ops()) throw error(errc::missing_field, file, "ops", "required array is missing");
  builder.name(sax.name).element_type(sax.element_type);
  try {
    return std::move(builder).build();
  } catch (const error& e) {
    throw e.with_file(file);
  }
}

}  // namespace doppler
