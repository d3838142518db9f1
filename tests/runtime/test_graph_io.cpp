// doppler-graph/1 reading and writing: round trips, every validation error class, the paper importer.

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace doppler;

namespace {

const char* tiny = R"({
  "format": "doppler-graph/1", "name": "tiny-mlp", "dtype": "f32",
  "ops": [
    {"id": "x",  "kind": "input",  "shape": [64, 128]},
    {"id": "w1", "kind": "input",  "shape": [128, 256]},
    {"id": "h",  "kind": "matmul", "inputs": ["x", "w1"], "shape": [64, 256]},
    {"id": "a",  "kind": "silu",   "inputs": ["h"],       "shape": [64, 256]},
    {"id": "s",  "kind": "synthetic", "inputs": ["a"], "flops": 1.0e9, "bytes": 65536}
  ]
})";

/// Parses `ops` (the inside of the ops array) wrapped in a valid document.
graph parse_ops(const std::string& ops) {
  return parse_graph(R"({"format": "doppler-graph/1", "name": "t", "ops": [)" + ops + "]}", "t.json");
}

struct bad_case {
  const char* what;
  std::string text;  // whole document
  errc code;
  const char* path;  // expected JSON path (substring of the message)
};

std::string doc(const std::string& ops) {
  return R"({"format": "doppler-graph/1", "name": "t", "ops": [)" + ops + "]}";
}

}  // namespace

TEST_CASE("the docs/formats.md example loads with the documented costs") {
  graph g = parse_graph(tiny, "tiny.json");
  CHECK(g.name() == "tiny-mlp");
  REQUIRE(g.size() == 5);
  CHECK(g.edge_count() == 4);
  auto h = *g.find("h");
  CHECK(g[h].flops == doctest::Approx(2.0 * 64 * 256 * 128));
  CHECK(g[h].bytes == 64 * 256 * 4);
  CHECK(g[*g.find("a")].flops == 4.0 * 64 * 256);
  CHECK(g[*g.find("s")].flops == 1e9);
  CHECK(g[*g.find("s")].bytes == 65536);
  CHECK(g[*g.find("s")].shape.empty());
  CHECK(g.total_flops() == doctest::Approx(2.0 * 64 * 256 * 128 + 4.0 * 64 * 256 + 1e9));
}

TEST_CASE("round trip is lossless") {
  graph g = parse_graph(tiny, "tiny.json");
  std::string text = to_json_text(g);
  graph g2 = parse_graph(text, "again.json");
  CHECK(to_json_text(g2) == text);
  REQUIRE(g2.size() == g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    auto v = static_cast<op_index>(i);
    CHECK(g2[v].id == g[v].id);
    CHECK(g2[v].kind == g[v].kind);
    CHECK(g2[v].shape == g[v].shape);
    CHECK(g2[v].inputs == g[v].inputs);
    CHECK(g2[v].attrs == g[v].attrs);
    CHECK(g2[v].flops == g[v].flops);
    CHECK(g2[v].bytes == g[v].bytes);
    CHECK(g2[v].flops_override == g[v].flops_override);
  }
}

TEST_CASE("round trip keeps attributes, names, overrides, dtype and awkward ids") {
  const std::string text = R"({"format": "doppler-graph/1", "name": "attrs \"q\"", "dtype": "bf16", "ops": [
    {"id": "x", "kind": "input", "shape": [2, 4, 6]},
    {"id": "t", "kind": "transpose", "inputs": ["x"], "shape": [6, 2, 4], "perm": [2, 0, 1]},
    {"id": "sl", "kind": "slice", "inputs": ["x"], "shape": [2, 4, 3], "axis": -1, "start": 1, "end": 4},
    {"id": "c", "kind": "concat", "inputs": ["sl", "sl"], "shape": [2, 4, 6], "axis": 2},
    {"id": "sc", "kind": "scale", "inputs": ["c"], "shape": [2, 4, 6], "factor": 0.1},
    {"id": "r", "kind": "rope", "inputs": ["sc"], "shape": [2, 4, 6], "base": 500000, "name": "rot\nary"},
    {"id": "odd id/ü", "kind": "exp", "inputs": ["r"], "shape": [2, 4, 6], "flops": 12.5, "bytes": 3}
  ], "extra": {"ignored": [1, 2, {"deep": true}]}})";
  graph g = parse_graph(text, "a.json");
  CHECK(g.element_type() == dtype::bf16);
  CHECK(g[*g.find("x")].bytes == 2 * 4 * 6 * 2);
  CHECK(g[*g.find("odd id/ü")].flops == 12.5);
  CHECK(g[*g.find("r")].name == "rot\nary");
  CHECK(g[*g.find("sc")].attrs.factor == 0.1);
  graph g2 = parse_graph(to_json_text(g), "b.json");
  CHECK(to_json_text(g2) == to_json_text(g));
  CHECK(g2.name() == "attrs \"q\"");
  CHECK(g2[*g2.find("sl")].attrs.axis == -1);
  CHECK(g2[*g2.find("r")].attrs.base == 500000);
  CHECK(g2[*g2.find("r")].name == "rot\nary");
}

