#!/usr/bin/env bash
# Phase III on several graphs with one policy (issue 5, docs/learner-experiments.md "Phase III on two graphs"):
# does one phase III run over two graphs improve the measured makespan of both over phase II?
#
#   scripts/phase3_multi.sh [OUT_DIR]
#
# 1. generates two Llama blocks (A: dim DIM_A, B: dim DIM_B; heads, seq and shards shared) and
# calibrates this host on A (`doppler calibrate --flops-only`; its cluster spec is used for both),
# 2. per seed trains phases I+II on both graphs at once (`train --graph A B`, simulator, wc model)
# -> p2-S.pt, then phase III only from it on both graphs (`--init`, REAL measured episodes of
# REAL_REPEAT runs, batches of REAL_BATCH taking turns) -> p3-S.pt, 3. places both graphs with cp and
# every checkpoint, 4. runs every placement of both graphs on the cpu backend in ROUNDS interleaved
# rounds (warm-up + REPEAT runs), 5. prints per graph and seed the mean, the ratio p3/p2 and the
# paired per-round difference with its standard error.
# Environment (defaults): DOPPLER [build/release/cli/doppler], DEVICES [4], DIM_A [1024], DIM_B [768],
# HEADS [16], SEQ [512], SHARDS [4], SEEDS ["1 2"], IL [200], RL [400], BATCH [8], REAL [400],
# REAL_REPEAT [3], REAL_BATCH [4], REPEAT [5], ROUNDS [10], STRAGGLER [cpu0:3] (slows that device of
# the real runtime only — phase III and the measurements —, as in scripts/phase3_gain.sh; "" for none).
set -euo pipefail
D=${DOPPLER:-build/release/cli/doppler}
OUT=${1:-/tmp/doppler-phase3-multi}
N=${DEVICES:-4} HEADS=${HEADS:-16} SEQ=${SEQ:-512} SHARDS=${SHARDS:-4}
SEEDS=${SEEDS:-1 2} IL=${IL:-200} RL=${RL:-400} BATCH=${BATCH:-8} REAL=${REAL:-400}
REAL_REPEAT=${REAL_REPEAT:-3} REAL_BATCH=${REAL_BATCH:-4} REPEAT=${REPEAT:-5} ROUNDS=${ROUNDS:-10}
STRAGGLER=${STRAGGLER-cpu0:3}
SLOW_TRAIN=() SLOW_RUN=()
if [[ -n $STRAGGLER ]]; then SLOW_TRAIN=(--real-straggler "$STRAGGLER"); SLOW_RUN=(--straggler "$STRAGGLER"); fi
mkdir -p "$OUT/placements" "$OUT/train"
load() { echo "$(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"; }
echo "== $(load), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
GRAPHS=(A B)
"$D" workload llama-block --dim "${DIM_A:-1024}" --heads "$HEADS" --seq "$SEQ" --shards "$SHARDS" -q -o "$OUT/A.json"
"$D" workload llama-block --dim "${DIM_B:-768}" --heads "$HEADS" --seq "$SEQ" --shards "$SHARDS" -q -o "$OUT/B.json"
"$D" calibrate --cluster "cpu:$N" --graph "$OUT/A.json" --rounds 5 --flops-only -o "$OUT/cost.json" | tee "$OUT/calibrate.txt"
SPEC=$(sed -n 's/^simulate this host with --cluster \([^ ]*\) .*/\1/p' "$OUT/calibrate.txt")
[[ -n $SPEC ]] || { echo "no cluster spec in calibrate's output" >&2; exit 1; }
T=("$D" train --graph "$OUT/A.json" "$OUT/B.json" --cluster "$SPEC" --costs "$OUT/cost.json" --model wc --batch "$BATCH")
P=(cp)
for g in "${GRAPHS[@]}"; do
  "$D" place --graph "$OUT/$g.json" --cluster "$SPEC" --costs "$OUT/cost.json" --method cp -o "$OUT/placements/$g-cp.json" >/dev/null
