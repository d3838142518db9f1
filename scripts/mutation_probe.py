#!/usr/bin/env python3
"""Mutation probe: do the tests catch a planted bug in the code they are meant to guard?

Each mutant below is one small edit of one source line (a dropped term, a flipped comparison, an
off-by-one) in the simulator, the cost model, the cluster's routes, the list schedulers, the lower
bound, the comm planner's schedule validator or the actor runtime's dependency counting, each one a
bug that would make results silently wrong. For every mutant the script applies the edit, rebuilds the test binaries of its group in the
release tree, runs them (doctest, stopping at the first failed check) and restores the file. A mutant
is *killed* when a test fails, *survived* when every test passes (a gap in the tests, or an edit that
changes nothing observable: see the mutant's note), *no-build* when it does not compile.

    scripts/mutation_probe.py [--tree build/release] [--only ID,...] [--list] [--csv FILE]

The tree must be configured and built (cmake --preset release; cmake --build build/release). The
sources are always restored (also on Ctrl-C) and the touched targets rebuilt at the end, so the tree
matches the checkout again. Build nothing else from this checkout while it runs: a compile that reads
a source while a mutant is in it bakes the bug into that tree (restoring bumps the file's time, so
that tree's next build recompiles it, but a build already past it keeps the mutant). Exit status: 0 when every mutant was killed, 1 when one survived or did
not build, 2 on a usage error or a baseline that already fails.
"""

import argparse
import csv
import io
import os
import pathlib
import stat
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

GROUPS = {
    # Torch-free library-level suites (no CLI relink, no LibTorch): minutes, not tens of minutes.
    "runtime": ["test_sim", "test_lower_bound", "test_placers", "test_placer_limits", "test_cluster",
                "test_cost_memory", "test_placement", "test_comm_transfers", "ctest:simple_model_replica"],
    "actors": ["test_actor_engine", "test_actor_transfers", "test_actor_resident", "test_actor_protocol"],
    # The graph, placement and memory models' checks of their input (bad input must be refused).
    "model": ["test_graph", "test_graph_io", "test_io", "test_placement", "test_placers", "test_placer_limits",
              "test_cost_memory", "test_cli"],
    # LibTorch tests: the learner library's features and assignment episode (a few seconds each).
    "learner": ["test_features", "test_policy", "test_env_transfers"],
    # LibTorch tests that train (imitation, REINFORCE, PPO on small graphs): seconds each.
    "training": ["test_training", "test_ppo"],
    "comm": ["test_comm_plan", "test_comm_limits", "test_comm_model", "test_comm_tenants",
             "test_comm_replan", "test_comm_transfers"],
}