TEST_CASE("inputs may come later in the file, repeated inputs count one edge") {
  graph g = parse_ops(R"({"id": "y", "kind": "mul", "inputs": ["x", "x"], "shape": [3]},
                         {"id": "x", "kind": "input", "shape": [3]})");
  CHECK(g.edge_count() == 1);
  CHECK(g[*g.find("y")].inputs.size() == 2);
  CHECK(g.topo_order()[0] == *g.find("x"));
}

TEST_CASE("save_graph writes atomically and load_graph reads it back") {
  auto dir = std::filesystem::temp_directory_path() / "doppler_test_graph_io";
  std::filesystem::create_directories(dir);
  auto path = (dir / "g.json").string();
  graph g = parse_graph(tiny, "tiny.json");
  save_graph(g, path);
  graph g2 = load_graph(path);
  CHECK(to_json_text(g2) == to_json_text(g));
  for (auto& e : std::filesystem::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  std::filesystem::remove_all(dir);
  CHECK_THROWS_AS(load_graph((dir / "missing.json").string()), error);
}

TEST_CASE("every validation error class is reported with file, JSON path and reason") {
  const std::vector<bad_case> cases = {
      {"malformed JSON", "{\"format\": \"doppler-graph/1\",\n \"ops\": [\n {\"id\": }]}", errc::bad_json, "line 3"},
      {"truncated JSON", R"({"format": "doppler-graph/1", "ops": [)", errc::bad_json, "line 1"},
      {"not an object", R"([1, 2])", errc::bad_type, "object"},
      {"empty document", "", errc::bad_json, ""},
      {"missing format", R"({"ops": []})", errc::bad_format_tag, "format"},
      {"unknown format", R"({"format": "doppler-graph/9", "ops": []})", errc::bad_format_tag, "format"},
      {"format not a string", R"({"format": 1, "ops": []})", errc::bad_type, "format"},
      {"cluster file given as graph", R"({"format": "doppler-cluster/1", "devices": []})", errc::bad_format_tag, "format"},
      {"missing ops", R"({"format": "doppler-graph/1"})", errc::missing_field, "ops"},
      {"ops not an array", R"({"format": "doppler-graph/1", "ops": {}})", errc::bad_type, "ops"},
      {"op not an object", doc(R"({"id": "x", "kind": "input", "shape": [1]}, 7)"), errc::bad_type, "ops[1]"},
      {"unknown dtype", R"({"format": "doppler-graph/1", "dtype": "f64", "ops": []})", errc::bad_value, "dtype"},
      {"missing id", doc(R"({"kind": "input", "shape": [1]})"), errc::missing_field, "ops[0].id"},
      {"empty id", doc(R"({"id": "", "kind": "input", "shape": [1]})"), errc::bad_value, "ops[0].id"},
      {"id not a string", doc(R"({"id": 3, "kind": "input", "shape": [1]})"), errc::bad_type, "ops[0].id"},
      {"duplicate id", doc(R"({"id": "x", "kind": "input", "shape": [1]}, {"id": "x", "kind": "input", "shape": [1]})"),
       errc::duplicate_id, "ops[1].id"},
      {"missing kind", doc(R"({"id": "x", "shape": [1]})"), errc::missing_field, "ops[0].kind"},
      // repeated keys: once the last scalar won and repeated arrays were concatenated, silently
      {"duplicate shape key", doc(R"({"id": "x", "kind": "input", "shape": [4], "shape": [16]})"), errc::bad_value,
       "ops[0].shape"},
      {"duplicate inputs key", doc(R"({"id": "x", "kind": "input", "shape": [4]}, {"id": "y", "kind": "silu", "inputs": ["x"], "inputs": ["x"], "shape": [4]})"),
       errc::bad_value, "ops[1].inputs"},
      {"duplicate unknown key", doc(R"({"id": "x", "kind": "input", "shape": [4], "note": 1, "note": 2})"), errc::bad_value,
       "ops[0].note"},
      {"extent beyond 64 bits", doc(R"({"id": "x", "kind": "input", "shape": [18446744073709551615]})"), errc::bad_value,
       "ops[0].shape[0]"},
      {"total FLOPs past a double", doc(R"({"id": "x", "kind": "input", "shape": [4], "flops": 1.7e308}, {"id": "y", "kind": "input", "shape": [4], "flops": 1.7e308})"),
       errc::bad_value, "ops[1].flops"},
      {"duplicate top-level key", R"({"format": "doppler-graph/1", "dtype": "f32", "dtype": "bf16", "ops": []})",
       errc::bad_value, "dtype"},
      {"unknown kind", doc(R"({"id": "x", "kind": "conv9d", "shape": [1]})"), errc::unknown_kind, "ops[0].kind"},
      {"unknown input id", doc(R"({"id": "x", "kind": "input", "shape": [4]}, {"id": "y", "kind": "silu", "inputs": ["q"], "shape": [4]})"),
       errc::unknown_id, "ops[1].inputs[0]"},
      {"input id not a string", doc(R"({"id": "y", "kind": "silu", "inputs": [0], "shape": [4]})"), errc::bad_type, "ops[0].inputs[0]"},
      {"self loop", doc(R"({"id": "y", "kind": "silu", "inputs": ["y"], "shape": [4]})"), errc::cycle, "ops[0].inputs[0]"},
      {"cycle", doc(R"({"id": "a", "kind": "silu", "inputs": ["c"], "shape": [4]},
                       {"id": "b", "kind": "silu", "inputs": ["a"], "shape": [4]},
                       {"id": "c", "kind": "silu", "inputs": ["b"], "shape": [4]},
                       {"id": "x", "kind": "input", "shape": [4]})"), errc::cycle, "is on a cycle"},
      {"matmul contraction mismatch", doc(R"({"id": "a", "kind": "input", "shape": [4, 8]}, {"id": "b", "kind": "input", "shape": [7, 2]},
                       {"id": "c", "kind": "matmul", "inputs": ["a", "b"], "shape": [4, 2]})"), errc::shape_mismatch, "ops[2]"},
      {"declared shape disagrees", doc(R"({"id": "a", "kind": "input", "shape": [4, 8]}, {"id": "b", "kind": "input", "shape": [8, 2]},
                       {"id": "c", "kind": "matmul", "inputs": ["a", "b"], "shape": [4, 3]})"), errc::shape_mismatch, "ops[2].shape"},
      {"add shapes disagree", doc(R"({"id": "a", "kind": "input", "shape": [4, 8]}, {"id": "b", "kind": "input", "shape": [4]},
                       {"id": "c", "kind": "add", "inputs": ["a", "b"], "shape": [4, 8]})"), errc::shape_mismatch, "ops[2]"},
      {"wrong arity", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "c", "kind": "add", "inputs": ["a"], "shape": [4]})"),
       errc::shape_mismatch, "ops[1]"},
      {"zero extent", doc(R"({"id": "a", "kind": "input", "shape": [4, 0]})"), errc::bad_value, "ops[0].shape[1]"},
      {"negative extent", doc(R"({"id": "a", "kind": "input", "shape": [-4]})"), errc::bad_value, "ops[0].shape[0]"},
      {"fractional extent", doc(R"({"id": "a", "kind": "input", "shape": [4.5]})"), errc::bad_type, "ops[0].shape[0]"},
      {"shape not an array", doc(R"({"id": "a", "kind": "input", "shape": 4})"), errc::bad_type, "ops[0].shape"},
      {"empty shape", doc(R"({"id": "a", "kind": "input", "shape": []})"), errc::bad_value, "ops[0].shape"},
      {"input without shape", doc(R"({"id": "a", "kind": "input"})"), errc::missing_field, "ops[0].shape"},
      {"op without shape", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "b", "kind": "silu", "inputs": ["a"]})"),
       errc::missing_field, "ops[1].shape"},
      {"negative flops", doc(R"({"id": "s", "kind": "synthetic", "flops": -1, "bytes": 4})"), errc::bad_value, "ops[0].flops"},
      {"overflowing number", doc(R"({"id": "s", "kind": "synthetic", "flops": 1e999, "bytes": 4})"), errc::bad_json, "line 1"},
      {"flops not a number", doc(R"({"id": "s", "kind": "synthetic", "flops": "many", "bytes": 4})"), errc::bad_type, "ops[0].flops"},
      {"synthetic without flops", doc(R"({"id": "s", "kind": "synthetic", "bytes": 4})"), errc::missing_field, "ops[0].flops"},
      {"synthetic without bytes or shape", doc(R"({"id": "s", "kind": "synthetic", "flops": 4})"), errc::missing_field, "ops[0].bytes"},
      {"synthetic with a shape but no bytes", doc(R"({"id": "s", "kind": "synthetic", "shape": [8, 8], "flops": 10})"), errc::missing_field, "ops[0].bytes"},
      {"transpose without perm", doc(R"({"id": "a", "kind": "input", "shape": [4, 2]}, {"id": "t", "kind": "transpose", "inputs": ["a"], "shape": [2, 4]})"),
       errc::missing_field, "ops[1].perm"},
      {"bad perm", doc(R"({"id": "a", "kind": "input", "shape": [4, 2]}, {"id": "t", "kind": "transpose", "inputs": ["a"], "shape": [2, 4], "perm": [1, 1]})"),
       errc::shape_mismatch, "ops[1]"},
      {"slice without end", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "s", "kind": "slice", "inputs": ["a"], "shape": [2], "axis": 0, "start": 0})"),
       errc::missing_field, "ops[1].end"},
      {"slice out of range", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "s", "kind": "slice", "inputs": ["a"], "shape": [2], "axis": 0, "start": 3, "end": 5})"),
       errc::shape_mismatch, "ops[1]"},
      {"fractional axis", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "c", "kind": "concat", "inputs": ["a"], "shape": [4], "axis": 0.5})"),
       errc::bad_type, "ops[1].axis"},
      {"scale without factor", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "s", "kind": "scale", "inputs": ["a"], "shape": [4]})"),
       errc::missing_field, "ops[1].factor"},
      {"rmsnorm weight of wrong length", doc(R"({"id": "a", "kind": "input", "shape": [4, 8]}, {"id": "w", "kind": "input", "shape": [4]},
                       {"id": "n", "kind": "rmsnorm", "inputs": ["a", "w"], "shape": [4, 8]})"), errc::shape_mismatch, "ops[2]"},
      {"rope on odd axis", doc(R"({"id": "a", "kind": "input", "shape": [4, 7]}, {"id": "r", "kind": "rope", "inputs": ["a"], "shape": [4, 7]})"),
       errc::shape_mismatch, "ops[1]"},
      {"shapeless synthetic feeding a matmul", doc(R"({"id": "s", "kind": "synthetic", "flops": 1, "bytes": 4}, {"id": "b", "kind": "input", "shape": [2, 2]},
                       {"id": "m", "kind": "matmul", "inputs": ["s", "b"], "shape": [2, 2]})"), errc::shape_mismatch, "ops[2]"},
      {"input with inputs", doc(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "b", "kind": "input", "inputs": ["a"], "shape": [4]})"),
       errc::shape_mismatch, "ops[1].inputs"},
  };
  CHECK(cases.size() >= 25);
  for (const auto& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    try {
      parse_graph(c.text, "bad.json");
      FAIL("accepted: ", c.what);
    } catch (const error& e) {
      CHECK(e.code() == c.code);
      CHECK(e.file() == "bad.json");
      CHECK(std::string(e.what()).find(c.path) != std::string::npos);
      CHECK(std::string(e.what()).find("bad.json") == 0);
      CHECK(is_bad_input(e.code()));
    }
  }
}

