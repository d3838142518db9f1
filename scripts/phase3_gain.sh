#!/usr/bin/env bash
# Does phase III (REINFORCE on measured makespans) improve the measured makespan over phase II?
# (issue 5, docs/learner-experiments.md "Phase III gain").
#
#   scripts/phase3_gain.sh [OUT_DIR]
#
# 1. generates a Llama block (`doppler workload llama-block`) and calibrates this host on it
# (`doppler calibrate --flops-only`; its "simulate this host with --cluster SPEC" line gives the
# cluster spec every later step uses), 2. for each seed trains phases I+II in the simulator
# (`--model wc`, the calibrated costs) -> p2-S.pt, then continues from p2-S.pt with phase III only
# (`--init`, 0 imitation and 0 simulator-RL episodes, REAL measured episodes of REAL_REPEAT runs each
# on the actor runtime) -> p3-S.pt, 3. places the block with every p2/p3 checkpoint (`doppler place
# --method doppler`) plus the PLACERS as references, 4. runs every placement on the `cpu` backend
# (`doppler run`, warm-up + REPEAT runs) in ROUNDS rounds over all placements interleaved, so that a
# change of the host's load hits every placement alike, 5. prints mean, std, min per placement, the
# ratio p3/p2 per seed (means and minima), and how many ops phase III moved to another device (raw,
# and the fewest over relabelings of the devices: the cpuN are identical, so a relabeled placement is
# the same placement; the block's shards are isomorphic too, so swapped shards also move ops without
# changing anything — compare the simulated makespans and ops/device columns).
# Environment (defaults in brackets): DOPPLER [build/release/cli/doppler], DEVICES [4], DIM [1024],
# HEADS [16], SEQ [512], SHARDS [4], CAL_ROUNDS [5], SEEDS ["1 2 3"], IL [200], RL [400], BATCH [8],
# REAL [500], REAL_REPEAT [3], REAL_BATCH [4] (phase III episodes per update), REAL_EVAL [1] (greedy
# measured after every REAL_EVAL updates, the best-measured parameters kept; 0: the last ones),
# REPEAT [5], ROUNDS [12], MODE [wc], STRAGGLER [none], PLACERS ["cp heft m-etf metis search"]
# (the non-learned placements measured next to the learned ones, default options), TRAIN_ARGS [""]
# (extra `doppler train` flags for both trainings, e.g. "--active-search 0.05 --self-imitation 2"),
# LEARNED [""] (learned baselines measured next to DOPPLER, e.g. "gdp placeto": `train --policy-kind
# KIND` per seed in the simulator with phase II's budget — IL + RL episodes, BATCH — and their own
# defaults, placed greedily as KIND-S; like p2 they never see the real runtime).
# WORKERS=W (e.g. 2) runs the real runtime on W `doppler worker` processes of DEVICES/W devices each,
# started here (cpu kernels): phase III measures there (`train --real-workers`) and so does every
# measurement (`run --workers`), while calibration, phases I+II and the placers see one process — the
# sim-to-real gap is then the cost of tensors crossing processes (serialized, over TCP). CAL_WORKERS=1
# closes that gap instead: calibration measures the links between the workers' processes (`calibrate
# --workers`), and phases I+II and the placers all see the deployment's cluster file.
# MEASURE_ONLY=1 measures an earlier run's placements in OUT again (same settings; no calibration,
# training or placing). Rounds alternate the order of the placements (odd rounds forward, even reversed).
# STRAGGLER=DEV:FACTOR (e.g. cpu0:3) slows that device of the real runtime — phase III's episodes and
# every measurement (`train --real-straggler`, `run --straggler`) — while calibration, phases I+II and
# the placers keep the simulator's equal devices: a known sim-to-real gap for phase III to close.
set -euo pipefail
D=${DOPPLER:-build/release/cli/doppler}
OUT=${1:-/tmp/doppler-phase3-gain}
N=${DEVICES:-4} DIM=${DIM:-1024} HEADS=${HEADS:-16} SEQ=${SEQ:-512} SHARDS=${SHARDS:-4}
SEEDS=${SEEDS:-1 2 3} IL=${IL:-200} RL=${RL:-400} BATCH=${BATCH:-8} REAL=${REAL:-500}
REAL_REPEAT=${REAL_REPEAT:-3} REAL_BATCH=${REAL_BATCH:-4} REAL_EVAL=${REAL_EVAL:-1} PLACERS=${PLACERS:-cp heft m-etf metis search} REPEAT=${REPEAT:-5} ROUNDS=${ROUNDS:-12} MODE=${MODE:-wc}
LEARNED=${LEARNED:-}
SLOW_TRAIN=() SLOW_RUN=()
if [[ -n ${STRAGGLER:-} ]]; then SLOW_TRAIN=(--real-straggler "$STRAGGLER"); SLOW_RUN=(--straggler "$STRAGGLER"); fi
mkdir -p "$OUT/placements" "$OUT/train"
source "$(dirname "$0")/lib/calibrated_block.sh"
DOPPLER=$D
source "$(dirname "$0")/lib/workers.sh"
ON_TRAIN=() ON_RUN=()  # WORKERS: where the real runtime's devices live
if ((${WORKERS:-0} > 0)); then
  ((N % WORKERS == 0)) || { echo "phase3_gain.sh: DEVICES=$N is not a multiple of WORKERS=$WORKERS" >&2; exit 2; }
  worker_pids=() at=()
  trap 'kill "${worker_pids[@]}" 2>/dev/null || true' EXIT
  for ((w = 0; w < WORKERS; ++w)); do
    start_worker "$OUT/worker-$w.log" --devices "cpu:$((N / WORKERS))"
    worker_pids+=("$worker_pid")
    at+=("$worker_at")
  done
  list=$(IFS=,; echo "${at[*]}")
  ON_TRAIN=(--real-workers "$list") ON_RUN=(--workers "$list")
  [[ -n ${CAL_WORKERS:-} ]] && CAL_WORKERS=$list
  echo "== the real runtime on $WORKERS workers: $list"
