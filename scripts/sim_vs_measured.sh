#!/usr/bin/env bash
# Simulated vs measured makespans of a Llama block over many placements (issue 4, docs/results.md).
#
#   scripts/sim_vs_measured.sh [OUT_DIR]
#
# 1. generates the block (`doppler workload llama-block`), 2. calibrates this host twice on that graph
# (the full table, and `--flops-only`: the efficiency-only table of before the memory term), 3. places
# it with 6 methods, SEEDS random seeds and SKEW placements (the cp placement with each op moved to
# cpu0 with probability f, two seeds per f: a controlled spread from cp towards single; default
# cost table, so every cost table judges the same placements), 4. runs each placement on the real `cpu` backend (`doppler run`, warm-up + REPEAT
# runs, ROUNDS rounds over all placements interleaved, so that a change of the host's load hits every
# placement alike), 5. simulates each placement with several cost tables and prints Spearman's ρ,
# Pearson's r and the mean measured / simulated ratio for each; "measured" is the mean over all runs
# or the minimum. Environment (defaults in brackets): DOPPLER [build/release/cli/doppler], DEVICES [4],
# DIM [1024], HEADS [16], SEQ [512], SHARDS [4], REPEAT [3], ROUNDS [10], CAL_ROUNDS [5], SEEDS [8], SKEW ["0.2 0.4 0.6 0.8"], MODE [wc],
# BACKEND [cpu].
set -euo pipefail
D=${DOPPLER:-build/release/cli/doppler}
OUT=${1:-/tmp/doppler-sim-vs-measured}
N=${DEVICES:-4} DIM=${DIM:-1024} HEADS=${HEADS:-16} SEQ=${SEQ:-512} SHARDS=${SHARDS:-4}
REPEAT=${REPEAT:-3} ROUNDS=${ROUNDS:-10} SEEDS=${SEEDS:-8} MODE=${MODE:-wc} BACKEND=${BACKEND:-cpu}
mkdir -p "$OUT/placements"
G=$OUT/lb.json

echo "== $(date -u '+%F %T UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$D" workload llama-block --dim "$DIM" --heads "$HEADS" --seq "$SEQ" --shards "$SHARDS" -q -o "$G"
"$D" calibrate --cluster "cpu:$N" --graph "$G" --rounds "${CAL_ROUNDS:-5}" -o "$OUT/cost.json" | tee "$OUT/calibrate.txt"
"$D" calibrate --cluster "cpu:$N" --graph "$G" --rounds "${CAL_ROUNDS:-5}" --flops-only -o "$OUT/cost-flops.json" > "$OUT/calibrate-flops.txt"
spec() { sed -n 's/^simulate this host with --cluster \([^ ]*\) .*/\1/p' "$1"; }
SPEC=$(spec "$OUT/calibrate.txt") SPEC_FLOPS=$(spec "$OUT/calibrate-flops.txt")
# Ablations of the full table: which term buys what.
jq '.host_cores = 0' "$OUT/cost.json" > "$OUT/cost-nocores.json"
jq '.host_cores = 0 | .overhead = 0' "$OUT/cost.json" > "$OUT/cost-memory.json"
# Sensitivity to the core count (calibrate's value moves with the other users' load on a shared host).
jq '.host_cores = 1' "$OUT/cost.json" > "$OUT/cost-cores1.json"
jq '.host_cores = 2' "$OUT/cost.json" > "$OUT/cost-cores2.json"

P=()
for m in single round-robin cp heft m-etf metis; do
  "$D" place --graph "$G" --cluster "$SPEC" --method "$m" -o "$OUT/placements/$m.json" > /dev/null && P+=("$m")
done
for s in $(seq 1 "$SEEDS"); do
  "$D" place --graph "$G" --cluster "$SPEC" --method random --seed "$s" -o "$OUT/placements/random-$s.json" > /dev/null
  P+=("random-$s")
done
for f in ${SKEW-0.2 0.4 0.6 0.8}; do
  for s in 1 2; do
    python3 - "$OUT/placements/cp.json" "$f" "$s" > "$OUT/placements/skew-$f-$s.json" <<'EOF'