TEST_CASE("an integral extent or axis written as a float is named as such") {
  auto message = [](const char* ops) {
    try {
      parse_ops(ops);
    } catch (const error& e) {
      CHECK(e.code() == errc::bad_type);
      return std::string(e.what());
    }
    FAIL("accepted: ", ops);
    return std::string();
  };
  for (const char* extent : {"4.0", "4e0", "0.4e1"}) {
    CAPTURE(extent);
    std::string m = message((R"({"id": "a", "kind": "input", "shape": [2, )" + std::string(extent) + "]}").c_str());
    CHECK(m.find("ops[0].shape[1]") != std::string::npos);
    CHECK(m.find("must be written as an integer (4, not 4.0") != std::string::npos);
  }
  std::string m = message(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "c", "kind": "concat", "inputs": ["a"], "shape": [4], "axis": 0.0})");
  CHECK(m.find("ops[1].axis") != std::string::npos);
  CHECK(m.find("(0, not 0.0") != std::string::npos);
  m = message(R"({"id": "a", "kind": "input", "shape": [2, 3]}, {"id": "t", "kind": "transpose", "inputs": ["a"], "shape": [3, 2], "perm": [1.0, 0]})");
  CHECK(m.find("ops[1].perm[0]") != std::string::npos);
  CHECK(m.find("(1, not 1.0") != std::string::npos);
  m = message(R"({"id": "a", "kind": "input", "shape": [-0.0]})");
  CHECK(m.find("(0, not 0.0") != std::string::npos);
  m = message(R"({"id": "a", "kind": "input", "shape": [4.5]})");
  CHECK(m.find("a fractional number") != std::string::npos);
  try {  // an integral axis beyond 64 bits is a value error, as for an extent
    parse_ops(R"({"id": "a", "kind": "input", "shape": [4]}, {"id": "c", "kind": "concat", "inputs": ["a"], "shape": [4], "axis": 1e30})");
    FAIL("accepted");
  } catch (const error& e) {
    CHECK(e.code() == errc::bad_value);
    CHECK(std::string(e.what()).find("within 64 bits") != std::string::npos);
  }
}

