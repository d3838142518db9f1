#!/usr/bin/env bash
# Restarts at a fixed budget: is one DOPPLER training of BUDGET phase-II episodes better than the
# best of K trainings of BUDGET/K episodes each (independent seeds, the best greedy placement kept)?
# For each K and each repetition m, trains K policies (seed 1000·K + 10·m + k) and keeps the best
# greedy makespan; prints a markdown row per K: mean ± std over the repetitions, and each one.
#
#   GRAPH=llama-block.json CLUSTER=p100x4 MODEL=wc KS="1 2 4 10" METAS="0 1 2 3 4" \
#     ARGS="--sibling-feature --temperature 1.5 --self-imitation 2 --self-imitation-gate --active-search 0.05" \
#     scripts/restarts.sh OUTDIR
#
# GRAPH defaults to the generated Llama block (`doppler workload llama-block`); BUDGET 20000 (the
# simulations search gets in the results tables); IL 200 imitation episodes per training;
# DOPPLER the binary (default build/release/cli/doppler). OUTDIR keeps checkpoints, log and summary.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/restarts.sh OUTDIR (see the header for the variables)}
D=${DOPPLER:-build/release/cli/doppler}
CLUSTER=${CLUSTER:-p100x4}
MODEL=${MODEL:-wc}
BUDGET=${BUDGET:-20000}
IL=${IL:-200}
KS=${KS:-1 2 4 10}
METAS=${METAS:-0 1 2 3 4}
ARGS=${ARGS:-}
mkdir -p "$OUT"
GRAPH=${GRAPH:-}
if [ -z "$GRAPH" ]; then
  GRAPH="$OUT/llama-block.json"
  "$D" workload llama-block -q -o "$GRAPH"
fi
: >"$OUT/summary"
for K in $KS; do
  E=$((BUDGET / K))
  row=()
  for m in $METAS; do
    best=
    for k in $(seq 0 $((K - 1))); do
      s=$((1000 * K + 10 * m + k))
      # shellcheck disable=SC2086  # ARGS is a list of flags
      g=$("$D" train --graph "$GRAPH" --cluster "$CLUSTER" --model "$MODEL" --il-episodes "$IL" --rl-episodes "$E" \
            --batch 8 --seed "$s" $ARGS -o "$OUT/k$K-m$m-$k.pt" 2>&1 |
          grep -o 'after training: greedy [0-9.e+-]*' | awk '{print $4}')
      [ -n "$g" ] || { echo "restarts: training K=$K m=$m k=$k (seed $s) printed no greedy makespan" >&2; exit 1; }
      echo "K=$K m=$m k=$k seed=$s episodes=$E greedy=$g" >>"$OUT/log"
      best=$(python3 -c 'import sys; print(min(float(x) for x in sys.argv[1:]))' $best "$g")
    done
    row+=("$best")
  done
  python3 - "$K" "$E" "${row[@]}" >>"$OUT/summary" <<'EOF'
import statistics, sys
k, e, xs = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3:]]
sd = statistics.pstdev(xs) if len(xs) > 1 else 0.0
print(f"| {k} × {e} | {statistics.mean(xs):.4g} ± {sd:.2g} | {' / '.join(f'{x:.4g}' for x in xs)} |")
EOF
  tail -1 "$OUT/summary"
done
echo "| K × episodes | best greedy, mean ± std | per repetition |"
echo "|---|---|---|"
cat "$OUT/summary"
