#!/usr/bin/env bash
# Phase I's teacher compared (docs/learner-experiments.md, "Teachers compared"): trains DOPPLER with each teacher on each
# graph (imitation, then RL in the simulator) and prints, per graph and teacher, the teacher's own
# simulated makespan (mean over the seeds: seeded placers' teachers differ per seed), the agreement after phase I and the greedy makespan after phases I and II,
# means over the seeds, as a markdown table (stdout and OUTDIR/table.md).
#
# Usage: scripts/teacher_compare.sh OUTDIR
#   DOPPLER=path/to/doppler (default build/release/cli/doppler)   SEEDS="0 1 2"   IL=200 RL=2000
#   SETUPS="name|graph|cluster|model|teacher,teacher ..." (default below)   JOBS=1
# Logs: OUTDIR/<name>-<teacher>-s<seed>.log (kept: a rerun skips finished ones).
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
bin=${DOPPLER:-build/release/cli/doppler}
seeds=${SEEDS:-0 1 2}
il=${IL:-200}
rl=${RL:-2000}
jobs=${JOBS:-1}
mkdir -p "$out"
P=workloads/doppler-paper
"$bin" workload llama-block -q -o "$out/llama-block.json"
default_setups="ffnn|$P/ffnn_192nodes.txt|doppler-paper:4|simple|cp,metis
llama-block-paper|$P/transformer_block_215nodes.txt|doppler-paper:4|simple|cp,heft,metis,search
llama-block-p100x4|$out/llama-block.json|p100x4|wc|cp,single"
setups=${SETUPS:-$default_setups}
echo "$(date -u '+%F %T') UTC, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
  | tee "$out/machine.txt" >&2

while IFS='|' read -r name file cluster model teachers; do
  for t in ${teachers//,/ }; do
    for seed in $seeds; do
      log=$out/$name-$t-s$seed.log
      [[ -s $log ]] && continue
      ( "$bin" train --graph "$file" --cluster "$cluster" --model "$model" --teacher "$t" --teacher-budget 20000 \
          --il-episodes "$il" --rl-episodes "$rl" --batch 8 --seed "$seed" -o "$out/$name-$t-s$seed.pt" >"$log.tmp" 2>&1 &&
        mv "$log.tmp" "$log" && echo "$name $t s$seed: $(grep -o 'greedy [0-9.e+-]* s ([0-9.]*x cp' "$log")" >&2 ) &
      while (( $(jobs -rp | wc -l) >= jobs )); do wait -n; done
    done
  done
done <<<"$setups"
wait

python3 - "$out" "$seeds" <<'PY' | tee "$out/table.md"
import os, re, statistics, sys
out, seeds = sys.argv[1], sys.argv[2].split()
print("| graph | teacher | teacher's makespan | agreement after phase I (SEL / PLC) | greedy after I + II | / cp | per seed |")
print("|---|---|---|---|---|---|---|")
logs = sorted(f for f in os.listdir(out) if f.endswith(".log"))
groups = {}
for f in logs:
    m = re.match(r"(.+)-([^-]+)-s(\d+)\.log$", f)
    if m and m.group(3) in seeds:
        groups.setdefault((m.group(1), m.group(2)), []).append(open(os.path.join(out, f)).read())
for (name, t), texts in groups.items():
    g, sel, plc, both, cp, tm = [], [], [], [], [], []
    for x in texts:
        g.append(float(re.search(r"greedy ([0-9.e+-]+) s \(", x).group(1)))
        cp.append(float(re.search(r"^cp ([0-9.e+-]+) s", x, re.M).group(1)))
        a = re.search(r"agreement after phase I ([0-9.]+)% \(SEL ([0-9.]+)%, PLC ([0-9.]+)%\)", x)
        both.append(float(a.group(1))); sel.append(float(a.group(2))); plc.append(float(a.group(3)))
        m = re.search(r"simulated ([0-9.e+-]+) s", x)
        if m: tm.append(float(m.group(1)))  # seeded placers: one teacher per training seed
    mean = statistics.mean(g)
    sd = statistics.stdev(g) if len(g) > 1 else 0
    print(f"| {name} | {t} | {'%.4g' % statistics.mean(tm) if tm else 'cp ' + '%.4g' % cp[0]} | {statistics.mean(both):.0f}% "
          f"({statistics.mean(sel):.0f}% / {statistics.mean(plc):.0f}%) | {mean:.4g} ± {sd:.2g} | {mean / cp[0]:.3f} | "
          + " / ".join("%.4g" % v for v in g) + " |")
PY