TEST_CASE("a NUL byte in a graph file is an error, also after a whole document") {
  const std::string whole = R"({"format": "doppler-graph/1", "ops": [{"id": "x", "kind": "input", "shape": [4]}]})";
  CHECK(parse_graph(whole, "g.json").size() == 1);
  for (const std::string& t : {whole + std::string("\0trailing", 9), std::string(100, '\0')}) {
    try {
      parse_graph(t, "g.json");
      FAIL("accepted");
    } catch (const error& e) {
      CHECK(e.code() == errc::bad_json);
      CHECK(std::string(e.what()).find("g.json") == 0);
      CHECK(std::string(e.what()).find("a NUL byte at line 1") != std::string::npos);
    }
  }
}

TEST_CASE("a cycle error names one op on the cycle and the cycle itself") {
  try {
    parse_ops(R"({"id": "x", "kind": "input", "shape": [4]},
                 {"id": "a", "kind": "add", "inputs": ["x", "c"], "shape": [4]},
                 {"id": "b", "kind": "silu", "inputs": ["a"], "shape": [4]},
                 {"id": "c", "kind": "silu", "inputs": ["b"], "shape": [4]},
                 {"id": "d", "kind": "silu", "inputs": ["c"], "shape": [4]})");
    FAIL("cycle accepted");
  } catch (const error& e) {
    std::string m = e.what();
    CHECK(e.code() == errc::cycle);
    CHECK(m.find("'a'") != std::string::npos);
    CHECK(m.find("'b'") != std::string::npos);
    CHECK(m.find("'c'") != std::string::npos);
    CHECK(m.find("'d'") == std::string::npos);  // downstream of the cycle, not on it
  }
}

