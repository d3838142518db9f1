#pragma once
/// Reading and writing graphs: `doppler-graph/1` JSON (a streaming loader: 1M ops load in about a
/// second) and the DOPPLER paper's text format (imported as `synthetic` ops).

#include <doppler/runtime/graph.hpp>

#include <string>
#include <string_view>

namespace doppler {

/// Parses `doppler-graph/1` text. Errors are `doppler::error`s naming `file`, the JSON path
/// (`ops[17].inputs[1]`) and the reason; malformed JSON reports line and column.
graph parse_graph(std::string_view text, const std::string& file = "<graph>");

/// Parses the DOPPLER paper's text format (workloads/doppler-paper/README.md): every placed
/// node becomes a `synthetic` op `n<i>` with flops = comp and bytes = comm; the tag word, if any,
/// becomes its name. Errors name the file and the line.
graph parse_paper_graph(std::string_view text, const std::string& file = "<paper graph>");

/// Loads a graph file of either format: the paper's text format if the first non-blank character
/// is a digit, JSON otherwise (a UTF-8 byte order mark is skipped).
graph load_graph(const std::string& path);

/// Serializes to `doppler-graph/1` (one op per line). Derived costs are not written, overrides are:
/// parse_graph(to_json_text(g)) equals g.
std::string to_json_text(const graph& g);

/// Writes `doppler-graph/1` atomically.
void save_graph(const graph& g, const std::string& path);

/// The top-level `"format"` tag of a JSON object (read up to it, not past; a "format" key inside a
/// member is not the file's tag); "paper-text" when the
/// first non-blank byte (after an optional UTF-8 byte order mark) is a digit; "" otherwise (no tag,
/// a tag that is not a string, JSON that is not an object, or neither format).
std::string sniff_format(std::string_view text);

}  // namespace doppler
