// Graph subcommands: workload, validate, info, convert.

#include "commands.hpp"

#include <doppler/comm/demand.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/json.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace doppler::cli {

namespace {

/// Summary of a graph, printed by `info` and after `workload`/`convert`.
nlohmann::json summarize(const graph& g) {
  std::array<std::size_t, op_kind_count> per_kind{};
  std::size_t entries = 0, exits = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    auto v = static_cast<op_index>(i);
    ++per_kind[static_cast<int>(g[v].kind)];
    entries += g.preds(v).empty();
    exits += g.succs(v).empty();
  }
  nlohmann::json kinds = nlohmann::json::object();
  for (op_kind k : all_op_kinds())
    if (per_kind[static_cast<int>(k)]) kinds[std::string(to_string(k))] = per_kind[static_cast<int>(k)];
  auto flops = op_flops(g);
  return {{"name", g.name()},
          {"dtype", std::string(to_string(g.element_type()))},
          {"ops", g.size()},
          {"edges", g.edge_count()},
          {"entries", entries},
          {"exits", exits},
          {"flops", g.total_flops()},
          {"bytes", g.total_bytes()},
          {"depth", depth(g)},
          {"critical_path_flops", critical_path(g, flops)},
          {"kinds", kinds}};
}

void print_summary(const nlohmann::json& s, std::ostream& out) {
  out << fmt::format("graph      {}\n", s["name"].get<std::string>());
  out << fmt::format("dtype      {}\n", s["dtype"].get<std::string>());
  out << fmt::format("ops        {}  ({} entries, {} exits)\n", s["ops"].get<std::size_t>(),
                     s["entries"].get<std::size_t>(), s["exits"].get<std::size_t>());
  out << fmt::format("edges      {}\n", s["edges"].get<std::size_t>());
  out << fmt::format("FLOPs      {:.4g}\n", s["flops"].get<double>());
  out << fmt::format("bytes      {:.4g}  (sum of op outputs)\n", s["bytes"].get<double>());
  out << fmt::format("depth      {} levels\n", s["depth"].get<std::uint32_t>());
  double cp = s["critical_path_flops"].get<double>();
  double total = s["flops"].get<double>();
  // FLOPs near the double range sum to inf: then no share or parallelism can be told.
  if (std::isfinite(total) && std::isfinite(cp))
    out << fmt::format("crit. path {:.4g} FLOPs ({:.1f}% of all; parallelism {:.2f})\n", cp,
                       total > 0 ? 100 * (cp / total) : 0.0, cp > 0 ? total / cp : 0.0);
  else
    out << fmt::format("crit. path {:.4g} FLOPs (the FLOP totals overflow a double: no share or parallelism)\n", cp);
  out << "kinds     ";
  for (auto& [k, n] : s["kinds"].items()) out << " " << k << "=" << n.get<std::size_t>();
  out << "\n";
}

/// What `validate` checks, for its help and its errors.
constexpr const char* validated_formats =
    "doppler-graph/1, the paper's .txt graphs, doppler-cluster/1, doppler-costs/1, doppler-placement/1 "
    "(with --graph and --cluster), doppler-demand/1 and doppler-schedule/1 (with --cluster)";

/// The `"format"` tag of a document sniff_format could not place, by parsing it: errors say why
/// there is none (not JSON, not an object, no tag, a tag that is not a string).
std::string format_tag_of(const std::string& text, const std::string& file) {
  nlohmann::json j;
  try {
    j = parse_json(text, file);
  } catch (const error& e) {
    if (e.code() != errc::bad_json) throw;
    throw error(errc::bad_json, file, "",
                e.reason() + " (not JSON, nor the paper's .txt format, which starts with its node count)");
  }
  if (!j.is_object())
    throw error(errc::bad_type, file, "",
                std::string("the document must be a JSON object with a \"format\" tag, got ") + j.type_name());
  auto it = j.find("format");
  if (it == j.end())
    throw error(errc::bad_format_tag, file, "format",
                std::string("missing: cannot tell which doppler format this is (validate checks ") +
                    validated_formats + ")");
  if (!it->is_string())
    throw error(errc::bad_format_tag, file, "format",
                std::string("must be a string naming the format, got ") + it->type_name());
  return it->get<std::string>();
}

std::string default_output(const std::string& input, const std::string& ext) {
  auto slash = input.find_last_of('/');
  auto base = input.substr(slash == std::string::npos ? 0 : slash + 1);
  auto dot = base.find_last_of('.');
  return (dot == std::string::npos ? base : base.substr(0, dot)) + ext;
}

}  // namespace