// ---- the DOPPLER paper's text format ---------------------------------------------------------------------

TEST_CASE("all six paper graphs import with the node and edge counts of their README") {
  struct row { const char* file; std::size_t placed, edges; };
  const row rows[] = {
      {"chain_mm_112nodes.txt", 76, 80},
      {"ffnn_192nodes.txt", 180, 208},
      {"transformer_block_215nodes.txt", 182, 234},
      {"full_transformer_layer_261nodes.txt", 229, 284},
      {"8gpu_transformer_block.txt", 302, 398},
      {"8gpu_full_transformer.txt", 367, 470},
  };
  for (auto& r : rows) {
    CAPTURE(r.file);
    graph g = load_graph(std::string(DOPPLER_PAPER_DIR) + "/" + r.file);
    CHECK(g.size() == r.placed);
    std::size_t edge_refs = 0;
    for (auto& o : g.ops()) {
      edge_refs += o.inputs.size();
      CHECK(o.kind == op_kind::synthetic);
      CHECK(o.bytes == doctest::Approx(4 * o.flops));  // the README: comm = 4 x comp
    }
    CHECK(edge_refs == r.edges);
    // and the doppler-graph/1 conversion round-trips
    graph g2 = parse_graph(to_json_text(g), "converted.json");
    CHECK(g2.size() == g.size());
    CHECK(g2.edge_count() == g.edge_count());
    CHECK(g2.total_flops() == g.total_flops());
  }
}

