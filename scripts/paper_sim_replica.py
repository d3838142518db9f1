#!/usr/bin/env python3
"""Independent check of placements against the DOPPLER paper simulator's semantics (env/cost.py of
xinyuyao/Doppler, a SimPy model): an op is ready when every input has arrived (producer end + the
producer's comm if on another device; no contention, no latency), and each device serves its ready
ops FIFO by ready time (ties: lower op index). Prints the mean and std makespan, in seconds on
doppler-paper:N (= the paper's cost units / 1e10), over the given placements.

usage: paper_sim_replica.py GRAPH.txt PLACEMENT.json [PLACEMENT.json ...]
  (placements written by `doppler place` for that paper graph on doppler-paper:N)
       paper_sim_replica.py --check DOPPLER [--seeds K]
  (the cross-check ctest `simple_model_replica` runs: on each of the six paper graphs, placements by
  cp, heft, round-robin and random with seeds 0..K-1 (default 3) from DOPPLER's `place`, each
  simulated by `DOPPLER simulate --model simple` and by this replica; exit 1 naming the graph and
  placement where the makespans differ by more than 1e-9 relative, 0 when every one agrees)
"""
import heapq
import json
import os
import statistics
import subprocess
import sys
import tempfile


def load_paper_graph(path):
    """Edges and per-node comp/comm of a paper-format .txt graph (placed nodes only)."""
    lines = open(path).read().split("\n")
    src = [int(x) for x in lines[2].split(",") if x.strip()]
    dst = [int(x) for x in lines[3].split(",") if x.strip()]
    comp, comm = [], []
    for line in lines[4:]:
        if not line.strip():
            continue
        parts = line.split(",")
        comp.append(float(parts[0]))
        comm.append(float(parts[1].split()[0]) if len(parts) > 1 else 0.0)
    return src, dst, comp, comm


def makespan(succs, npreds, comp, comm, dev):
    """Event-driven run: readiness events before finish events at equal times."""
    n = len(comp)
    missing = list(npreds)
    ready_at = [0.0] * n
    events = [(0.0, 0, i) for i in range(n) if missing[i] == 0]  # (time, 0 ready | 1 finish, op)
    heapq.heapify(events)
    queue, busy, t_end = {}, {}, 0.0

    def start_next(d, t):
        if busy.get(d) or not queue.get(d):
            return
        _, i = heapq.heappop(queue[d])
        busy[d] = True
        heapq.heappush(events, (t + comp[i], 1, i))

    while events:
        t, kind, i = heapq.heappop(events)
        t_end = max(t_end, t)
        d = dev[i]
        if kind == 0:
            heapq.heappush(queue.setdefault(d, []), (t, i))
        else:
            busy[d] = False
            for s in succs[i]:
                ready_at[s] = max(ready_at[s], t + (comm[i] if dev[s] != d else 0.0))
                missing[s] -= 1
                if missing[s] == 0:
                    heapq.heappush(events, (ready_at[s], 0, s))
        start_next(d, t)
    return t_end / 1e10


def load_replica_graph(path):
    """A paper graph as the replica runs it: (successor lists, predecessor counts, comp, comm)."""
    src, dst, comp, comm = load_paper_graph(path)
    succs = [[] for _ in comp]
    npreds = [0] * len(comp)
    for a, b in zip(src, dst):
        succs[a].append(b)
        npreds[b] += 1
    return succs, npreds, comp, comm


def replica_makespan(graph, placement_file):
    succs, npreds, comp, comm = graph
    assignment = json.load(open(placement_file))["assignment"]
    dev = [assignment["n%d" % i] for i in range(len(comp))]
    return makespan(succs, npreds, comp, comm, dev)


def check(doppler, seeds):
    """Every placement method's placements, simulated by doppler's simple model and by the replica."""
    paper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "doppler-paper")
    graphs = [("chain_mm_112nodes.txt", 4), ("ffnn_192nodes.txt", 4), ("transformer_block_215nodes.txt", 4),
              ("full_transformer_layer_261nodes.txt", 4), ("8gpu_transformer_block.txt", 8),
              ("8gpu_full_transformer.txt", 8)]
    methods = [("cp", s) for s in range(seeds)] + [("heft", 0), ("round-robin", 0)] + \
              [("random", s) for s in range(seeds)]
    bad = checked = 0
    with tempfile.TemporaryDirectory(prefix="replica.") as tmp:
        for name, devices in graphs:
            path = os.path.join(paper, name)
            graph = load_replica_graph(path)
            cluster = "doppler-paper:%d" % devices
            for method, seed in methods:
                placement = os.path.join(tmp, "%s.%s.%d.json" % (name, method, seed))
                common = ["--graph", path, "--cluster", cluster, "--model", "simple"]
                subprocess.run([doppler, "place", *common, "--method", method, "--seed", str(seed),
                                "-o", placement], check=True, stdout=subprocess.DEVNULL)
                out = subprocess.run([doppler, "simulate", *common, "--placement", placement, "--json"],
                                     check=True, stdout=subprocess.PIPE, text=True).stdout
                ours = json.loads(out)["makespan_s"]
                theirs = replica_makespan(graph, placement)
                checked += 1
                if abs(ours - theirs) > 1e-9 * max(abs(theirs), 1e-300):
                    bad += 1
                    print("DIFFER %s on %s, %s seed %d: doppler %.12g s, replica %.12g s"
                          % (name, cluster, method, seed, ours, theirs))
    print("%d of %d placements agree with the replica" % (checked - bad, checked))
    return 1 if bad else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--check":
        seeds = 3
        if len(sys.argv) == 5 and sys.argv[3] == "--seeds" and sys.argv[4].isdigit() and int(sys.argv[4]) > 0:
            seeds = int(sys.argv[4])
        elif len(sys.argv) != 3:
            sys.exit(__doc__)
        if not os.access(sys.argv[2], os.X_OK):
            sys.exit("paper_sim_replica.py: --check: %s is not an executable doppler" % sys.argv[2])
        return check(sys.argv[2], seeds)
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    graph = load_replica_graph(sys.argv[1])
    spans = [replica_makespan(graph, path) for path in sys.argv[2:]]
    std = statistics.stdev(spans) if len(spans) > 1 else 0.0
    print(f"{sys.argv[1].split('/')[-1]}: mean {statistics.mean(spans):.1f} std {std:.1f} "
          f"min {min(spans):.1f} over {len(spans)} placements")


if __name__ == "__main__":
    sys.exit(main())
