// Writing `doppler-graph/1`, importing the DOPPLER paper's text format, and format sniffing.

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace doppler {

namespace {

/// Appends `s` as a JSON string literal.
void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out += c;
    }
  }
  out += '"';
}

void append_ints(std::string& out, const std::vector<std::int64_t>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(v[i]);
  }
  out += ']';
}

/// Shortest text that reads back as the same double.
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

}  // namespace

std::string to_json_text(const graph& g) {
  std::string out;
  out.reserve(64 + g.size() * 96);
  out += "{\n  \"format\": \"doppler-graph/1\",\n  \"name\": ";
  append_json_string(out, g.name());
  out += ",\n  \"dtype\": \"";
  out += to_string(g.element_type());
  out += "\",\n  \"ops\": [";
  for (std::size_t i = 0; i < g.size(); ++i) {
    const op& o = g[static_cast<op_index>(i)];
    out += i ? ",\n    {\"id\": " : "\n    {\"id\": ";
    append_json_string(out, o.id);
    out += ", \"kind\": \"";
    out += to_string(o.kind);
    out += '"';
    if (!o.name.empty()) {
      out += ", \"name\": ";
      append_json_string(out, o.name);
    }
    if (!o.inputs.empty()) {
      out += ", \"inputs\": [";
      for (std::size_t j = 0; j < o.inputs.size(); ++j) {
        if (j) out += ", ";
        append_json_string(out, g[o.inputs[j]].id);
      }
      out += ']';
    }
    if (!o.shape.empty()) {
      out += ", \"shape\": ";
      append_ints(out, o.shape);
    }
    switch (o.kind) {
      case op_kind::scale: out += ", \"factor\": " + number_text(o.attrs.factor); break;
      case op_kind::rope: out += ", \"base\": " + number_text(o.attrs.base); break;
      case op_kind::transpose: out += ", \"perm\": "; append_ints(out, o.attrs.perm); break;
      case op_kind::concat: out += ", \"axis\": " + std::to_string(o.attrs.axis); break;
      case op_kind::slice:
        out += fmt::format(", \"axis\": {}, \"start\": {}, \"end\": {}", o.attrs.axis, o.attrs.start, o.attrs.end);
        break;
      default: break;
    }
    if (o.flops_override) out += ", \"flops\": " + number_text(*o.flops_override);
    if (o.bytes_override) out += ", \"bytes\": " + number_text(*o.bytes_override);
    out += '}';
  }
  out += g.size() ? "\n  ]\n}\n" : "]\n}\n";
  return out;
}

void save_graph(const graph& g, const std::string& path) { write_file_atomic(path, to_json_text(g)); }

// ---- the DOPPLER paper's text format -----------------------------------------------------------------

namespace {

struct line_reader {
  std::string_view text;
  std::size_t pos = 0;
  std::size_t line = 0;

  bool next(std::string_view& out) {
    if (pos >= text.size()) return false;
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    out = text.substr(pos, nl - pos);
    if (!out.empty() && out.back() == '\r') out.remove_suffix(1);
    pos = nl + 1;
    ++line;
    return true;
  }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// Parses a comma-separated list of non-negative integers (a trailing comma is allowed).
std::vector<std::int64_t> parse_int_list(std::string_view s, const std::string& file, std::size_t line) {
  std::vector<std::int64_t> out;
  std::size_t field = 0;
  while (true) {
    auto comma = s.find(',');
    auto tok = trim(s.substr(0, comma));
    if (!tok.empty()) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (ec != std::errc() || p != tok.data() + tok.size() || v < 0)
        throw error(errc::bad_value, file, "line " + std::to_string(line),
                    "field " + std::to_string(field + 1) + " '" + excerpt(tok) + "' is not a non-negative integer");
      out.push_back(v);
    } else if (comma != std::string_view::npos) {
      throw error(errc::bad_value, file, "line " + std::to_string(line),
                  "empty field " + std::to_string(field + 1));
    }
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
    ++field;
    if (trim(s).empty()) break;  // trailing comma
  }
  return out;
}

}  // namespace