# (id, group, file, original text (must occur exactly once), replacement, what the bug means)
MUTANTS = [
    ("wc-latency", "runtime", "runtime/src/sim_wc.cpp",
     "double end = start + rt.time(in.bytes[u]) * in.factor();",
     "double end = start + in.bytes[u] / rt.bandwidth * in.factor();",
     "wc: transfers pay no link latency"),
    ("wc-contention", "runtime", "runtime/src/sim_wc.cpp",
     "for (link_index l : rt.links) start = std::max(start, link_free[l]);",
     "for (link_index l : rt.links) (void)l;",
     "wc: transfers ignore a busy link (no contention)"),
    ("wc-streams", "runtime", "runtime/src/sim_wc.cpp",
     "while (running[d] < streams && !ready.empty(d)) {",
     "while (running[d] <= streams && !ready.empty(d)) {",
     "wc: a device runs one op more than its streams at once"),
    ("wc-dedupe", "runtime", "runtime/src/sim_wc.cpp",
     "} else if (stamp[ds] != u) {",
     "} else if (true) {",
     "wc: an output is sent once per consumer, not once per consumer device"),
    ("wc-busy", "runtime", "runtime/src/sim_wc.cpp",
     "if (--running[d] == 0) r.busy[d] += now - busy_since[d];",
     "if (--running[d] == 0) r.busy[d] += 0 * busy_since[d];",
     "wc: device busy time is never counted"),
    ("wc-chunks", "runtime", "runtime/src/sim_wc.cpp",
     "++got[ap.base + static_cast<std::uint32_t>(it - tp.destinations.begin())] != tp.chunks)",
     "++got[ap.base + static_cast<std::uint32_t>(it - tp.destinations.begin())] > tp.chunks)",
     "wc planned transfers: a destination has the tensor after its first chunk"),
    ("wc-sharing", "runtime", "runtime/src/sim_wc.cpp",
     "share = k > cores ? cores / k : 1.0;",
     "share = k > cores ? 1.0 : 1.0;",
     "wc: host-core sharing never slows an op"),
    ("wc-bsp", "runtime", "runtime/src/sim_wc.cpp",
     "if (bsp) outstanding += static_cast<std::uint32_t>(dests.size());",
     "if (bsp) outstanding += 0 * static_cast<std::uint32_t>(dests.size());",
     "bsp: the barrier does not wait for a level's transfers"),
    ("simple-comm", "runtime", "runtime/src/sim_simple.cpp",
     "arrive += in.bytes[v] / rt.bandwidth * in.factor();",
     "arrive += 0 * in.bytes[v] / rt.bandwidth * in.factor();",
     "simple: transfers take no time"),
    ("simple-event-order", "runtime", "runtime/src/sim_simple.cpp",
     "if (kind != o.kind) return kind > o.kind;",
     "if (kind != o.kind) return kind < o.kind;",
     "simple: finishes before readies at equal times (the paper orders readies first)"),
    ("simple-fifo", "runtime", "runtime/src/sim_simple.cpp",
     "queue[d].push({e.key, v});",
     "queue[d].push({0, v});",
     "simple: a device's ready queue by op index, not by ready time"),
    ("cost-overhead", "runtime", "runtime/include/doppler/runtime/cost_model.hpp",
     "return overhead_ + t;",
     "return t;",
     "cost model: the per-op overhead is dropped"),
    ("cost-memory-term", "runtime", "runtime/include/doppler/runtime/cost_model.hpp",
     "t = std::max(t, o.bytes / bandwidth_[k]);",
     "t = std::min(t, o.bytes / bandwidth_[k]);",
     "cost model: the memory term lowers an op's time instead of bounding it below"),
    ("route-bottleneck", "runtime", "runtime/src/cluster.cpp",
     "route_key cand{k.latency + e.latency, k.hops + 1, std::min(k.bandwidth, e.bandwidth)};",
     "route_key cand{k.latency + e.latency, k.hops + 1, std::max(k.bandwidth, e.bandwidth)};",
     "routes: a multi-hop route's bandwidth is its widest link, not its narrowest"),
    ("route-widest", "runtime", "runtime/src/cluster.cpp",
     "  return a.bandwidth > b.bandwidth;\n}\n\n/// The same order",
     "  return a.bandwidth < b.bandwidth;\n}\n\n/// The same order",
     "routes: among equal-latency equal-hop routes the narrowest wins"),
    ("cp-avail", "runtime", "runtime/src/placer_cp.cpp",
     "double t = avail[d];",
     "double t = 0 * avail[d];",
     "cp: a device's queue is ignored (start time from inputs only)"),
    ("cp-latest", "runtime", "runtime/src/placer_cp.cpp",
     "best = std::min(best, t);",
     "best = std::max(best, t);",
     "cp: the latest-starting device is chosen"),
    ("heft-est", "runtime", "runtime/src/placer_heft.cpp",
     "double eft = est + cm.op_time(g[v], c[d]);",
     "double eft = est + 0 * cm.op_time(g[v], c[d]);",
     "heft: earliest start, not earliest finish (ignores device speed)"),
    ("arrival-free", "runtime", "runtime/src/placer_arrivals.cpp",
     "if (!planner_) return end_u + route;",
     "if (!planner_) return end_u + 0 * route;",
     "list schedulers: moving an input to another device costs nothing"),
    ("bound-no-comm", "runtime", "runtime/src/lower_bound.cpp",
     "best = std::min(best, h[u * D + e] + pr.t(u, e) + pr.comm(u, e, d));",
     "best = std::min(best, h[u * D + e] + pr.t(u, e));",
     "lower bound: heads ignore transfers (still a bound, a weaker one)"),
    ("dispatch-early", "actors", "actors/src/dispatcher.cpp",
     "if (--st.remaining[s] == 0 && st.plan->mode == exec_mode::wc) dispatch(self, s);",
     "if (--st.remaining[s] == 1 && st.plan->mode == exec_mode::wc) dispatch(self, s);",
     "runtime: an op with two or more inputs fires when all but one are on its device"),
    ("device-release-early", "actors", "actors/src/device.cpp",
     "if (n > 0 && --n == 0) make_ready(self, *first);",
     "if (n > 0 && --n <= 1) make_ready(self, *first);",
     "runtime (device release, the default): an op runs when all but one of its inputs are here"),
    ("runtime-busy", "actors", "actors/src/dispatcher.cpp",
     "    r.busy[d] = cover;",
     "    r.busy[d] = 0 * cover;",
     "runtime: a device's measured busy time is reported as 0"),
    ("graph-cycle", "model", "runtime/src/graph.cpp",
     "if (g.topo_.size() != n) {",
     "if (g.topo_.size() + 2 < n) {",
     "graph: a cycle of two ops (or a self-input) is not refused"),
    ("order-topological", "model", "runtime/src/placement.cpp",
     "if (pos[u] > i)",
     "if (pos[u] > i + 1)",
     "placement: an order with an op right before its own input is accepted"),
    ("placement-range", "model", "runtime/src/placement.cpp",
     "if (p.device[v] >= c.device_count())",
     "if (p.device[v] > c.device_count())",
     "placement: device index == device count is accepted (one past the end)"),
    ("memory-cap", "model", "runtime/src/placer_common.hpp",
     "return !enabled_ || used_[d] + g_[v].bytes <= cap_[d];",
     "return !enabled_ || used_[d] + g_[v].bytes <= 2 * cap_[d];",
     "placers: a device holds twice its memory"),
    ("feature-pred-comm", "learner", "learner/src/features.cpp",
     "for (op_index u : g.preds(v)) pred_comm += f.edge_cost[u];",
     "for (op_index u : g.preds(v)) pred_comm += f.edge_cost[v] + 0 * u;",
     "learner: the predecessors' comm feature sums the op's own comm"),
    ("feature-out-comm", "learner", "learner/src/features.cpp",
     "r[static_cast<int>(node_feature::out_comm)] = static_cast<double>(g.succs(v).size()) * f.edge_cost[v];",
     "r[static_cast<int>(node_feature::out_comm)] = f.edge_cost[v];",
     "learner: out-degree x comm loses its out-degree"),
    ("feature-zscore", "learner", "learner/src/features.cpp",
     "out[i] = static_cast<float>((values[i] - mean) / sd);",
     "out[i] = static_cast<float>(values[i] - mean);",
     "learner: features centred but not scaled"),
    ("episode-ready-early", "learner", "learner/src/env.cpp",
     "if (--missing_[s] == 0) ready_.insert(",
     "if (--missing_[s] <= 1) ready_.insert(",
     "learner: an op joins SEL's ready set with one predecessor unassigned"),
    ("search-current", "runtime", "runtime/src/placer_search.cpp",
     "    cur.device = std::move(best);",
     "    (void)best;",
     "search: returns where the walk ended, not the best assignment it saw"),
    ("reinforce-sign", "training", "learner/src/trainer.cpp",
     "for (double c : costs) adv.push_back(baseline > 0 ? (baseline - c) / baseline : 0.0);",
     "for (double c : costs) adv.push_back(baseline > 0 ? (c - baseline) / baseline : 0.0);",
     "REINFORCE: a costlier episode than the baseline is reinforced"),
    ("imitation-no-plc", "training", "learner/src/policy_update.cpp",
     "(st.plc_lp * et.teacher_devs.to(torch::kFloat)).sum();",
     "0 * (st.plc_lp * et.teacher_devs.to(torch::kFloat)).sum();",
     "imitation: PLC's log-probabilities of the teacher's devices are left out of the loss"),
    ("validate-capacity", "comm", "comm_planner/src/validate.cpp",
     "if (used + 1 > t.cap)",
     "if (used > t.cap)",
     "comm validator: a link may carry one chunk more than its capacity"),
    ("validate-hold", "comm", "comm_planner/src/validate.cpp",
     "if (hold[ci * D + x.src] > e)",
     "if (hold[ci * D + x.src] > e + 1)",
     "comm validator: a node may send a chunk one epoch before it holds it"),
    ("validate-switch-copy", "comm", "comm_planner/src/validate.cpp",
     "if (!opt.switch_copy && st.out + 1 > st.in)",
     "if (!opt.switch_copy && st.out > st.in)",
     "comm validator: a switch without copy may send a chunk out twice"),
    ("validate-epochs", "comm", "comm_planner/src/validate.cpp",
     "if (s.epochs < rep.epochs_used)\n",
     "if (s.epochs + 1 < rep.epochs_used)\n",
     "comm validator: a header one epoch short of its sends is accepted"),
]


