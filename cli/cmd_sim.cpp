// Placement and simulation subcommands: place, simulate, compare.

#include "commands.hpp"
#include "summary.hpp"

#include <doppler/comm/multicast.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/cost_model.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_io.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/placement.hpp>
#include <doppler/runtime/placer.hpp>
#include <doppler/runtime/sim.hpp>
#include <doppler/runtime/xml.hpp>
#ifdef DOPPLER_HAVE_LEARNER
#include <doppler/learner/doppler_placer.hpp>  // Torch-free header; the twin doppler-learn links the learner
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>

namespace doppler::cli {

namespace {

/// Options every simulating command shares.
struct sim_flags {
  std::string graph_file, cluster_spec = default_cluster, costs_file, model = "wc", mode = "wc", transfers = "direct",
      plan_method = "greedy";
  int streams = 1;
  double chunk_bytes = 1 << 20;
  std::uint32_t max_chunks = 8;
  CLI::Option* cluster_option = nullptr;  ///< to tell a defaulted --cluster from a given one
};

/// The input files of `f` (for check_outputs): graph, cluster and costs.
std::vector<file_arg> sim_inputs(const sim_flags& f) {
  return {{f.graph_file, "--graph"}, {f.cluster_spec, "--cluster"}, {f.costs_file, "--costs"}};
}

void add_sim_flags(CLI::App* cmd, sim_flags& f) {
  f.cluster_option = add_graph_cluster_options(cmd, f.graph_file, f.cluster_spec);
  cmd->add_option("--model", f.model, "Simulator model: wc (work-conserving, link contention) or simple "
                                      "(the DOPPLER paper's simulator)")->capture_default_str();
  cmd->add_option("--mode", f.mode, "Execution mode: wc (work-conserving) or bsp (barrier per level)")
      ->capture_default_str();
  cmd->add_option("--streams", f.streams, "Concurrent ops per device (1 to 256)")->capture_default_str();
  cmd->add_option("--costs", f.costs_file, "Cost table (doppler-costs/1); default: built-in efficiencies");
  cmd->add_option("--transfers", f.transfers,
                  "direct: every consumer device gets its own copy over its route; planned: a tensor several "
                  "devices need (or one routed through another device) moves as the comm planner's "
                  "store-and-forward multicast plan says, in chunks (wc model)")
      ->capture_default_str();
  cmd->add_option("--plan-method", f.plan_method, "planned transfers: the comm planner's method (greedy, milp, "
                                                  "lp, astar, tree, ...; see plan-comm)")->capture_default_str();
  cmd->add_option("--chunk-bytes", f.chunk_bytes, "planned transfers: target chunk size")->capture_default_str();
  cmd->add_option("--max-chunks", f.max_chunks, "planned transfers: most chunks per tensor")->capture_default_str();
}

sim_options to_sim_options(const sim_flags& f) {
  sim_options o;
  if (f.model == "wc") o.model = sim_model::wc;
  else if (f.model == "simple") o.model = sim_model::simple;
  else throw error(errc::bad_argument, "", "--model", "unknown model '" + f.model + "' (wc, simple)");
  if (f.mode == "wc") o.mode = exec_mode::wc;
  else if (f.mode == "bsp") o.mode = exec_mode::bsp;
  else throw error(errc::bad_argument, "", "--mode", "unknown mode '" + f.mode + "' (wc, bsp)");
  check_streams_flag(f.streams);
  o.streams = f.streams;
  return o;
}

cost_model load_costs(const sim_flags& f) { return f.costs_file.empty() ? cost_model() : cost_model::load(f.costs_file); }

/// What every simulating command loads from its flags: graph, cluster, cost model, simulator options.
struct sim_setup {
  graph g;
  cluster c;
  cost_model cm;
  sim_options so;
};

sim_setup load_setup(const sim_flags& f) {
  note_default_cluster(f.cluster_option);
  sim_setup s{load_graph_or_default(f.graph_file), load_cluster_or_preset(f.cluster_spec), load_costs(f), to_sim_options(f)};
  if (f.transfers == "planned") {
    if (s.so.model != sim_model::wc)
      throw error(errc::bad_argument, "", "--transfers", "planned transfers need --model wc");
    check_chunk_bytes_flag(f.chunk_bytes);
    check_max_chunks_flag(f.max_chunks);
    check_comm_method_flag(f.plan_method, "--plan-method");
    s.so.transfers = std::make_shared<comm::multicast_planner>(
        std::make_shared<const cluster>(s.c),
        comm::multicast_options{}.with_method(f.plan_method).with_chunk_bytes(f.chunk_bytes).with_max_chunks(f.max_chunks));
  } else if (f.transfers != "direct") {
    throw error(errc::bad_argument, "", "--transfers", "unknown mode '" + f.transfers + "' (direct, planned)");
  }
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
std::function<void(double)> progress_bar(std::string label) {
  if (!isatty(2)) return nullptr;
  return [label = std::move(label)](double f) {
    int w = 30, filled = static_cast<int>(std::lround(f * w));
    std::cerr << fmt::format("\r{} [{}{}] {:3.0f}%", label, std::string(filled, '#'), std::string(w - filled, '.'),
                             100 * f)
              << (f >= 1.0 ? "\n" : "") << std::flush;
  };
}

double percentile(std::vector<double> xs, double q) {  // nearest rank
  std::sort(xs.begin(), xs.end());
  auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(xs.size())));
  return xs[std::clamp<std::size_t>(k, 1, xs.size()) - 1];
}



void write_svg(const std::string& path, const std::string& title, const nlohmann::json& rows, double lower_bound) {
  const double w = 800, left = 120, right = 90, bar_h = 22, gap = 10, top = 50;
  double max_v = lower_bound;
  for (auto& r : rows) max_v = std::max(max_v, r["makespan_s"].get<double>() + r["std_s"].get<double>());
  if (max_v <= 0) max_v = 1;
  double scale = (w - left - right) / max_v;
  double h = top + static_cast<double>(rows.size()) * (bar_h + gap) + 40;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
      w, h, left, xml_escape(title));
  double y = top;
  for (auto& r : rows) {
    double v = r["makespan_s"].get<double>(), sd = r["std_s"].get<double>();
    double bw = v * scale;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 8, y + bar_h * 0.7,
                       xml_escape(r["method"].get<std::string>()));
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#4878a8\"/>\n", left, y, bw, bar_h);
    if (sd > 1e-9 * v)
      svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"black\"/>\n",
                         left + (v - sd) * scale, left + (v + sd) * scale, y + bar_h / 2, y + bar_h / 2);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.4g} s</text>\n", left + (v + sd) * scale + 6, y + bar_h * 0.7, v);
    y += bar_h + gap;
  }
  double lx = left + lower_bound * scale;
  svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#c03030\" stroke-dasharray=\"4 3\"/>\n",
                     lx, lx, top - 6, y);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#c03030\">lower bound {:.4g} s</text>\n</svg>\n", lx, y + 16,
                     lower_bound);
  write_file_atomic(path, svg);
}

