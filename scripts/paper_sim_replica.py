#!/usr/bin/env python3
"""Independent check of placements against the DOPPLER paper simulator's semantics (env/cost.py of
xinyuyao/Doppler, a SimPy model): an op is ready when every input has arrived (producer end + the
producer's comm if on another device; no contention, no latency), and each device serves its ready
ops FIFO by ready time (ties: lower op index). Prints the mean and std makespan, in seconds on
doppler-paper:N (= the paper's cost units / 1e10), over the given placements.

usage: paper_sim_replica.py GRAPH.txt PLACEMENT.json [PLACEMENT.json ...]
  (placements written by `doppler place` for that paper graph on doppler-paper:N)
"""
import heapq
import json
import statistics
import sys


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


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, dst, comp, comm = load_paper_graph(sys.argv[1])
    n = len(comp)
    succs = [[] for _ in range(n)]
    npreds = [0] * n
    for a, b in zip(src, dst):
        succs[a].append(b)
        npreds[b] += 1
    spans = []
    for path in sys.argv[2:]:
        assignment = json.load(open(path))["assignment"]
        dev = [assignment["n%d" % i] for i in range(n)]
        spans.append(makespan(succs, npreds, comp, comm, dev))
    std = statistics.stdev(spans) if len(spans) > 1 else 0.0
    print(f"{sys.argv[1].split('/')[-1]}: mean {statistics.mean(spans):.1f} std {std:.1f} "
          f"min {min(spans):.1f} over {len(spans)} placements")


if __name__ == "__main__":
    main()