fi

if [[ -n ${MEASURE_ONLY:-} ]]; then  # an earlier run's OUT: its block, calibration and placements
  G=$OUT/lb.json
  calibrated_spec
  [[ -f $G && -n $SPEC ]] || { echo "phase3_gain.sh: MEASURE_ONLY needs an earlier run's $OUT" >&2; exit 2; }
else
calibrated_block
fi
[[ -n ${MEASURE_ONLY:-} ]] && echo "== re-measuring the placements in $OUT (the training settings below are not used)"
echo "== seeds [$SEEDS], phase I $IL + phase II $RL episodes (batch $BATCH), phase III $REAL episodes x $REAL_REPEAT runs (batch $REAL_BATCH, greedy measured every $REAL_EVAL updates); $ROUNDS rounds x $REPEAT runs; straggler ${STRAGGLER:-none}"
read -r -a EXTRA <<< "${TRAIN_ARGS:-}"
T0=("$D" train --graph "$G" --cluster "$SPEC" --costs "$OUT/cost.json" --model wc --batch "$BATCH")
T=("${T0[@]}" "${EXTRA[@]}")  # DOPPLER's trainings; the LEARNED baselines get T0 (their own defaults)

P=()
for m in $PLACERS; do
  [[ -n ${MEASURE_ONLY:-} ]] && { P+=("$m"); continue; }
  "$D" place --graph "$G" --cluster "$SPEC" --costs "$OUT/cost.json" --method "$m" -o "$OUT/placements/$m.json" > /dev/null
  P+=("$m")
done
# place_as NAME: the greedy placement of train/NAME.pt into placements/NAME.json, measured below
place_as() {
  "$D" place --graph "$G" --cluster "$SPEC" --costs "$OUT/cost.json" --method doppler \
      --policy "$OUT/train/$1.pt" -o "$OUT/placements/$1.json" > /dev/null
  P+=("$1")
}
for s in $SEEDS; do
  if [[ -n ${MEASURE_ONLY:-} ]]; then
    P+=("p2-$s" "p3-$s")
    for k in $LEARNED; do P+=("$k-$s"); done
    continue
  fi
  echo "== seed $s: phases I+II ($(load))"
  train_as "p2-$s" "$s" "${T[@]}" --il-episodes "$IL" --rl-episodes "$RL"
  echo "== seed $s: phase III from p2-$s.pt ($(load))"
  train_as "p3-$s" "$s" "${T[@]}" --init "$OUT/train/p2-$s.pt" --il-episodes 0 --rl-episodes 0 --real-episodes "$REAL" \
      --real-repeat "$REAL_REPEAT" --real-batch "$REAL_BATCH" --real-eval-every "$REAL_EVAL" "${SLOW_TRAIN[@]}" \
      "${ON_TRAIN[@]}"
  place_as "p2-$s"
  place_as "p3-$s"
  for k in $LEARNED; do
    echo "== seed $s: $k-like, phases I+II in the simulator ($(load))"
    train_as "$k-$s" "$s" "${T0[@]}" --policy-kind "$k" --il-episodes "$IL" --rl-episodes "$RL"
    place_as "$k-$s"
  done
done

