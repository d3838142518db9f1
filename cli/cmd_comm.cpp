// Comm-planner subcommands: plan-comm, check-schedule, compare-comm.

#include "commands.hpp"

#include <doppler/comm/msccl.hpp>
#include <doppler/comm/planner.hpp>
#include <doppler/comm/tenants.hpp>
#include <doppler/comm/topologies.hpp>
#include <doppler/runtime/cluster.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/io.hpp>
#include <doppler/runtime/xml.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

namespace doppler::cli {

namespace {

/// The demand options every comm command shares.
struct demand_opts {
  std::string spec = "allgather";  // a collective name or a doppler-demand/1 file
  double chunk_bytes = 1 << 20;
  int chunks_per_gpu = 1;
  std::string root;  // empty: the cluster's first device
  CLI::Option* chunk_bytes_option = nullptr;
  CLI::Option* chunks_per_gpu_option = nullptr;
  bool chunk_bytes_given() const { return chunk_bytes_option && chunk_bytes_option->count() > 0; }
  bool chunks_per_gpu_given() const { return chunks_per_gpu_option && chunks_per_gpu_option->count() > 0; }
};

/// Most chunks per GPU a collective may ask for (the demand, and with it the horizon, stays bounded).
constexpr int max_chunks_per_gpu = 1 << 16;

void add_demand_options(CLI::App* cmd, demand_opts& o) {
  cmd->add_option("--collective,--demand", o.spec,
                  "allgather, alltoall, broadcast, scatter, gather, or a doppler-demand/1 file")->capture_default_str();
  o.chunk_bytes_option =
      cmd->add_option("--chunk-bytes", o.chunk_bytes, "Bytes per chunk, 1 to 2^40 (a demand file carries its own)")
          ->capture_default_str();
  o.chunks_per_gpu_option = cmd->add_option("--chunks-per-gpu", o.chunks_per_gpu, "Chunks per GPU (per pair for alltoall/scatter/gather), 1 to 65536")
      ->capture_default_str();
  cmd->add_option("--root", o.root, "Root device of broadcast/scatter/gather (default: the cluster's first device)");
}

bool has_root(comm::collective k) {
  return k == comm::collective::broadcast || k == comm::collective::scatter || k == comm::collective::gather;
}

comm::demand make_demand(const cluster& c, const demand_opts& o) {
  if (auto kind = comm::parse_collective(o.spec)) {
    check_chunk_bytes_flag(o.chunk_bytes);
    if (o.chunks_per_gpu < 1 || o.chunks_per_gpu > max_chunks_per_gpu)
      throw error(errc::bad_argument, "", "--chunks-per-gpu",
                  fmt::format("{} is outside 1..{}", o.chunks_per_gpu, max_chunks_per_gpu));
    device_index root = 0;  // the cluster's first device
    if (!o.root.empty()) {
      if (!has_root(*kind))
        throw error(errc::bad_argument, "", "--root",
                    "only broadcast, scatter and gather have a root, " + o.spec + " has none");
      auto r = c.find_device(o.root);
      if (!r) throw error(errc::bad_argument, "", "--root", "\"" + o.root + "\" is not a device of " + c.name());
      root = *r;
    }
    return comm::make_collective(c, *kind, o.chunk_bytes, o.chunks_per_gpu, root);
  }
  std::error_code ec;
  if (!std::filesystem::exists(o.spec, ec))
    throw error(errc::bad_argument, "", "--collective",
                "\"" + o.spec + "\" is neither a collective (allgather, alltoall, broadcast, scatter, gather) "
                                "nor a demand file");
  if (!o.root.empty())
    throw error(errc::bad_argument, "", "--root", "a demand file names its own sources; --root is for collectives");
  if (o.chunk_bytes_given())
    throw error(errc::bad_argument, "", "--chunk-bytes", "a demand file gives its own chunk_bytes; --chunk-bytes is for collectives");
  if (o.chunks_per_gpu_given())
    throw error(errc::bad_argument, "", "--chunks-per-gpu", "a demand file lists its own chunks; --chunks-per-gpu is for collectives");
  return comm::load_demand(o.spec, c);
}

void set_tau(comm::plan_options& p, const std::string& tau) {
  if (auto m = comm::parse_epoch_mode(tau); m && *m != comm::epoch_mode::given) {
    p.with_tau(*m);
    return;
  }
  try {
    std::size_t used = 0;
    double t = std::stod(tau, &used);
    if (used != tau.size() || !(t > 0) || !std::isfinite(t)) throw std::invalid_argument(tau);
    p.with_tau(comm::epoch_mode::given, t);
  } catch (const std::exception&) {
    throw error(errc::bad_argument, "", "--tau", "\"" + tau + "\" is not fast, slow or a positive number of seconds");
  }
}

/// --time-limit: a positive finite number of seconds.
void check_time_limit(double s) {
  if (!(s > 0) || !std::isfinite(s))
    throw error(errc::bad_argument, "", "--time-limit", fmt::format("{:g} is not a positive number of seconds", s));
}

/// A method name the planner knows, else an error naming `option` and listing the known ones.
/// --methods: a comma-separated list of known methods, at least one.
std::vector<std::string> parse_methods(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string m; std::getline(in, m, ',');) {
    auto first = m.find_first_not_of(" \t"), last = m.find_last_not_of(" \t");
    m = first == std::string::npos ? "" : m.substr(first, last - first + 1);
    if (m.empty()) throw error(errc::bad_argument, "", "--methods", "\"" + list + "\" has an empty method name");
    check_comm_method_flag(m, "--methods");
    out.push_back(m);
  }
  if (out.empty()) throw error(errc::bad_argument, "", "--methods", "no method given");
  return out;
}

/// Builds the time-expanded network once, so that a τ or chunk size outside its limits is reported
/// against the option (or demand file field) that set it before anything is planned.
void check_network(const cluster& c, const comm::demand& d, const comm::plan_options& p, const demand_opts& o) {
  try {
    comm::network net(c, d.chunk_bytes, p.tau_mode, p.tau);
  } catch (const error& e) {
    if (e.path() == "tau") throw error(e.code(), "", "--tau", e.reason());
    if (e.path() == "chunk_bytes" && !comm::parse_collective(o.spec))
      throw error(errc::bad_value, o.spec, "chunk_bytes", e.reason());
    if (e.path() == "chunk_bytes") throw error(e.code(), "", "--chunk-bytes", e.reason());
    throw;
  }
}

std::string gbps(double bytes_per_s) { return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9); }

