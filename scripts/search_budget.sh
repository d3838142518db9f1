#!/usr/bin/env bash
# How far `search` (simulated annealing, docs/placers.md) gets with more simulations: issue 5's goal
# is DOPPLER <= 0.90x the best placer, and on the Llama paper graphs the best placer is `search` at
# the results table's budget (20 000 simulations), so the bar moves with that budget. The graphs are
# scripts/results_graphs.sh's (the four Llama paper graphs, simple model; the generated Llama blocks
# on p100x4 and dgx1-v100, wc model) less ChainMM and FFNN, whose placers reach the lower bound.
#
# Usage: scripts/search_budget.sh [OUTDIR]
#   DOPPLER=path/to/doppler (default build/release/cli/doppler)
#   BUDGETS="20000 200000 2000000"   SEEDS="0 1 2"   GRAPHS="llama-block-paper ..." (a subset)
#   STARTS="graph:label=placement.json ..."  also refine these placements (e.g. DOPPLER's greedy ones,
#            `place --method doppler -o`) with `search --start` at every budget, e.g.
#            STARTS="llama-block-paper:doppler-s0=/tmp/b0.json llama-block-paper:doppler-s1=/tmp/b1.json"
# Prints a markdown table (mean, min, max over seeds, and mean / the mean of search from its own
# start at the first budget: the goal's bar is 0.90 of that at 20 000) to stdout and
# OUTDIR/search_budget.md; every placement goes to OUTDIR.
set -euo pipefail
out=${1:-/tmp/doppler-search-budget}
bin=${DOPPLER:-build/release/cli/doppler}
budgets=${BUDGETS:-20000 200000 2000000}
seeds=${SEEDS:-0 1 2}
mkdir -p "$out"
source "$(dirname "$0")/results_graphs.sh"
# by default every graph but ChainMM and FFNN, whose placers sit on the lower bound
wanted() { [[ -z ${GRAPHS:-} && $1 != chainmm && $1 != ffnn ]] || [[ " ${GRAPHS:-} " == *" $1 "* ]]; }
echo "$(date -u '+%F %T') UTC, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >&2

makespan() {  # graph cluster model placement -> seconds
  "$bin" simulate --graph "$1" --cluster "$2" --model "$3" --placement "$4" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan_s"])'
}

rows=()
for s in "${setups[@]}"; do
  IFS='|' read -r name file cluster model <<<"$s"
  wanted "$name" || continue
  starts=("heuristic=")
  for st in ${STARTS:-}; do [[ ${st%%:*} == "$name" ]] && starts+=("${st#*:}"); done
  base=""
  for st in "${starts[@]}"; do
    label=${st%%=*} start=${st#*=}
    for b in $budgets; do
      vals=()
      for seed in $seeds; do
        f=$out/$name-$label-b$b-s$seed.json
        if [[ ! -s $f ]]; then
          "$bin" place --graph "$file" --cluster "$cluster" --model "$model" --method search --budget "$b" --seed "$seed" \
            ${start:+--start "$start"} -o "$f.tmp" >/dev/null
          mv "$f.tmp" "$f"
        fi
        vals+=("$(makespan "$file" "$cluster" "$model" "$f")")
      done
      row=$(python3 - "$b" "$base" "${vals[@]}" <<'EOF'
import sys
b, base, v = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3:]]
m = sum(v) / len(v)
scale, u = next((s, u) for s, u in ((1, "s"), (1e3, "ms"), (1e6, "µs")) if m * s >= 1 or u == "µs")
print(f"{m * scale:.4g}|{min(v) * scale:.4g}|{max(v) * scale:.4g}|{m / float(base) if base else 1.0:.3f}|{m}|{u}")
EOF
)
      IFS='|' read -r mean lo hi ratio raw unit <<<"$row"
      [[ -z $base ]] && base=$raw
      [[ $label == heuristic ]] && start_label="best heuristic" || start_label="$label"
      rows+=("| $name | $model | $start_label | $b | $unit | $mean | $lo | $hi | $ratio |")
      echo "$name $label budget $b: mean $mean $unit (min $lo, max $hi)" >&2
    done
  done
done
{
  echo "| graph | model | start | budget | unit | mean | min | max | mean / search at the first budget |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$out/search_budget.md"