graph parse_paper_graph(std::string_view text, const std::string& file) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark, as sniff_format skips
  line_reader lr{text};
  std::string_view line;
  auto need_line = [&](const char* what) {
    if (!lr.next(line))
      throw error(errc::missing_field, file, "line " + std::to_string(lr.line + 1), std::string("missing ") + what);
  };
  need_line("the node count");
  auto total = parse_int_list(line, file, lr.line);
  if (total.size() != 1 || total[0] <= 0)
    throw error(errc::bad_value, file, "line 1", "expected one positive node count");
  need_line("the input node list");
  auto inputs = parse_int_list(line, file, lr.line);
  need_line("the edge sources");
  auto src = parse_int_list(line, file, lr.line);
  need_line("the edge destinations");
  auto dst = parse_int_list(line, file, lr.line);
  if (src.size() != dst.size())
    throw error(errc::shape_mismatch, file, "line 4",
                std::to_string(src.size()) + " edge sources but " + std::to_string(dst.size()) + " destinations");
  auto placed = total[0] - static_cast<std::int64_t>(inputs.size());
  if (placed <= 0)
    throw error(errc::bad_value, file, "line 2", "no placed nodes: node count minus input count is " + std::to_string(placed));

  // The count comes from the file: check it against the lines that are there before allocating.
  std::size_t rest = 0;
  if (lr.pos < text.size()) {
    auto tail = text.substr(lr.pos);
    rest = static_cast<std::size_t>(std::count(tail.begin(), tail.end(), '\n')) + (tail.back() != '\n');
  }
  if (static_cast<std::uint64_t>(placed) > rest)
    throw error(errc::missing_field, file, "line 1",
                fmt::format("node count {} with {} input nodes needs {} node lines after line 4, but the file "
                            "has {} more lines",
                            total[0], inputs.size(), placed, rest));
  std::vector<op_spec> specs(static_cast<std::size_t>(placed));
  for (std::int64_t i = 0; i < placed; ++i) {
    need_line("a node line (comp,comm)");
    auto l = trim(line);
    // "comp,comm" optionally followed by a word: split off the tag at the first space after the numbers.
    std::string_view tag;
    auto sp = l.find_first_of(" \t");
    if (sp != std::string_view::npos) {
      tag = trim(l.substr(sp));
      l = l.substr(0, sp);
    }
    auto nums = parse_int_list(l, file, lr.line);
    if (nums.size() != 2)
      throw error(errc::bad_value, file, "line " + std::to_string(lr.line),
                  "node " + std::to_string(i) + ": expected `comp,comm`, got '" + excerpt(line) + "'");
    op_spec& s = specs[static_cast<std::size_t>(i)];
    s.id = fmt::format("n{}", i);
    s.kind = op_kind::synthetic;
    s.flops = static_cast<double>(nums[0]);
    s.bytes = static_cast<double>(nums[1]);
    s.name = std::string(tag);
    if (utf8_replaced(tag) != tag)  // the JSON a converted graph is written as needs UTF-8
      throw error(errc::bad_value, file, "line " + std::to_string(lr.line),
                  "node " + std::to_string(i) + ": its tag is not valid UTF-8");
  }
  while (lr.next(line))
    if (!trim(line).empty())
      throw error(errc::bad_value, file, "line " + std::to_string(lr.line),
                  "unexpected content after the " + std::to_string(placed) + " node lines");
  for (std::size_t e = 0; e < src.size(); ++e) {
    for (auto [v, which] : {std::pair{src[e], 3}, std::pair{dst[e], 4}})
      if (v >= placed)
        throw error(errc::unknown_id, file, "line " + std::to_string(which),
                    "edge " + std::to_string(e) + " names node " + std::to_string(v) + ", but only " +
                        std::to_string(placed) + " nodes are placed");
    specs[static_cast<std::size_t>(dst[e])].inputs.push_back(fmt::format("n{}", src[e]));
  }
  graph_builder b(utf8_replaced(file.substr(file.find_last_of('/') + 1)));
  b.reserve(specs.size());
  for (auto& s : specs) b.push(std::move(s));
  try {
    return std::move(b).build();
  } catch (const error& e) {
    throw e.with_file(file);
  }
}

namespace {

/// The text from its first byte that is not a byte order mark or blank ("" when there is none).
std::string_view content_start(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  auto first = text.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos ? std::string_view{} : text.substr(first);
}

/// The paper's format starts with its node count; JSON with `{`, `[`, `"` or a literal.
bool paper_text(std::string_view text) {
  auto c = content_start(text);
  return !c.empty() && c[0] >= '0' && c[0] <= '9';
}

}  // namespace

std::string sniff_format(std::string_view text) {
  if (paper_text(text)) return "paper-text";
  // Anything else but an object (a binary file) is no format: the JSON reader then reports where it
  // stops making sense.
  text = content_start(text);
  if (text.empty() || text[0] != '{') return "";
  // The top-level "format" member's string, read by a SAX pass that stops there: a "format" key
  // inside an op (an unknown field, which readers ignore) is not the file's tag. A tag that is not
  // a string is no tag; so is malformed JSON, which the chosen reader then reports properly.
  struct top_level_tag : nlohmann::json_sax<nlohmann::json> {
    int depth = 0;
    bool at_tag = false;
    std::string tag;
    bool value() {  // a scalar: the tag only if it is the string right after the key
      at_tag = false;
      return true;
    }
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool binary(binary_t&) override { return value(); }
    bool string(string_t& s) override {
      if (!at_tag) return true;
      tag = s;
      return false;  // found: stop reading
    }
    bool start_object(std::size_t) override {
      at_tag = false;
      ++depth;
      return true;
    }
    bool end_object() override { return --depth > 0; }
    bool start_array(std::size_t) override {
      at_tag = false;
      ++depth;
      return true;
    }
    bool end_array() override {
      --depth;
      return true;
    }
    bool key(string_t& k) override {
      at_tag = depth == 1 && k == "format";
      return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  } sax;
  nlohmann::json::sax_parse(text, &sax);
  return sax.tag;
}

graph load_graph(const std::string& path) {
  std::string text = read_file(path);
  if (paper_text(text)) return parse_paper_graph(text, path);
  return parse_graph(text, path);
}

}  // namespace doppler