import json, random, sys
p = json.load(open(sys.argv[1])); f = float(sys.argv[2]); rng = random.Random(int(sys.argv[3]))
for op in sorted(p["assignment"]):
    if rng.random() < f: p["assignment"][op] = "cpu0"
p["method"] = f"skew {f} seed {sys.argv[3]}"
print(json.dumps(p, indent=1))
EOF
    P+=("skew-$f-$s")
  done
done

: > "$OUT/rows.jsonl"
for round in $(seq 1 "$ROUNDS"); do
for p in "${P[@]}"; do
  pf=$OUT/placements/$p.json
  run=$("$D" run --graph "$G" --cluster "$SPEC" --placement "$pf" --mode "$MODE" --backend "$BACKEND" \
        --costs "$OUT/cost.json" --warmup 1 --repeat "$REPEAT" --json)
  sim() { "$D" simulate --graph "$G" --cluster "$1" --placement "$pf" --mode "$MODE" --costs "$2" --json |
          jq '.makespan_s // .makespan'; }
  row=$(jq -c --arg p "$p" \
      --argjson flops "$(sim "$SPEC_FLOPS" "$OUT/cost-flops.json")" \
      --argjson memory "$(sim "$SPEC" "$OUT/cost-memory.json")" \
      --argjson nocores "$(sim "$SPEC" "$OUT/cost-nocores.json")" \
      --argjson full "$(sim "$SPEC" "$OUT/cost.json")" \
      --argjson cores1 "$(sim "$SPEC" "$OUT/cost-cores1.json")" \
      --argjson cores2 "$(sim "$SPEC" "$OUT/cost-cores2.json")" \
      --argjson round "$round" \
      '{placement: $p, round: $round, runs: .makespans_s,
        sim: {"flops-only (before)": $flops, "+ memory term": $memory, "+ overhead": $nocores,
              "+ host_cores (full)": $full, "full, host_cores 1": $cores1, "full, host_cores 2": $cores2}}' <<< "$run")
  echo "$row" | tee -a "$OUT/rows.jsonl"
done
done
echo "== done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$OUT/rows.jsonl" <<'EOF'
import json, math, sys
raw = [json.loads(l) for l in open(sys.argv[1])]
rows = {}
for r in raw:  # one row per placement: every measured run of every round
    row = rows.setdefault(r["placement"], {"placement": r["placement"], "runs": [], "sim": r["sim"]})
    row["runs"] += r["runs"]
rows = list(rows.values())
for r in rows:
    r["mean"] = sum(r["runs"]) / len(r["runs"]); r["min"] = min(r["runs"])
def ranks(xs):
    o = sorted(range(len(xs)), key=lambda i: xs[i]); r = [0.0] * len(xs); i = 0
    while i < len(o):
        j = i
        while j + 1 < len(o) and xs[o[j + 1]] == xs[o[i]]: j += 1
        for k in range(i, j + 1): r[o[k]] = (i + j) / 2
        i = j + 1
    return r
def pearson(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    sa = math.sqrt(sum((x - ma) ** 2 for x in a)); sb = math.sqrt(sum((y - mb) ** 2 for y in b))
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sa * sb) if sa > 0 and sb > 0 else float("nan")
print(f"\n{len(rows)} placements, {len(rows[0]['runs'])} runs each; measured makespans {min(r['mean'] for r in rows)*1e3:.1f}.."
      f"{max(r['mean'] for r in rows)*1e3:.1f} ms (means)")
print(f"{'cost table':<22} {'measured':<8} {'spearman':>8} {'pearson':>8} {'meas/sim':>8}")
for table in rows[0]["sim"]:
    s = [r["sim"][table] for r in rows]
    for stat in ("mean", "min"):
        m = [r[stat] for r in rows]
        ratio = sum(x / y for x, y in zip(m, s)) / len(m)
        print(f"{table:<22} {stat:<8} {pearson(ranks(m), ranks(s)):>8.3f} {pearson(m, s):>8.3f} {ratio:>8.2f}")
EOF