nlohmann::json run_json(const cluster& c, const sim_result& r, double lb) {
  nlohmann::json devs = nlohmann::json::array(), links = nlohmann::json::array();
  for (device_index d = 0; d < c.device_count(); ++d)
    devs.push_back({{"id", c[d].id}, {"busy_s", r.busy[d]}, {"utilization", r.utilization(d)}});
  for (std::size_t l = 0; l < r.link_bytes.size(); ++l)
    if (r.link_bytes[l] > 0)
      links.push_back({{"src", c.node_id(c.links()[l].src)}, {"dst", c.node_id(c.links()[l].dst)},
                       {"bytes", r.link_bytes[l]}});
  return {{"makespan_s", r.makespan}, {"lower_bound_s", lb}, {"ratio", lb > 0 ? r.makespan / lb : 0.0},
          {"devices", devs}, {"links", links}};
}

void print_run(const nlohmann::json& j, std::ostream& os) {
  os << fmt::format("makespan     {:.6g} s\n", j["makespan_s"].get<double>());
  os << fmt::format("lower bound  {:.6g} s  (ratio {:.3f})\n", j["lower_bound_s"].get<double>(), j["ratio"].get<double>());
  os << "devices      busy s      utilization\n";
  for (auto& d : j["devices"])
    os << fmt::format("  {:<10} {:<11.5g} {:5.1f}%\n", d["id"].get<std::string>(), d["busy_s"].get<double>(),
                      100 * d["utilization"].get<double>());
  if (!j["links"].empty()) {
    os << "links        bytes\n";
    for (auto& l : j["links"])
      os << fmt::format("  {:>8} -> {:<8} {:.4g}\n", l["src"].get<std::string>(), l["dst"].get<std::string>(),
                        l["bytes"].get<double>());
  }
}

/// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= s.size();) {
    auto comma = std::min(s.find(',', at), s.size());
    if (comma > at) out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

/// One learned row of `compare`: a name (empty: the policy's own) and its checkpoints.
struct policy_row {
  std::string name;
  std::vector<std::string> files;
};

/// `--policy [NAME=]A.pt[,B.pt...]` values.
std::vector<policy_row> parse_policy_rows(const std::vector<std::string>& values) {
  std::vector<policy_row> rows;
  for (const auto& v : values) {
    policy_row r;
    auto eq = v.find('=');
    std::string list = v;
    if (eq != std::string::npos) {
      r.name = v.substr(0, eq);
      list = v.substr(eq + 1);
      if (r.name.empty()) throw error(errc::bad_argument, "", "--policy", "empty row name in '" + v + "'");
      if (r.name.find_first_of(",\"\n\r") != std::string::npos)  // a table's CSV cell, unquoted
        throw error(errc::bad_argument, "", "--policy", "a row name may not hold a comma, a quote or a line break: '" + r.name + "'");
    }
    r.files = split_list(list);
    if (r.files.empty()) throw error(errc::bad_argument, "", "--policy", "no checkpoint in '" + v + "'");
    rows.push_back(std::move(r));
  }
  return rows;
}

/// A makespan over a reference (the lower bound, the best row): 1 when they are equal, zero included
/// (a graph whose ops cost nothing), infinite when only the reference is zero (written null in --json).
double makespan_ratio(double makespan, double reference) {
  if (makespan == reference) return 1.0;
  return reference > 0 ? makespan / reference : std::numeric_limits<double>::infinity();
}