void add_graph_commands(CLI::App& app) {
  // ---- workload ------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("workload", "Generate a workload graph (doppler-graph/1)");
    struct opts {
      std::string name, out, preset, dtype = "f32";
      workload_params p;
      bool quiet = false;
    };
    auto o = std::make_shared<opts>();
    std::string names;
    for (auto& n : workload_names()) names += "\n  " + n + ": " + workload_description(n);
    cmd->add_option("name", o->name, "Generator (none: list them):" + names);
    cmd->add_option("-o,--output", o->out, "Output file (default: NAME.json; '-' for stdout)");
    cmd->add_option("--preset", o->preset, "Named dimensions: llama-7b (dim 4096, 32 heads, FFN 11008, seq 2048)");
    cmd->add_option("--dim", o->p.dim, "Model (hidden) dimension")->transform(int64_text())->capture_default_str();
    cmd->add_option("--heads", o->p.heads, "Attention heads")->transform(int64_text())->capture_default_str();
    cmd->add_option("--ffn", o->p.ffn, "FFN hidden dimension")->transform(int64_text())->capture_default_str();
    cmd->add_option("--seq", o->p.seq, "Sequence length")->transform(int64_text())->capture_default_str();
    cmd->add_option("--batch", o->p.batch, "Batch size")->transform(int64_text())->capture_default_str();
    cmd->add_option("--shards", o->p.shards, "Pieces each sharded op is split into")->transform(int64_text())->capture_default_str();
    cmd->add_option("--layers", o->p.layers, "Repeated layers")->transform(int64_text())->capture_default_str();
    cmd->add_option("--experts", o->p.experts, "moe-layer: experts")->transform(int64_text())->capture_default_str();
    cmd->add_option("--top-k", o->p.top_k, "moe-layer: experts per token")->transform(int64_text())->capture_default_str();
    cmd->add_option("--matrices", o->p.matrices, "chainmm: matrices in the chain")->transform(int64_text())->capture_default_str();
    cmd->add_option("--dtype", o->dtype, "Element type: f32, bf16, f16")->capture_default_str();
    cmd->add_flag("-q,--quiet", o->quiet, "Do not print the summary");
    cmd->callback([o, cmd, names] {
      std::size_t given = 0;
      for (const CLI::Option* opt : cmd->get_options()) given += opt->count();
      if (given == 0) {  // a bare `doppler workload` lists the generators
        std::cout << "workload generators (doppler workload NAME [-o FILE]; --help for the parameters):" << names
                  << "\n";
        return;
      }
      if (o->name.empty())  // options but no generator (or an empty name): nothing to apply them to
        throw error(errc::bad_argument, "", "name", "which generator? (" + fmt::format("{}", fmt::join(workload_names(), ", ")) + ")");
      workload_params p = o->p;
      if (!o->preset.empty()) {
        if (o->preset != "llama-7b")
          throw error(errc::bad_argument, "", "--preset", "unknown preset '" + o->preset + "' (known: llama-7b)");
        auto l = workload_params::llama_7b();
        // A preset sets the dimensions; flags given explicitly still win.
        if (cmd->count("--dim") == 0) p.dim = l.dim;
        if (cmd->count("--heads") == 0) p.heads = l.heads;
        if (cmd->count("--ffn") == 0) p.ffn = l.ffn;
        if (cmd->count("--seq") == 0) p.seq = l.seq;
        if (cmd->count("--batch") == 0) p.batch = l.batch;
      }
      auto t = parse_dtype(o->dtype);
      if (!t) throw error(errc::bad_argument, "", "--dtype", "unknown dtype '" + o->dtype + "' (f32, bf16, f16)");
      p.type = *t;
      graph g = make_workload(o->name, p);
      check_output_given(*cmd, o->out);
      std::string out = o->out.empty() ? o->name + ".json" : o->out;
      save_graph(g, out);
      if (!o->quiet) {
        std::ostream& os = out == "-" ? std::cerr : std::cout;
        print_summary(summarize(g), os);
        if (out != "-") os << "wrote      " << out << "\n";
      }
    });
  }

  // ---- validate ------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand(
        "validate",
        "Check doppler files by their \"format\" tag: " + std::string(validated_formats) +
            ". Other tags (doppler-learner/1, doppler-curriculum/1) are checked by the commands that read them.");
    struct opts {
      std::vector<std::string> files;
      std::string graph_file, cluster_spec;
    };
    auto o = std::make_shared<opts>();
    cmd->add_option("files", o->files, "Files to check")->required();
    cmd->add_option("--graph", o->graph_file, "The graph doppler-placement/1 files are checked against");
    cmd->add_option("--cluster", o->cluster_spec,
                    "The cluster (file or preset) doppler-placement/1, doppler-demand/1 and doppler-schedule/1 "
                    "files are checked against");
    cmd->callback([o] {
      int bad = 0;
      std::optional<error> first;
      std::optional<graph> g;
      std::optional<cluster> c;
      auto need_cluster = [&](const std::string& f, const std::string& tag) -> const cluster& {
        if (o->cluster_spec.empty())
          throw error(errc::bad_argument, f, "format", tag + " names devices: give --cluster to check it against");
        if (!c) c = load_cluster_or_preset(o->cluster_spec);
        return *c;
      };
      for (auto& f : o->files) {
        try {
          std::string text = read_file(f);
          std::string tag = sniff_format(text);
          if (tag.empty()) tag = format_tag_of(text, f);
          if (tag == "doppler-graph/1" || tag == "paper-text") {
            graph gr = tag == "paper-text" ? parse_paper_graph(text, f) : parse_graph(text, f);
            std::cout << fmt::format("ok  {}: {} graph '{}', {} ops, {} edges\n", f,
                                     tag == "paper-text" ? "paper-format" : "doppler-graph/1", gr.name(),
                                     gr.size(), gr.edge_count());
          } else if (tag == "doppler-cluster/1") {
            cluster cl = parse_cluster(text, f);
            std::cout << fmt::format("ok  {}: doppler-cluster/1 '{}', {} devices, {} switches, {} links\n", f,
                                     cl.name(), cl.device_count(), cl.switches().size(), cl.links().size());
          } else if (tag == "doppler-costs/1") {
            cost_model::parse(text, f);
            std::cout << fmt::format("ok  {}: doppler-costs/1\n", f);
          } else if (tag == "doppler-placement/1") {
            if (o->graph_file.empty())
              throw error(errc::bad_argument, f, "format",
                          "doppler-placement/1 names ops and devices: give --graph and --cluster to check it against");
            const cluster& cl = need_cluster(f, tag);
            if (!g) g = load_graph(o->graph_file);
            placement p = parse_placement(text, *g, cl, f);
            std::cout << fmt::format("ok  {}: doppler-placement/1 of {} ops on '{}' (method {})\n", f,
                                     p.device.size(), cl.name(), p.method.empty() ? "-" : p.method);
          } else if (tag == "doppler-demand/1") {
            auto d = comm::parse_demand(text, need_cluster(f, tag), f);
            std::cout << fmt::format("ok  {}: doppler-demand/1 '{}', {} chunks\n", f, d.name, d.chunks.size());
          } else if (tag == "doppler-schedule/1") {
            auto sc = comm::parse_schedule(text, need_cluster(f, tag), f);
            std::cout << fmt::format("ok  {}: doppler-schedule/1, {} sends in {} epochs\n", f, sc.sends.size(),
                                     sc.epochs);
          } else {
            throw error(errc::bad_format_tag, f, "format",
                        "\"" + excerpt(tag) + "\" is not a format validate checks (" + validated_formats + ")");
          }
        } catch (const error& e) {
          ++bad;
          if (o->files.size() > 1) std::cerr << "bad " << e.what() << "\n";  // one file: main() says it
          if (!first) first = e;
        }
      }
      if (first) {
        // Exit code follows the first failure's class (bad input -> 2, i/o -> 1). With several files
        // each was named above: the last line counts them (it once glued the first's place to the count).
        if (o->files.size() > 1)
          throw error(first->code(), "", "",
                      fmt::format("{} of {} files are invalid (the first: {})", bad, o->files.size(), first->file()));
        throw *first;
      }
    });
  }

  // ---- info ----------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("info", "Summarize a graph: ops, edges, FLOPs, bytes, depth, critical path");
    auto file = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    cmd->add_option("file", *file, "Graph file (doppler-graph/1 or the paper's .txt format)")->required();
    cmd->add_flag("--json", *as_json, "Print one JSON object (ops, edges, flops, bytes, depth, ...)");
    cmd->callback([file, as_json] {
      auto s = summarize(load_graph(*file));
      if (*as_json) std::cout << s.dump() << "\n";
      else print_summary(s, std::cout);
    });
  }

  // ---- convert -------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("convert", "Convert a paper-format .txt graph to doppler-graph/1");
    auto in = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("input", *in, "Paper-format graph (or a doppler-graph/1 file, rewritten canonically into -o)")->required();
    cmd->add_option("-o,--output", *out, "Output file (default: the input's name with .json; '-' for stdout)");
    cmd->callback([cmd, in, out] {
      check_output_given(*cmd, *out);
      graph g = load_graph(*in);
      std::string dest = out->empty() ? default_output(*in, ".json") : *out;
      std::error_code ec;
      if (std::filesystem::equivalent(*in, dest, ec)) {  // false (with ec) when dest does not exist
        if (cmd->count("--output") > 0)
          throw error(errc::bad_argument, dest, "--output", "is the input file: convert writes a new file");
        throw error(errc::bad_argument, *in, "",
                    "the default output (the input's name with .json) is the input itself: give -o FILE");
      }
      save_graph(g, dest);
      if (dest != "-") std::cout << fmt::format("wrote {}: {} ops, {} edges\n", dest, g.size(), g.edge_count());
    });
  }
}

}  // namespace doppler::cli