def run(cmd, timeout, env=None):
    """Runs cmd; returns (exit code, seconds, output tail). 124 on timeout."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, env=env, text=True, errors="replace")
        return p.returncode, time.monotonic() - start, p.stdout[-2000:]
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(errors="replace")
        return 124, time.monotonic() - start, out[-2000:]


def build(tree, tests):
    """Builds the test binaries (a `ctest:NAME` entry needs no target of its own: the runtime tests
    depend on `doppler`, which the ctest tests run)."""
    targets = [t for t in tests if not t.startswith("ctest:")]
    return run(["cmake", "--build", tree, "--target", *targets], timeout=3600)


def run_tests(tree, tests, env):
    """Returns (failed test binaries, seconds)."""
    failed, total = [], 0.0
    for t in tests:
        if t.startswith("ctest:"):  # a test that is not a doctest binary (a script ctest runs)
            cmd = ["ctest", "--test-dir", tree, "-R", "^" + t[len("ctest:"):] + "$", "--no-tests=error"]
        else:
            cmd = [os.path.join(tree, "tests", t), "--abort-after=1", "--no-version"]
        rc, secs, _ = run(cmd, 300, env)  # a mutant can make a test wait forever: that kills it too
        total += secs
        if rc != 0:
            failed.append(t + (" (hung)" if rc == 124 else ""))
    return failed, total


def write_atomic(path, text):
    """Replaces `path` by `text` through a temporary file renamed into place, keeping the file's mode
    (mkstemp makes 0600: a restored source would lose its read bits for everyone else)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)) or ".", prefix=".mutation.")
    with os.fdopen(fd, "w", newline="") as f:
        f.write(text)
    mode = os.stat(path).st_mode if os.path.exists(path) else 0o666 & ~current_umask()
    os.chmod(tmp, stat.S_IMODE(mode))
    os.replace(tmp, path)


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", default="build/release", help="configured, built CMake tree (default build/release)")
    ap.add_argument("--only", help="comma-separated mutant ids (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--csv", help="also write the results as CSV to this file")
    a = ap.parse_args()

    mutants = MUTANTS
    if a.only:
        want = a.only.split(",")
        known = {m[0] for m in MUTANTS}
        unknown = [w for w in want if w not in known]
        if unknown:
            print(f"mutation_probe.py: unknown mutant(s) {', '.join(unknown)} (see --list)", file=sys.stderr)
            return 2
        mutants = [m for m in MUTANTS if m[0] in want]
    if a.list:
        for mid, group, path, _, _, note in mutants:
            print(f"{mid:22} {group:8} {path:48} {note}")
        return 0
    tree = a.tree
    if not os.path.isfile(os.path.join(ROOT, tree, "build.ninja")) and not os.path.isfile(os.path.join(ROOT, tree, "Makefile")):
        print(f"mutation_probe.py: {tree} is not a configured CMake tree (cmake --preset release)", file=sys.stderr)
        return 2
    # Every mutant's text must be where the table says, once, before anything is edited.
    for mid, _, path, old, _, _ in mutants:
        n = (ROOT / path).read_text().count(old)
        if n != 1:
            print(f"mutation_probe.py: mutant {mid}: its text occurs {n} times in {path} (must be once); "
                  "the source moved on, update MUTANTS", file=sys.stderr)
            return 2

    env = dict(os.environ, DOPPLER_PAPER_DIR=str(ROOT / "workloads" / "doppler-paper"))
    groups = sorted({m[1] for m in mutants})
    targets = sorted({t for g in groups for t in GROUPS[g]})
    print(f"baseline: building and running {len(targets)} tests", flush=True)
    rc, _, out = build(tree, targets)
    if rc != 0:
        print(out, file=sys.stderr)
        print("mutation_probe.py: the unmutated tree does not build", file=sys.stderr)
        return 2
    failed, secs = run_tests(tree, targets, env)
    if failed:
        print(f"mutation_probe.py: the unmutated tests already fail: {', '.join(failed)}", file=sys.stderr)
        return 2
    print(f"baseline: all pass ({secs:.0f} s)", flush=True)

    rows = []
    try:
        for mid, group, path, old, new, note in mutants:
            src = ROOT / path
            original = src.read_text()
            try:
                write_atomic(src, original.replace(old, new, 1))
                rc, bsecs, _ = build(tree, GROUPS[group])
                if rc != 0:
                    verdict, killers, tsecs = "no-build", [], 0.0
                else:
                    killers, tsecs = run_tests(tree, GROUPS[group], env)
                    verdict = "killed" if killers else "SURVIVED"
            finally:
                write_atomic(src, original)
            rows.append({"mutant": mid, "verdict": verdict, "failing": " ".join(killers),
                         "build_s": f"{bsecs:.0f}", "test_s": f"{tsecs:.0f}", "file": path, "bug": note})
            print(f"{mid:22} {verdict:9} {' '.join(killers) or '-':40} ({bsecs:.0f} s build, {tsecs:.0f} s tests)  {note}",
                  flush=True)
    finally:
        print("restoring the build tree", flush=True)
        build(tree, targets)

    killed = sum(r["verdict"] == "killed" for r in rows)
    print(f"{killed} of {len(rows)} mutants killed")
    if a.csv:
        out = io.StringIO(newline="")
        w = csv.DictWriter(out, fieldnames=list(rows[0].keys()) if rows else ["mutant"])
        w.writeheader()
        w.writerows(rows)
        write_atomic(a.csv, out.getvalue())
    return 0 if killed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