/// What is planned: "NAME on CLUSTER: N chunks of B bytes"; a demand file without a name is named by
/// `spec`, the --demand value.
void print_demand(const comm::demand& d, const cluster& c, const std::string& spec) {
  std::cout << fmt::format("{} on {}: {} chunks of {} bytes\n", d.name.empty() ? spec : d.name, c.name(),
                           d.chunks.size(), d.chunk_bytes);
}

void print_result(const comm::plan_result& r) {
  const auto& s = r.sched;
  std::cout << fmt::format("method {}: {} epochs of {:.4g} s = {:.4g} s, algbw {} ({:.1f}% of the bound {:.4g} s, "
                           "{} epochs{}), α-β replay {:.4g} s, {} sends, solved in {:.3f} s\n",
                           s.method, s.epochs, s.epoch_seconds, r.report.transfer_seconds, gbps(r.report.algbw),
                           100 * r.fraction_of_bound(), r.bound.seconds, r.bound.epochs,
                           s.proved_optimal ? "; epoch count optimal" : "", r.report.simulated_seconds, s.sends.size(),
                           s.solve_seconds);
  if (!s.note.empty()) std::cout << "  " << s.note << "\n";
}

void add_plan_comm(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan-comm", "Plan a collective or a demand file on a cluster (doppler-schedule/1)");
  struct opts {
    std::string cluster = "dgx1-v100", tau = "fast", out, msccl, warm, trace;
    demand_opts d;
    comm::plan_options p;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("--cluster", o->cluster, "Cluster file, preset, or h100-pod:N")->capture_default_str();
  add_demand_options(cmd, o->d);
  cmd->add_option("--method", o->p.method, "milp, lp, telp, astar, greedy, ring, rings, direct, tree, auto")->capture_default_str();
  cmd->add_option("--time-limit", o->p.time_limit, "Solver seconds (milp, lp, telp, astar, auto)")->capture_default_str();
  cmd->add_option("--tau", o->tau, "Epoch length: fast, slow, or seconds")->capture_default_str();
  cmd->add_option("--max-epochs", o->p.max_epochs, "Horizon cap in epochs: milp and telp search within it, and a longer plan from any method is an error "
                  "(0: no cap)")->capture_default_str();
  cmd->add_option("--round-epochs", o->p.round_epochs, "astar: epochs per round")->capture_default_str();
  cmd->add_flag("--first-feasible", o->p.first_feasible, "MILP: stop at the first feasible schedule");
  cmd->add_flag("--switch-copy", o->p.switch_copy, "Switches may multicast");
  cmd->add_option("-o,--output", o->out, "Schedule file (default: none, summary only)");
  cmd->add_option("--msccl", o->msccl, "Also write the schedule as MSCCL XML");
  cmd->add_option("--trace", o->trace, "Write a Chrome trace (Perfetto) of the schedule's α-β replay: every link's sends");
  cmd->add_option("--warm-start", o->warm,
                  "Re-plan: keep this previous schedule's sends of chunks still in the demand, plan the rest");
  cmd->add_option("--replan-epoch", o->p.replan_epoch,
                  "With --warm-start: the epoch the demand changes; sends before it stay, the rest is re-planned "
                  "from the state there (greedy, auto, milp; -1: keep every old send)")
      ->capture_default_str();
  cmd->callback([o, cmd] {
    check_outputs(*cmd, {{o->out, "--output"}, {o->msccl, "--msccl"}, {o->trace, "--trace"}},
                  {{o->cluster, "--cluster"}, {o->d.spec, "--demand"}});  // not --warm-start: re-planning in place is allowed
    check_comm_method_flag(o->p.method, "--method");
    check_time_limit(o->p.time_limit);
    if (o->p.max_epochs < 0)
      throw error(errc::bad_argument, "", "--max-epochs", std::to_string(o->p.max_epochs) + " is negative (0: searched)");
    if (o->p.round_epochs < 2)
      throw error(errc::bad_argument, "", "--round-epochs", std::to_string(o->p.round_epochs) + " is less than 2");
    if (o->p.replan_epoch < -1)
      throw error(errc::bad_argument, "", "--replan-epoch", std::to_string(o->p.replan_epoch) + " is less than -1");
    cluster c = comm::load_comm_cluster(o->cluster);
    comm::demand d = make_demand(c, o->d);
    set_tau(o->p, o->tau);
    check_network(c, d, o->p, o->d);
    comm::schedule old;
    if (!o->warm.empty()) {
      old = comm::load_schedule(o->warm, c);
      o->p.warm_start = &old;
      if (o->p.replan_epoch > old.epochs)
        throw error(errc::bad_argument, "", "--replan-epoch",
                    std::to_string(o->p.replan_epoch) + " is past the end of " + o->warm + " (" +
                        std::to_string(old.epochs) + " epochs)");
    } else if (o->p.replan_epoch >= 0) {
      throw error(errc::bad_argument, "", "--replan-epoch", "needs --warm-start (the schedule to re-plan)");
    }
    comm::plan_result r = comm::plan(c, d, o->p);
    print_demand(d, c, o->d.spec);  // a bare plan-comm runs on its defaults: say what it planned
    print_result(r);
    if (!o->out.empty()) comm::save_schedule(r.sched, c, o->out);
    if (!o->trace.empty()) {
      write_file_atomic(o->trace, comm::schedule_trace(c, r.sched, r.report));
      std::cout << "trace: " << o->trace << "\n";
    }
    if (!o->msccl.empty()) {
      comm::network net(c, d.chunk_bytes, comm::epoch_mode::given, r.sched.epoch_seconds);
      comm::msccl_options m;
      m.name = d.name + "-" + r.sched.method;
      m.collective = comm::parse_collective(o->d.spec) ? o->d.spec : "custom";  // a demand file
      write_file_atomic(o->msccl, comm::to_msccl_xml(net, d, r.sched, m));
    }
  });
}

void add_check_schedule(CLI::App& app) {
  auto* cmd = app.add_subcommand("check-schedule", "Validate and replay a doppler-schedule/1 on a cluster");
  struct opts {
    std::string cluster = "dgx1-v100", schedule, trace;
    demand_opts d;
    bool no_switch_copy = false;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("schedule", o->schedule, "The schedule file")->required();
  cmd->add_option("--cluster", o->cluster, "Cluster file, preset, or h100-pod:N")->capture_default_str();
  add_demand_options(cmd, o->d);
  // Not 1 MiB: a collective checked here has the schedule's own chunk size unless the flag is given.
  o->d.chunk_bytes_option->description("Bytes per chunk, 1 to 2^40 (default: the schedule's own chunk size)");
  o->d.chunk_bytes_option->default_str("");
  cmd->add_flag("--no-switch-copy", o->no_switch_copy, "Reject schedules where a switch multicasts");
  cmd->add_option("--trace", o->trace, "Write a Chrome trace (Perfetto) of the α-β replay: every link's sends");
  cmd->callback([o, cmd] {
    check_outputs(*cmd, {{o->trace, "--trace"}},
                  {{o->schedule, "schedule"}, {o->cluster, "--cluster"}, {o->d.spec, "--demand"}});
    cluster c = comm::load_comm_cluster(o->cluster);
    comm::schedule s = comm::load_schedule(o->schedule, c);
    demand_opts dopt = o->d;
    // A collective has the schedule's chunk size unless --chunk-bytes says otherwise (then they must match).
    if (comm::parse_collective(dopt.spec) && !dopt.chunk_bytes_given()) dopt.chunk_bytes = s.chunk_bytes;
    comm::demand d = make_demand(c, dopt);
    comm::replay_report r;
    try {
      r = comm::validate_schedule(c, d, s, {.switch_copy = !o->no_switch_copy});
    } catch (const error& e) {
      if (s.demand_name.empty() || s.demand_name == d.name) throw e.with_file(o->schedule);
      // Most likely the options describe another demand than the one the schedule was planned for.
      throw error(e.code(), o->schedule, e.path(),
                  e.reason() + " (the schedule was planned for demand '" + s.demand_name + "', the options give '" +
                      d.name + "': check --collective, --chunks-per-gpu or --demand)");
    }
    std::cout << fmt::format("{}: valid; {} sends, {} epochs of {:.4g} s = {:.4g} s, algbw {}, α-β replay {:.4g} s, "
                             "{:.4g} MB over links\n",
                             o->schedule, r.sends, r.epochs_used, s.epoch_seconds, r.transfer_seconds, gbps(r.algbw),
                             r.simulated_seconds, r.bytes_moved / 1e6);
    double peak = *std::max_element(r.peak_buffer_bytes.begin(), r.peak_buffer_bytes.end());
    std::cout << fmt::format("peak buffer per GPU: max {:.4g} MB (", peak / 1e6);
    for (std::size_t g = 0; g < r.peak_buffer_bytes.size(); ++g)
      std::cout << (g ? ", " : "") << c[static_cast<device_index>(g)].id << " " << r.peak_buffer_bytes[g] / 1e6;
    std::cout << ")\n";
    if (!o->trace.empty()) {
      write_file_atomic(o->trace, comm::schedule_trace(c, s, r));
      std::cout << "trace: " << o->trace << "\n";
    }
  });
}

/// A bar chart of algbw per method, with the bound as a line.
std::string comparison_svg(const std::string& title, const std::vector<std::pair<std::string, comm::plan_result>>& rows) {
  const double w = 640, h = 360, left = 70, bottom = 40, top = 40;
  double bound_bw = 0, most = 0;
  for (auto& [m, r] : rows) {
    most = std::max(most, r.report.algbw);
    if (r.bound.seconds > 0) bound_bw = r.report.output_bytes / r.bound.seconds;
  }
  most = std::max(most, bound_bw) * 1.1;
  auto y = [&](double v) { return top + (h - top - bottom) * (1 - v / most); };
  std::ostringstream s;
  s << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h);
  s << fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n", left, xml_escape(title));
  s << fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", left, top, h - bottom);
  for (int k = 0; k <= 4; ++k) {
    double v = most * k / 4;
    s << fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.1f}</text>\n", left - 6, y(v) + 4, v / 1e9);
  }
  s << fmt::format("<text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\">algbw (GB/s)</text>\n", h / 2, h / 2);
  const double slot = (w - left - 20) / static_cast<double>(std::max<std::size_t>(1, rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [m, r] = rows[i];
    double x = left + 10 + slot * static_cast<double>(i);
    s << fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#4a7fb0\"/>\n", x, y(r.report.algbw),
                     slot * 0.7, h - bottom - y(r.report.algbw));
    s << fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x + slot * 0.35, h - bottom + 16, xml_escape(m));
    s << fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.0f}%</text>\n", x + slot * 0.35,
                     y(r.report.algbw) - 4, 100 * r.fraction_of_bound());
  }
  if (bound_bw > 0)
    s << fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#c0392b\" stroke-dasharray=\"5,3\"/>"
                     "<text x=\"{}\" y=\"{:.1f}\" fill=\"#c0392b\" text-anchor=\"end\">bound {:.2f} GB/s</text>\n",
                     left, y(bound_bw), w - 10, y(bound_bw), w - 10, y(bound_bw) - 4, bound_bw / 1e9);
  s << "</svg>\n";
  return s.str();
}

