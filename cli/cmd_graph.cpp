// Graph subcommands: workload, validate, info, convert.

#include "commands.hpp"

#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <iostream>
#include <memory>

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
  out << fmt::format("crit. path {:.4g} FLOPs ({:.1f}% of all; parallelism {:.2f})\n", cp,
                     total > 0 ? 100 * cp / total : 0.0, cp > 0 ? total / cp : 0.0);
  out << "kinds     ";
  for (auto& [k, n] : s["kinds"].items()) out << " " << k << "=" << n.get<std::size_t>();
  out << "\n";
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
    cmd->add_option("name", o->name, "Generator:" + names)->required();
    cmd->add_option("-o,--output", o->out, "Output file (default: NAME.json; '-' for stdout)");
    cmd->add_option("--preset", o->preset, "Named dimensions: llama-7b (dim 4096, 32 heads, FFN 11008, seq 2048)");
    cmd->add_option("--dim", o->p.dim, "Model (hidden) dimension")->capture_default_str();
    cmd->add_option("--heads", o->p.heads, "Attention heads")->capture_default_str();
    cmd->add_option("--ffn", o->p.ffn, "FFN hidden dimension")->capture_default_str();
    cmd->add_option("--seq", o->p.seq, "Sequence length")->capture_default_str();
    cmd->add_option("--batch", o->p.batch, "Batch size")->capture_default_str();
    cmd->add_option("--shards", o->p.shards, "Pieces each sharded op is split into")->capture_default_str();
    cmd->add_option("--layers", o->p.layers, "Repeated layers")->capture_default_str();
    cmd->add_option("--experts", o->p.experts, "moe-layer: experts")->capture_default_str();
    cmd->add_option("--top-k", o->p.top_k, "moe-layer: experts per token")->capture_default_str();
    cmd->add_option("--matrices", o->p.matrices, "chainmm: matrices in the chain")->capture_default_str();
    cmd->add_option("--dtype", o->dtype, "Element type: f32, bf16, f16")->capture_default_str();
    cmd->add_flag("-q,--quiet", o->quiet, "Do not print the summary");
    cmd->callback([o, cmd] {
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
        "validate", "Check files of any doppler format (by their \"format\" tag) or the paper's .txt graphs");
    auto files = std::make_shared<std::vector<std::string>>();
    cmd->add_option("files", *files, "Files to check")->required();
    cmd->callback([files] {
      int bad = 0;
      std::optional<error> first;
      for (auto& f : *files) {
        try {
          std::string text = read_file(f);
          std::string tag = sniff_format(text);
          if (tag == "doppler-graph/1" || tag == "paper-text") {
            graph g = tag == "paper-text" ? parse_paper_graph(text, f) : parse_graph(text, f);
            std::cout << fmt::format("ok  {}: {} graph '{}', {} ops, {} edges\n", f,
                                     tag == "paper-text" ? "paper-format" : "doppler-graph/1", g.name(),
                                     g.size(), g.edge_count());
          } else if (tag == "doppler-cluster/1") {
            cluster c = parse_cluster(text, f);
            std::cout << fmt::format("ok  {}: doppler-cluster/1 '{}', {} devices, {} switches, {} links\n", f,
                                     c.name(), c.device_count(), c.switches().size(), c.links().size());
          } else {
            throw error(errc::bad_format_tag, f, "format",
                        tag.empty() ? "missing: cannot tell which doppler format this is"
                                    : "unknown format \"" + tag + "\"");
          }
        } catch (const error& e) {
          ++bad;
          std::cerr << "bad " << e.what() << "\n";
          if (!first) first = e;
        }
      }
      if (first) {
        if (files->size() > 1) std::cerr << bad << " of " << files->size() << " files are invalid\n";
        // Exit code follows the first failure's class (bad input -> 2, i/o -> 1).
        throw error(first->code(), first->file(), first->path(),
                    files->size() > 1 ? std::to_string(bad) + " invalid file(s)" : first->reason());
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
    cmd->add_option("input", *in, "Paper-format graph (or a doppler-graph/1 file, rewritten canonically)")->required();
    cmd->add_option("-o,--output", *out, "Output file (default: the input's name with .json; '-' for stdout)");
    cmd->callback([in, out] {
      graph g = load_graph(*in);
      std::string dest = out->empty() ? default_output(*in, ".json") : *out;
      save_graph(g, dest);
      if (dest != "-") std::cout << fmt::format("wrote {}: {} ops, {} edges\n", dest, g.size(), g.edge_count());
    });
  }
}

}  // namespace doppler::cli
