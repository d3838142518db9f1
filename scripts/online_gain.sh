#!/usr/bin/env bash
# Does learning during deployment (`doppler run --learner doppler --online`) make the measured
# makespan better than deploying the same policy greedily? (issue 5, "learning during deployment";
# docs/learner-experiments.md "Learning during deployment, measured").
#
#   scripts/online_gain.sh [OUT_DIR]
#
# 1. generates a Llama block (`doppler workload llama-block`), calibrates this host on it (`doppler
# calibrate --flops-only`: the cluster spec and cost table every later step uses), 2. per seed trains
# phases I+II in the simulator (`--model wc`) -> p2-S.pt, 3. per seed and round deploys p2-S.pt twice
# with `doppler run --learner doppler --online --repeat RUNS` in one process each, in alternating
# order: arm `online` may explore within --explore EXPLORE (its observations update the policy, and its
# greedy answer may become the best measured placement), arm `greedy` has --explore 0 (the same
# process, learner and measurements, but every run is the policy's greedy placement: the control).
# 4. prints per arm the mean measured makespan of the greedy runs in the first and last third of the
# runs, of every run (what the user paid, explorations included), how many greedy runs of the last
# third deployed the best measured placement instead of the policy's own (`doppler:best-measured`),
# and per seed the ratio online/greedy over the last third. SUMMARY_ONLY=1 prints the summary of an
# OUT_DIR measured before, without running anything.
# Environment (defaults in brackets): DOPPLER [build/release/cli/doppler], DEVICES [4], DIM [1024],
# HEADS [16], SEQ [512], SHARDS [4], SEEDS ["1 2 3"], IL [200], RL [400], BATCH [8], RUNS [100],
# ROUNDS [2], EXPLORE [0.2], STRAGGLER [cpu0:3] (DEV:FACTOR slows that device of the real runtime; the
# simulator and the training do not know: a sim-to-real gap for deployment to find; "none": no straggler).
set -euo pipefail
D=${DOPPLER:-build/release/cli/doppler}
OUT=${1:-/tmp/doppler-online-gain}
N=${DEVICES:-4} DIM=${DIM:-1024} HEADS=${HEADS:-16} SEQ=${SEQ:-512} SHARDS=${SHARDS:-4}
SEEDS=${SEEDS:-1 2 3} IL=${IL:-200} RL=${RL:-400} BATCH=${BATCH:-8} RUNS=${RUNS:-100} ROUNDS=${ROUNDS:-2}
EXPLORE=${EXPLORE:-0.2} STRAGGLER=${STRAGGLER:-cpu0:3}
SLOW=()
[[ $STRAGGLER == none ]] || SLOW=(--straggler "$STRAGGLER")
mkdir -p "$OUT/train" "$OUT/runs"
source "$(dirname "$0")/lib/calibrated_block.sh"
# summary: the table of the runs in $OUT/runs
summary() {
python3 - "$OUT" "$SEEDS" "$ROUNDS" "$RUNS" <<'EOF'
import json, math, sys
out, seeds, rounds, RUNS = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4])
def mean(xs): return sum(xs) / len(xs) if xs else float("nan")
def runs(arm, s, r): return json.load(open(f"{out}/runs/{arm}-{s}-{r}.json"))["runs"]
def third(rs, last):
    k = max(1, len(rs) // 3)
    part = rs[-k:] if last else rs[:k]
    return [x["makespan_s"] for x in part if not x["explored"]]
print(f"\n{'arm':<7} {'seed':<5} {'first third, greedy ms':>22} {'last third, greedy ms':>21} {'all runs ms':>11} {'explored':>8} {'best-measured':>13}")
last = {}
for arm in ("greedy", "online"):
    for s in seeds:
        rs = [runs(arm, s, r) for r in range(1, rounds + 1)]
        f = [x for r in rs for x in third(r, False)]
        l = [x for r in rs for x in third(r, True)]
        a = [x["makespan_s"] for r in rs for x in r]
        last[arm, s] = mean(l)
        # greedy runs of the last third that deployed the best measured placement, not the policy's own
        k = max(1, RUNS // 3)
        g = [x for r in rs for x in r[-k:] if not x["explored"]]
        bm = sum(x["method"] == "doppler:best-measured" for x in g)
        print(f"{arm:<7} {s:<5} {mean(f)*1e3:>22.2f} {mean(l)*1e3:>21.2f} {mean(a)*1e3:>11.2f} "
              f"{sum(x['explored'] for r in rs for x in r):>8} {bm:>6}/{len(g):<6}")
# Paired: each round runs both arms of a seed back to back, so a change of the host's load hits both.
pairs = [(mean(third(runs("online", s, r), True)), mean(third(runs("greedy", s, r), True)))
         for s in seeds for r in range(1, rounds + 1)]
print(f"\nrounds (seed x round, both arms back to back) where online's last third beat greedy's: "
      f"{sum(o < g for o, g in pairs)} of {len(pairs)}; paired ratios "
      + " ".join(f"{o / g:.2f}" for o, g in pairs))
ratios = [last["online", s] / last["greedy", s] for s in seeds]
print("\nonline / greedy, greedy runs of the last third: " + ", ".join(f"seed {s} {q:.3f}" for s, q in zip(seeds, ratios))
      + f"; geometric mean {math.exp(mean([math.log(q) for q in ratios])):.3f}")
EOF
}
[[ -z ${SUMMARY_ONLY:-} ]] || { summary; exit 0; }
calibrated_block
echo "== seeds [$SEEDS], phase I $IL + phase II $RL episodes (batch $BATCH); $ROUNDS rounds x 2 arms x $RUNS runs; explore $EXPLORE; straggler $STRAGGLER"

for s in $SEEDS; do
  echo "== seed $s: phases I+II ($(load))"
  train_as "p2-$s" "$s" "$D" train --graph "$G" --cluster "$SPEC" --costs "$OUT/cost.json" --model wc \
      --batch "$BATCH" --il-episodes "$IL" --rl-episodes "$RL" > /dev/null
done

# deploy ARM SEED ROUND: one `doppler run --online` process into runs/ARM-SEED-ROUND.json
deploy() {
  local explore=$EXPLORE
  [[ $1 == greedy ]] && explore=0
  "$D" run --graph "$G" --cluster "$SPEC" --costs "$OUT/cost.json" --backend cpu --warmup 1 "${SLOW[@]}" \
      --learner doppler --policy "$OUT/train/p2-$2.pt" --online --explore "$explore" --repeat "$RUNS" \
      --seed "$3" --json > "$OUT/runs/$1-$2-$3.json"
}
for round in $(seq 1 "$ROUNDS"); do
  for s in $SEEDS; do
    if (( (round + s) % 2 )); then deploy online "$s" "$round"; deploy greedy "$s" "$round"
    else deploy greedy "$s" "$round"; deploy online "$s" "$round"; fi
  done
  echo "   round $round done ($(load))"
done
echo "== done $(load)"

summary