done
for s in $SEEDS; do
  echo "== seed $s: phases I+II on both graphs ($(load))"
  "${T[@]}" --il-episodes "$IL" --rl-episodes "$RL" --seed "$s" -o "$OUT/train/p2-$s.pt" 2>&1 |
    grep -v '^\(il\|rl\|real\) *\[' | tee "$OUT/train/p2-$s.txt"
  echo "== seed $s: phase III on both graphs from p2-$s.pt ($(load))"
  "${T[@]}" --init "$OUT/train/p2-$s.pt" --il-episodes 0 --rl-episodes 0 --real-episodes "$REAL" \
    --real-repeat "$REAL_REPEAT" --real-batch "$REAL_BATCH" "${SLOW_TRAIN[@]}" --seed "$s" \
    --csv "$OUT/train/p3-$s.csv" -o "$OUT/train/p3-$s.pt" 2>&1 | grep -v '^\(il\|rl\|real\) *\[' | tee "$OUT/train/p3-$s.txt"
  for ph in p2 p3; do
    for g in "${GRAPHS[@]}"; do
      "$D" place --graph "$OUT/$g.json" --cluster "$SPEC" --costs "$OUT/cost.json" --method doppler \
        --policy "$OUT/train/$ph-$s.pt" -o "$OUT/placements/$g-$ph-$s.json" >/dev/null
    done
    P+=("$ph-$s")
  done
done

echo "== measuring ${#P[@]} placements of each graph ($(load))"
: >"$OUT/rows.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for g in "${GRAPHS[@]}"; do
    for p in "${P[@]}"; do
      "$D" run --graph "$OUT/$g.json" --cluster "$SPEC" --placement "$OUT/placements/$g-$p.json" --backend cpu \
        --costs "$OUT/cost.json" --warmup 1 --repeat "$REPEAT" "${SLOW_RUN[@]}" --json |
        jq -c --arg g "$g" --arg p "$p" --argjson round "$round" \
          '{graph: $g, placement: $p, round: $round, runs: .makespans_s, sim: .simulated_s}' >>"$OUT/rows.jsonl"
    done
  done
  echo "   round $round done ($(load))"
done
echo "== done $(load)"

python3 - "$OUT" "$SEEDS" "${P[@]}" <<'EOF'
import json, math, sys
out, seeds, order = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
rows = {}
for l in open(f"{out}/rows.jsonl"):
    r = json.loads(l)
    row = rows.setdefault((r["graph"], r["placement"]), {"runs": [], "round_means": [], "sim": r["sim"]})
    row["runs"] += r["runs"]; row["round_means"].append(sum(r["runs"]) / len(r["runs"]))
def stats(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
def per_device(g, p):
    a = json.load(open(f"{out}/placements/{g}-{p}.json"))["assignment"]
    n = {}
    for d in a.values(): n[d] = n.get(d, 0) + 1
    return " / ".join(str(n[d]) for d in sorted(n))
print("\n| graph | placement | mean ms | std ms | simulated ms | ops/device |\n|---|---|---:|---:|---:|---|")
for g in ("A", "B"):
    for p in order:
        r = rows[(g, p)]; m, s = stats(r["runs"])
        print(f"| {g} | {p} | {m*1e3:.2f} | {s*1e3:.2f} | {r['sim']*1e3:.2f} | {per_device(g, p)} |")
print("\n| graph | seed | p3/p2 means | rounds p3 < p2 | paired p3 − p2 (± s.e.) ms | p3/cp means |\n|---|---|---:|---:|---:|---:|")
for g in ("A", "B"):
    for s in seeds:
        r2, r3, rc = rows[(g, f"p2-{s}")], rows[(g, f"p3-{s}")], rows[(g, "cp")]
        m2, m3, mc = stats(r2["runs"])[0], stats(r3["runs"])[0], stats(rc["runs"])[0]
        d = [b - a for a, b in zip(r2["round_means"], r3["round_means"])]
        dm, dsd = stats(d)
        wins = sum(x < 0 for x in d)
        print(f"| {g} | {s} | {m3/m2:.3f} | {wins}/{len(d)} | {dm*1e3:+.2f} ± {dsd/math.sqrt(len(d))*1e3:.2f} | {m3/mc:.3f} |")
for s in seeds:
    rep = [l.strip() for l in open(f"{out}/train/p3-{s}.txt") if l.startswith("phase III") or l.startswith("graph ")]
    print(f"\nseed {s}, train's own report:\n" + "\n".join(rep))
EOF