echo "== measuring ${#P[@]} placements ($(load))"
: > "$OUT/rows.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  # odd rounds in order, even rounds reversed: no placement always runs right after another (p3 right
  # after its p2 would meet the caches and the workers that run left warm)
  order=("${P[@]}")
  if ((round % 2 == 0)); then order=(); for ((k = ${#P[@]} - 1; k >= 0; --k)); do order+=("${P[k]}"); done; fi
  for p in "${order[@]}"; do
    "$D" run --graph "$G" --cluster "$SPEC" --placement "$OUT/placements/$p.json" --mode "$MODE" \
        --backend cpu --costs "$OUT/cost.json" --warmup 1 --repeat "$REPEAT" "${SLOW_RUN[@]}" "${ON_RUN[@]}" --json |
      jq -c --arg p "$p" --argjson round "$round" \
        '{placement: $p, round: $round, runs: .makespans_s, sim: .simulated_s}' >> "$OUT/rows.jsonl"
  done
  echo "   round $round done ($(load))"
done
echo "== done $(load)"

PLACERS="$PLACERS" python3 - "$OUT" "$SEEDS" "${P[@]}" <<'EOF'
import itertools, json, math, os, sys
out, seeds, order = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
rows = {}
for l in open(f"{out}/rows.jsonl"):
    r = json.loads(l)
    row = rows.setdefault(r["placement"], {"runs": [], "round_means": [], "sim": r["sim"]})
    row["runs"] += r["runs"]; row["round_means"].append(sum(r["runs"]) / len(r["runs"]))
def stats(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0, min(xs)
def assign(p): return json.load(open(f"{out}/placements/{p}.json"))["assignment"]
print(f"\n{'placement':<10} {'runs':>4} {'mean ms':>8} {'std ms':>7} {'min ms':>7} {'sim ms':>7}  ops/device")
for p in order:
    r = rows[p]; m, s, lo = stats(r["runs"]); a = assign(p)
    per = {}
    for d in a.values(): per[d] = per.get(d, 0) + 1
    print(f"{p:<10} {len(r['runs']):>4} {m*1e3:>8.2f} {s*1e3:>7.2f} {lo*1e3:>7.2f} {r['sim']*1e3:>7.2f}  "
          + " ".join(f"{d}={per[d]}" for d in sorted(per)))
print(f"\n{'seed':<5} {'moved':>5} {'mod relabel':>11} {'p3/p2 mean':>10} {'p3/p2 min':>9} {'rounds p3<p2':>12} {'paired p3-p2 ms':>16}  phase III (train's own report)")
for s in seeds:
    a2, a3 = assign(f"p2-{s}"), assign(f"p3-{s}")
    moved = sum(a2[o] != a3[o] for o in a2)
    devs = sorted(set(a2.values()) | set(a3.values()))
    relabel = min(sum(dict(zip(devs, q))[a2[o]] != a3[o] for o in a2) for q in itertools.permutations(devs))
    r2, r3 = rows[f"p2-{s}"], rows[f"p3-{s}"]
    m2, _, lo2 = stats(r2["runs"]); m3, _, lo3 = stats(r3["runs"])
    wins = sum(b < a for a, b in zip(r2["round_means"], r3["round_means"]))
    d = [b - a for a, b in zip(r2["round_means"], r3["round_means"])]  # per round: paired difference
    dm, dsd, _ = stats(d); se = dsd / math.sqrt(len(d))
    rep = [l.strip() for l in open(f"{out}/train/p3-{s}.txt") if l.startswith("phase III (")]
    print(f"{s:<5} {moved:>5} {relabel:>11} {m3/m2:>10.3f} {lo3/lo2:>9.3f} {wins:>5}/{len(r2['round_means']):<6} {dm*1e3:>+7.2f} ± {se*1e3:<6.2f}  "
          + (rep[0].split(": ", 1)[-1] if rep else "?"))
# One row per method: a placer's measured mean, or the mean over seeds of a learned kind's
# per-seed means (p2, p3, each LEARNED kind), against cp and the fastest placer as measured here.
groups = {}
for p in order:
    groups.setdefault(p.rsplit("-", 1)[0] if p.rsplit("-", 1)[-1] in seeds else p, []).append(stats(rows[p]["runs"])[0])
placers = os.environ.get("PLACERS", "").split()
fastest = min((g for g in groups if g in placers), key=lambda g: groups[g][0], default=None)
print(f"\n{'method':<10} {'seeds':>5} {'mean ms':>8} {'min ms':>7} {'/ cp':>6} {'/ ' + (fastest or '-'):>9}")
cp = groups.get("cp", [float("nan")])[0]
fa = groups[fastest][0] if fastest else float("nan")
for g, ms in groups.items():
    m = sum(ms) / len(ms)
    print(f"{g:<10} {len(ms):>5} {m*1e3:>8.2f} {min(ms)*1e3:>7.2f} {m/cp:>6.3f} {m/fa:>9.3f}")
# Noise of phase III's reward: the spread of the measured episode costs vs the spread between placements.
for s in seeds:
    c = [float(l.split(",")[2]) for l in open(f"{out}/train/p3-{s}.csv") if ",real," in l]
    if len(c) > 1:
        m, sd, lo = stats(c)
        print(f"seed {s}: phase III episodes: {len(c)} measured costs, mean {m*1e3:.2f} ms, std {sd*1e3:.2f} ms, min {lo*1e3:.2f} ms")
EOF