TEST_CASE("paper-format importer: structure and errors name the line") {
  graph g = parse_paper_graph("4\n0,\n0,0,1,\n1,2,2,\n10,40 matmul\n20,80\n30,120 add", "p.txt");
  REQUIRE(g.size() == 3);
  CHECK(g[0].id == "n0");
  CHECK(g[0].name == "matmul");
  CHECK(g[2].flops == 30);
  CHECK(g[2].bytes == 120);
  CHECK(g.preds(2).size() == 2);

  auto code_of = [](const std::string& text) {
    try {
      parse_paper_graph(text, "p.txt");
    } catch (const error& e) {
      return e.code();
    }
    return errc::internal;
  };
  CHECK(code_of("") == errc::missing_field);
  CHECK(code_of("x\n") == errc::bad_value);
  CHECK(code_of("3\n0\n0\n1,2\n1,4\n1,4\n") == errc::shape_mismatch);  // 1 source, 2 destinations
  CHECK(code_of("3\n0\n0\n5\n1,4\n1,4\n") == errc::unknown_id);
  CHECK(code_of("3\n0\n0\n1\n1,4\n") == errc::missing_field);          // a node line missing
  CHECK(code_of("3\n0\n0\n1\n1;4\n1,4\n") == errc::bad_value);
  CHECK(code_of("3\n0\n0,1\n1,0\n1,4\n1,4\n") == errc::cycle);
  try {
    parse_paper_graph("3\n0\n0\n1\n1,4\n1,x\n", "p.txt");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("line 6") != std::string::npos);
  }
}

TEST_CASE("paper-format importer: a node count beyond the file is an error before any allocation") {
  for (const char* n : {"2000000000", "4000000000000000000"}) {
    CAPTURE(n);
    try {
      parse_paper_graph(std::string(n) + "\n0\n0\n1\n1,4\n", "bigN.txt");
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == errc::missing_field);
      CHECK(e.file() == "bigN.txt");
      CHECK(e.path() == "line 1");
      CHECK(e.reason().find(n) != std::string::npos);
      CHECK(e.reason().find("has 1 more lines") != std::string::npos);
    }
  }
}

TEST_CASE("paper-format importer: quoted excerpts are short and printable") {
  std::string line(200000, '7');
  line += "\x01\xff";
  try {
    parse_paper_graph("3\n0\n0\n1\n1,4\n" + line + "\n", "long.txt");
    FAIL("expected an error");
  } catch (const error& e) {
    std::string what = e.what();
    CHECK(what.size() < 300);
    CHECK(what.find("...") != std::string::npos);
    for (char ch : what) CHECK((ch >= 0x20 && ch < 0x7f));
  }
  try {
    parse_paper_graph("3\n0\n0\n1\n1,4\n1,\x02\x7f\n", "bin.txt");
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("\\x02\\x7f") != std::string::npos);
  }
}