void add_compare_comm(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare-comm", "Plan one demand with several methods: time, algbw, % of bound, solve time");
  struct opts {
    std::string cluster = "dgx1-v100", tau = "fast", methods = "milp,lp,astar,greedy,ring,direct,tree", csv, svg;
    demand_opts d;
    double time_limit = 30;
    bool switch_copy = false;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("--cluster", o->cluster, "Cluster file, preset, or h100-pod:N")->capture_default_str();
  add_demand_options(cmd, o->d);
  cmd->add_option("--methods", o->methods, "Comma-separated methods")->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit, "Solver seconds per method")->capture_default_str();
  cmd->add_option("--tau", o->tau, "Epoch length: fast, slow, or seconds")->capture_default_str();
  cmd->add_flag("--switch-copy", o->switch_copy, "Switches may multicast");
  cmd->add_option("--csv", o->csv, "Write the table as CSV");
  cmd->add_option("--svg", o->svg, "Write an algbw bar chart as SVG");
  cmd->callback([o, cmd] {
    check_outputs(*cmd, {{o->csv, "--csv"}, {o->svg, "--svg"}}, {{o->cluster, "--cluster"}, {o->d.spec, "--demand"}});
    const std::vector<std::string> methods = parse_methods(o->methods);
    check_time_limit(o->time_limit);
    cluster c = comm::load_comm_cluster(o->cluster);
    comm::demand d = make_demand(c, o->d);
    comm::plan_options base;
    base.with_time_limit(o->time_limit).with_switch_copy(o->switch_copy);
    set_tau(base, o->tau);
    check_network(c, d, base, o->d);
    std::vector<std::pair<std::string, comm::plan_result>> rows;
    std::string csv = "method,epochs,epoch_seconds,transfer_seconds,algbw_GBps,bound_seconds,percent_of_bound,"
                      "alpha_beta_seconds,sends,solve_seconds,optimal_epochs,status\n";
    print_demand(d, c, o->d.spec);
    std::cout << fmt::format("{:<8} {:>7} {:>12} {:>12} {:>9} {:>12} {:>10}  {}\n", "method", "epochs", "time (s)",
                             "algbw GB/s", "% bound", "α-β (s)", "solve (s)", "");
    for (const std::string& m : methods) {
      comm::plan_options p = base;
      p.with_method(m);
      try {
        comm::plan_result r = comm::plan(c, d, p);
        std::cout << fmt::format("{:<8} {:>7} {:>12.4g} {:>12.2f} {:>8.1f}% {:>12.4g} {:>10.3f}  {}\n", m, r.sched.epochs,
                                 r.report.transfer_seconds, r.report.algbw / 1e9, 100 * r.fraction_of_bound(),
                                 r.report.simulated_seconds, r.sched.solve_seconds, r.sched.proved_optimal ? "optimal" : "");
        csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},ok\n", m, r.sched.epochs, r.sched.epoch_seconds,
                           r.report.transfer_seconds, r.report.algbw / 1e9, r.bound.seconds, 100 * r.fraction_of_bound(),
                           r.report.simulated_seconds, r.sched.sends.size(), r.sched.solve_seconds,
                           r.sched.proved_optimal ? 1 : 0);
        rows.emplace_back(m, std::move(r));
      } catch (const error& e) {
        std::cout << fmt::format("{:<8} {}\n", m, e.what());
        std::string why = e.what();
        std::replace(why.begin(), why.end(), ',', ';');
        csv += m + ",,,,,,,,,,," + why + "\n";
      }
    }
    // A method that does not apply is a row of the table; none applying is an error (exit non-zero).
    if (rows.empty()) {
      if (!o->csv.empty()) write_file_atomic(o->csv, csv);
      throw error(errc::infeasible, "", "--methods",
                  "none of " + o->methods + " could plan " + d.name + " on " + c.name() + " (reasons above)");
    }
    if (d.jobs.size() > 1) {
      // Several tenants: the first method jointly vs each job alone vs first-come-first-served.
      comm::plan_options p = base;
      p.with_method(rows.front().first);
      comm::tenant_comparison t = comm::compare_tenants(c, d, p);
      std::cout << fmt::format("tenants ({}): completion epochs per job\n{:<16} {:>7} {:>7} {:>7} {:>7}\n", p.method, "job",
                               "weight", "joint", "alone", "fcfs");
      for (const auto& j : t.jobs)
        std::cout << fmt::format("{:<16} {:>7g} {:>7} {:>7} {:>7}\n", j.job, j.weight, j.joint_epochs, j.alone_epochs,
                                 j.fcfs_epochs);
      std::cout << fmt::format("weighted sum     {:>15g} {:>7g} {:>7g}; makespan joint {} vs fcfs {} epochs\n",
                               t.weighted_joint, t.weighted_alone, t.weighted_fcfs, t.joint.report.epochs_used,
                               t.fcfs.epochs);
    }
    if (!o->csv.empty()) write_file_atomic(o->csv, csv);
    if (!o->svg.empty())
      write_file_atomic(o->svg, comparison_svg(d.name + " on " + c.name() + " (" + fmt::format("{:g}", d.chunk_bytes) +
                                                   " B chunks)", rows));
  });
}

}  // namespace

void add_comm_commands(CLI::App& app) {
  add_plan_comm(app);
  add_check_schedule(app);
  add_compare_comm(app);
}

}  // namespace doppler::cli