/// One row of `compare`'s table from the makespans and placing times of its seeds (or checkpoints).
nlohmann::json compare_row(const std::string& name, const std::vector<double>& spans,
                           const std::vector<double>& times, double lb, bool learned) {
  auto st = summarize(spans);
  return {{"method", name}, {"learned", learned}, {"makespan_s", st.mean}, {"std_s", st.std}, {"best_s", st.min},
          {"runs", spans.size()}, {"ratio_lower_bound", makespan_ratio(st.mean, lb)},
          {"place_time_s", std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size())}};
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  std::string methods;
  for (auto& n : placer_names()) methods += "\n  " + n + ": " + placer_description(n);
  const std::string learned_method =
      "\n  doppler: a trained policy's greedy placement (--policy FILE from `doppler train`, any --policy-kind)";

  // ---- place ---------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("place", "Place a graph on a cluster with a named method; write doppler-placement/1");
    struct opts {
      sim_flags f;
      std::string method = "cp", out = "placement.json", policy, start;
      std::uint64_t seed = 0;
      int budget = 2000, samples = 0;
    };
    auto o = std::make_shared<opts>();
    add_sim_flags(cmd, o->f);
    cmd->add_option("--method", o->method, "Placement method:" + methods + learned_method)->capture_default_str();
    cmd->add_option("--policy", o->policy, "doppler: the policy checkpoint (policy.pt) to place with");
    cmd->add_option("--samples", o->samples,
                    "doppler: also draw this many sampled placements (seeded by --seed) and keep the best of "
                    "them and the greedy one under the simulator (best-of-K, K simulations)")->capture_default_str();
    cmd->add_option("--seed", o->seed, "Seed of the randomized methods")
        ->transform(non_negative())
        ->capture_default_str();
    cmd->add_option("--budget", o->budget, "search: simulator evaluations")->capture_default_str();
    cmd->add_option("--start", o->start,
                    "search: start from this doppler-placement/1 file (its devices and order) instead of the best "
                    "heuristic placement, e.g. to refine a learned one; the result is never worse than it");
    cmd->add_option("-o,--output", o->out, "Output placement file ('-' for stdout)")->capture_default_str();
    cmd->callback([o, cmd] {
      auto inputs = sim_inputs(o->f);
      inputs.push_back({o->policy, "--policy"});  // not --start: refining a placement in place is allowed
      check_outputs(*cmd, {{o->out, "--output", true}}, inputs);
      const bool learned = o->method == "doppler";
      if (learned && o->policy.empty())
        throw error(errc::bad_argument, "", "--policy", "--method doppler needs a trained policy (doppler train -o policy.pt)");
      if (!learned && !o->policy.empty())
        throw error(errc::bad_argument, "", "--policy", "only --method doppler takes a policy (got --method " + o->method + ")");
      if (o->samples < 0) throw error(errc::bad_argument, "", "--samples", "must be >= 0");
      if (!learned && o->samples > 0)
        throw error(errc::bad_argument, "", "--samples", "only --method doppler samples (got --method " + o->method + ")");
      if (!o->start.empty() && o->method != "search")
        throw error(errc::bad_argument, "", "--start", "only --method search starts from a placement (got --method " +
                                                           o->method + ")");
#ifndef DOPPLER_HAVE_LEARNER
      if (learned) forward_to_learn_twin();  // the learner (LibTorch) lives in the twin doppler-learn
#endif
      auto [g, c, cm, so] = load_setup(o->f);
      placer_options po;
      if (o->budget < 0) throw error(errc::bad_argument, "", "--budget", "must be >= 0 simulator evaluations");
      po.seed = o->seed;
      po.budget = o->budget;
      po.sim = so;
      po.progress = progress_bar(o->method);
      if (!o->start.empty()) po.start = std::make_shared<const placement>(load_placement(o->start, g, c));
#ifdef DOPPLER_HAVE_LEARNER
      auto pl = learned ? make_doppler_placer(o->policy, o->samples) : make_placer(o->method);
#else
      auto pl = make_placer(o->method);
#endif
      auto t0 = std::chrono::steady_clock::now();
      placement p = pl->place(g, c, cm, po);
      double took = seconds_since(t0);
      check_placement(p, g, c);
      save_placement(p, g, c, o->out);
      auto r = simulate(g, c, p, cm, po.sim);
      double lb = makespan_lower_bound(g, c, cm, so);
      std::ostream& os = o->out == "-" ? std::cerr : std::cout;
      std::vector<std::size_t> per(c.device_count(), 0);
      for (device_index d : p.device) ++per[d];
      os << fmt::format("method       {} (seed {}), placed {} ops in {:.3g} s\n", o->method, o->seed, g.size(), took);
      os << "ops/device  ";
      for (device_index d = 0; d < c.device_count(); ++d) os << fmt::format(" {}={}", c[d].id, per[d]);
      os << fmt::format("\nmakespan     {:.6g} s ({} model)\nlower bound  {:.6g} s  (ratio {:.3f})\n", r.makespan,
                        o->f.model, lb, lb > 0 ? r.makespan / lb : 0.0);
      if (o->out != "-") os << "wrote        " << o->out << "\n";
    });
  }

  // ---- simulate ------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("simulate", "Simulate a placement: makespan, lower bound, utilization, link bytes");
    struct opts {
      sim_flags f;
      std::string placement_file, trace_file;
      std::vector<std::string> stragglers;
      int runs = 1;
      double jitter = 0;
      std::uint64_t seed = 0;
      bool json = false;
    };
    auto o = std::make_shared<opts>();
    add_sim_flags(cmd, o->f);
    cmd->add_option("--placement", o->placement_file, "doppler-placement/1 file (default: place with cp, seed --seed)");
    cmd->add_option("--runs", o->runs, "Runs (with --jitter: mean, std, p50, p95)")->capture_default_str();
    cmd->add_option("--jitter", o->jitter, "σ of lognormal noise on op and transfer times, 0 to 2")->capture_default_str();
    cmd->add_option("--seed", o->seed, "Seed of the jitter (run i uses seed + i) and of the default cp placement")
        ->transform(non_negative())
        ->capture_default_str();
    cmd->add_option("--straggler", o->stragglers, "DEVICE:FACTOR, a device slowed down by FACTOR in [1, 1e6] (repeatable; a device's factors multiply)");
    cmd->add_option("--trace", o->trace_file, "Write a Chrome trace (Perfetto) of the first run");
    cmd->add_flag("--json", o->json, "Print one JSON object");
    cmd->callback([o, cmd] {
      auto inputs = sim_inputs(o->f);
      inputs.push_back({o->placement_file, "--placement"});
      check_outputs(*cmd, {{o->trace_file, "--trace"}}, inputs);
      auto [g, c, cm, so] = load_setup(o->f);
      if (o->runs < 1) throw error(errc::bad_argument, "", "--runs", "must be at least 1");
      if (!(o->jitter >= 0 && o->jitter <= max_jitter))
        throw error(errc::bad_argument, "", "--jitter", fmt::format("must be in [0, {}], got {}", max_jitter, o->jitter));
      so.stragglers = parse_stragglers(o->stragglers, c);
      placement p;
      if (o->placement_file.empty()) p = cp_place(g, c, cm, o->seed);
      else p = load_placement(o->placement_file, g, c);
      check_placement(p, g, c);
      double lb = makespan_lower_bound(g, c, cm, so);
      std::vector<double> spans;
      nlohmann::json first;
      for (int i = 0; i < o->runs; ++i) {
        sim_options run = so;
        run.jitter = o->jitter;
        run.seed = o->seed + static_cast<std::uint64_t>(i);
        run.record_trace = i == 0 && !o->trace_file.empty();
        sim_result r = simulate(g, c, p, cm, run);
        spans.push_back(r.makespan);
        if (i == 0) {
          first = run_json(c, r, lb);
          if (run.record_trace) write_file_atomic(o->trace_file, chrome_trace(g, c, r, "simulator"));
        }
      }
      first["method"] = p.method.empty() ? "unknown" : p.method;
      first["model"] = o->f.model;
      first["mode"] = o->f.mode;
      first["transfers"] = o->f.transfers;
      if (o->runs > 1) {
        auto s = summarize(spans);
        first["runs"] = o->runs;
        first["mean_s"] = s.mean;
        first["std_s"] = s.std;
        first["p50_s"] = percentile(spans, 0.5);
        first["p95_s"] = percentile(spans, 0.95);
      }
      if (o->json) {
        std::cout << first.dump() << "\n";
        return;
      }
      print_run(first, std::cout);
      if (o->runs > 1)
        std::cout << fmt::format("runs         {}: mean {:.6g} s, std {:.4g}, p50 {:.6g}, p95 {:.6g}\n", o->runs,
                                 first["mean_s"].get<double>(), first["std_s"].get<double>(),
                                 first["p50_s"].get<double>(), first["p95_s"].get<double>());
      if (!o->trace_file.empty()) std::cout << "trace        " << o->trace_file << "\n";
    });
  }

  // ---- compare -------------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("compare", "Compare placement methods on one graph and cluster (table, CSV, SVG)");
    struct opts {
      sim_flags f;
      std::string methods = "single,round-robin,random,cp,heft,m-etf,metis,search", csv, svg;
      std::vector<std::string> policies;
      int seeds = 5, budget = 2000, policy_samples = 0;
      bool json = false;
    };
    auto o = std::make_shared<opts>();
    add_sim_flags(cmd, o->f);
    cmd->add_option("--methods", o->methods, "Comma-separated methods (none: only the --policy rows):" + methods)
        ->capture_default_str();
    cmd->add_option("--policy", o->policies,
                    "A learned row: [NAME=]A.pt[,B.pt,...], checkpoints of `doppler train` (any --policy-kind), "
                    "e.g. one per training seed; the row's mean ± std is over their greedy placements. NAME "
                    "defaults to the policy's kind (doppler, doppler-gdp, ...). Repeatable");
    cmd->add_option("--policy-samples", o->policy_samples,
                    "Learned rows: best of the greedy placement and this many sampled ones under the simulator "
                    "(place --samples), seed 0")->capture_default_str();
    cmd->add_option("--seeds", o->seeds, "Seeds per method (0..N-1): makespan mean ± std over them")->capture_default_str();
    cmd->add_option("--budget", o->budget, "search: simulator evaluations per seed")->capture_default_str();
    cmd->add_option("--csv", o->csv, "Write the table as CSV");
    cmd->add_option("--svg", o->svg, "Write a bar chart as SVG");
    cmd->add_flag("--json", o->json, "Print one JSON object with a `rows` list");
    cmd->callback([o, cmd] {
#ifndef DOPPLER_HAVE_LEARNER
      if (!o->policies.empty()) forward_to_learn_twin();  // learned rows need LibTorch (doppler-learn)
#endif
      auto inputs = sim_inputs(o->f);
      for (const policy_row& row : parse_policy_rows(o->policies))
        for (const auto& file : row.files) inputs.push_back({file, "--policy"});
      check_outputs(*cmd, {{o->csv, "--csv"}, {o->svg, "--svg"}}, inputs);
      auto [g, c, cm, so] = load_setup(o->f);
      if (o->seeds < 1) throw error(errc::bad_argument, "", "--seeds", "must be at least 1");
      if (o->budget < 0) throw error(errc::bad_argument, "", "--budget", "must be >= 0 simulator evaluations");
      std::vector<std::string> names = split_list(o->methods);
      // "none": no placer rows, only the --policy rows.
      if (names.size() == 1 && names[0] == "none") names.clear();
      if (names.empty() && o->policies.empty())
        throw error(errc::bad_argument, "", "--methods", "no method named (and no --policy)");
      for (auto& n : names) make_placer(n);  // unknown names fail before any work
      auto learned = parse_policy_rows(o->policies);
      if (o->policy_samples < 0) throw error(errc::bad_argument, "", "--policy-samples", "must be >= 0");
      double lb = makespan_lower_bound(g, c, cm, so);
      nlohmann::json rows = nlohmann::json::array();
#ifdef DOPPLER_HAVE_LEARNER
      // Learned rows first in the work, last in the table: every checkpoint loads before any
      // placer runs, so a bad file fails fast; greedy placement is deterministic, so each
      // checkpoint places once (its "seed" is the training seed behind it).
      std::vector<std::vector<std::unique_ptr<placer>>> learned_placers;
      for (auto& row : learned) {
        learned_placers.emplace_back();
        for (auto& file : row.files) learned_placers.back().push_back(make_doppler_placer(file, o->policy_samples));
        if (row.name.empty()) row.name = std::string(learned_placers.back().front()->name());
      }
#endif
      // Places with `pl`, checks the placement, and records its simulated makespan and placing time.
      auto score = [&](placer& pl, const placer_options& po, std::vector<double>& spans, std::vector<double>& times) {
        auto t0 = std::chrono::steady_clock::now();
        placement p = pl.place(g, c, cm, po);
        times.push_back(seconds_since(t0));
        check_placement(p, g, c);
        spans.push_back(simulate(g, c, p, cm, so).makespan);
      };
      // A method that cannot fit the graph in memory (single on a small device 0, a greedy packing)
      // is left out of the table with a note, not the end of the comparison.
      nlohmann::json infeasible = nlohmann::json::array();
      for (auto& n : names) {
        std::vector<double> spans, times;
        try {
          for (int s = 0; s < o->seeds; ++s) {
            placer_options po;
            po.seed = static_cast<std::uint64_t>(s);
            po.budget = o->budget;
            po.sim = so;
            po.progress = progress_bar(fmt::format("{} seed {}/{}", n, s + 1, o->seeds));
            score(*make_placer(n), po, spans, times);
          }
        } catch (const error& e) {
          if (e.code() != errc::infeasible) throw;
          std::cerr << "note: " << n << " left out (seed " << spans.size() << "): " << e.reason() << "\n";
          infeasible.push_back({{"method", n}, {"seed", spans.size()}, {"reason", e.reason()}});
          continue;
        }
        rows.push_back(compare_row(n, spans, times, lb, false));
      }
      if (rows.empty() && learned.empty())
        throw error(errc::infeasible, "", "--methods", "no method placed the graph within the devices' memory");
#ifdef DOPPLER_HAVE_LEARNER
      for (std::size_t k = 0; k < learned.size(); ++k) {
        std::vector<double> spans, times;
        for (std::size_t i = 0; i < learned[k].files.size(); ++i) {
          placer_options po;
          po.sim = so;
          score(*learned_placers[k][i], po, spans, times);
        }
        auto row = compare_row(learned[k].name, spans, times, lb, true);
        row["policies"] = learned[k].files;
        rows.push_back(std::move(row));
      }
#endif
      // ratio_best: to the best row; ratio_best_heuristic: to the best non-learned row (the issue's
      // "DOPPLER vs the best non-learned placer"), present when there is one.
      double best = rows[0]["makespan_s"].get<double>();
      double best_heuristic = std::numeric_limits<double>::infinity();
      std::string best_heuristic_name;  // empty: no non-learned row
      for (auto& r : rows) {
        best = std::min(best, r["makespan_s"].get<double>());
        if (!r["learned"].get<bool>() && r["makespan_s"].get<double>() < best_heuristic) {
          best_heuristic = r["makespan_s"].get<double>();
          best_heuristic_name = r["method"].get<std::string>();
        }
      }
      for (auto& r : rows) {
        r["ratio_best"] = makespan_ratio(r["makespan_s"].get<double>(), best);
        if (!best_heuristic_name.empty())
          r["ratio_best_heuristic"] = makespan_ratio(r["makespan_s"].get<double>(), best_heuristic);
      }
      nlohmann::json out = {{"graph", g.name()}, {"cluster", c.name()}, {"model", o->f.model}, {"mode", o->f.mode},
                            {"transfers", o->f.transfers},
                            {"seeds", o->seeds}, {"lower_bound_s", lb}, {"rows", rows}};
      if (!best_heuristic_name.empty()) out["best_heuristic"] = best_heuristic_name;
      if (!infeasible.empty()) out["infeasible"] = infeasible;
      if (!o->csv.empty()) {
        std::string csv =
            "method,makespan_mean_s,makespan_std_s,makespan_best_s,ratio_lower_bound,ratio_best,place_time_s,learned\n";
        for (auto& r : rows)
          csv += fmt::format("{},{:.9g},{:.9g},{:.9g},{:.6f},{:.6f},{:.6g},{}\n", r["method"].get<std::string>(),
                             r["makespan_s"].get<double>(), r["std_s"].get<double>(), r["best_s"].get<double>(),
                             r["ratio_lower_bound"].get<double>(), r["ratio_best"].get<double>(),
                             r["place_time_s"].get<double>(), r["learned"].get<bool>() ? 1 : 0);
        write_file_atomic(o->csv, csv);
      }
      if (!o->svg.empty())
        write_svg(o->svg, fmt::format("{} on {} ({} model, {} seeds)", g.name(), c.name(), o->f.model, o->seeds), rows, lb);
      if (o->json) {
        std::cout << out.dump() << "\n";
        return;
      }
      std::cout << fmt::format("{} on {}: {} model, {} mode, {} seed(s); lower bound {:.6g} s\n", g.name(), c.name(),
                               o->f.model, o->f.mode, o->seeds, lb);
      std::cout << fmt::format("{:<16} {:>24} {:>12} {:>8} {:>8} {:>10}\n", "method", "makespan s (mean ± std)",
                               "best s", "/bound", "/best", "place s");
      for (auto& r : rows)
        std::cout << fmt::format("{:<16} {:>12.6g} ± {:<9.3g} {:>12.6g} {:>8.3f} {:>8.3f} {:>10.3g}\n",
                                 r["method"].get<std::string>(), r["makespan_s"].get<double>(), r["std_s"].get<double>(),
                                 r["best_s"].get<double>(), r["ratio_lower_bound"].get<double>(),
                                 r["ratio_best"].get<double>(), r["place_time_s"].get<double>());
      if (!best_heuristic_name.empty())
        for (auto& r : rows)
          if (r["learned"].get<bool>())
            std::cout << fmt::format("{}: {:.3f}x the best non-learned method ({}), over {} checkpoint(s)\n",
                                     r["method"].get<std::string>(), r["ratio_best_heuristic"].get<double>(),
                                     best_heuristic_name, r["runs"].get<std::size_t>());
      if (!o->csv.empty()) std::cout << "wrote " << o->csv << "\n";
      if (!o->svg.empty()) std::cout << "wrote " << o->svg << "\n";
    });
  }
}

}  // namespace doppler::cli