TEST_CASE("sniff_format tells the formats apart") {
  CHECK(sniff_format(tiny) == "doppler-graph/1");
  CHECK(sniff_format("  {\"devices\": [], \"format\" : \"doppler-cluster/1\"}") == "doppler-cluster/1");
  CHECK(sniff_format("112\n0, 1\n") == "paper-text");
  CHECK(sniff_format("{}") == "");
  // JSON that is not an object, a byte order mark, a binary file: never the paper's format.
  CHECK(sniff_format("[1,2,3]") == "");
  CHECK(sniff_format("null") == "");
  CHECK(sniff_format("\"text\"") == "");
  CHECK(sniff_format("\xEF\xBB\xBF{\"format\": \"doppler-graph/1\"}") == "doppler-graph/1");
  CHECK(sniff_format(std::string("\x7f" "ELF\x02\x01\x01\0\0", 9)) == "");
  // A tag that is not a string is no tag (not the next string in the file).
  CHECK(sniff_format(R"({"format": 1, "name": "x"})") == "");
  CHECK(sniff_format(R"({"format": null, "name": "x"})") == "");
  // Only the top level's tag: an op's unknown field named "format" (readers ignore it) made
  // validate read a graph as a cluster.
  CHECK(sniff_format(R"({"ops": [{"id": "a", "note": {"format": "doppler-cluster/1"}}], "format": "doppler-graph/1"})") ==
        "doppler-graph/1");
  CHECK(sniff_format(R"({"note": {"format": "doppler-cluster/1"}})") == "");
  CHECK(sniff_format(R"({"a": ["format", "doppler-cluster/1"], "format": "x\"y"})") == "x\"y");
  CHECK(sniff_format(R"({"format": "doppler-graph/1")") == "doppler-graph/1");  // the tag, then a truncated rest
  CHECK(sniff_format(R"({"ops": [1, 2)") == "");
}

TEST_CASE("paper-format graphs: a byte order mark is skipped, a tag that is not UTF-8 is refused, a file name that is not UTF-8 is replaced") {
  const std::string body = "3\n0\n0\n1\n10,40 a\n20,80 b\n";
  CHECK(parse_paper_graph("\xEF\xBB\xBF" + body, "bom.txt").size() == 2);  // the count's line read "\xEF\xBB\xBF3"
  try {
    (void)parse_paper_graph("3\n0\n0\n1\n10,40 \xff\xfe\n20,80 b\n", "t.txt");
    FAIL("a tag of bytes 0xff 0xfe was accepted (and converted to JSON no reader takes)");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("line 5") != std::string::npos);
    CHECK(std::string(e.what()).find("not valid UTF-8") != std::string::npos);
  }
  graph named = parse_paper_graph(body, "dir/\xff.txt");
  CHECK(named.name() == "\xEF\xBF\xBD.txt");
  CHECK(utf8_replaced("caf\xC3\xA9") == "caf\xC3\xA9");  // valid UTF-8 unchanged
}

TEST_CASE("load_graph: non-object JSON, a BOM and binary files get JSON errors, not paper-format ones") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("doppler_sniff_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  };
  struct want {
    std::string name, text;
    errc code;
  };
  for (const auto& w : {want{"array.json", "[1,2,3]", errc::bad_type}, want{"null.json", "null", errc::bad_type},
                        want{"bin.dat", std::string("\x7f" "ELF\x02\x01\x01\0\0\xff\xfe", 11), errc::bad_json},
                        want{"fmt1.json", R"({"format": 1, "ops": []})", errc::bad_type}}) {
    CAPTURE(w.name);
    try {
      load_graph(write(w.name, w.text));
      FAIL("expected an error");
    } catch (const error& e) {
      CHECK(e.code() == w.code);
      std::string what = e.what();
      CHECK(what.find("line 1: ") == std::string::npos);  // not read as the paper's format
      CHECK(what.find("non-negative integer") == std::string::npos);
      for (char ch : what) CHECK((ch >= 0x20 && ch < 0x7f));
    }
  }
  // A UTF-8 byte order mark before a valid graph is fine.
  graph g = load_graph(write("bom.json", "\xEF\xBB\xBF" + std::string(tiny)));
  CHECK(g.size() == 5);
  fs::remove_all(dir);
}
