#!/usr/bin/env bash
# Issue 5 head ablations at the budget of docs/learner-experiments.md's "Ablation" section: dual (re-run as
# reference), sel-only, plc-only (100 imitation + 300 RL episodes) and dual without imitation
# (0 + 300, then 0 + 400), four 4-device paper graphs, seeds 0, 1, 2, run one after another.
# Usage: scripts/ablation_heads.sh OUTDIR (DOPPLER=path/to/doppler, default build/release/cli/doppler;
# SEEDS="3 4 ..." for other seeds; CONFIGS="name:args;name:args" for other configs, e.g.
# CONFIGS="dual:--il-episodes 100 --rl-episodes 300;ppo:--algorithm ppo --il-episodes 100 --rl-episodes 300").
# Logs go to OUTDIR/<config>-<graph>-s<seed>.log.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
bin=${DOPPLER:-build/release/cli/doppler}
mkdir -p "$out"
configs=("dual:--il-episodes 100 --rl-episodes 300"
         "sel-only:--ablation sel-only --il-episodes 100 --rl-episodes 300"
         "plc-only:--ablation plc-only --il-episodes 100 --rl-episodes 300"
         "noil300:--il-episodes 0 --rl-episodes 300"
         "noil400:--il-episodes 0 --rl-episodes 400")
if [[ -n ${CONFIGS:-} ]]; then IFS=';' read -r -a configs <<<"$CONFIGS"; fi
for cfg in "${configs[@]}"; do
  name=${cfg%%:*}; args=${cfg#*:}
  for s in ${SEEDS:-0 1 2}; do
    for g in chain_mm_112nodes ffnn_192nodes transformer_block_215nodes full_transformer_layer_261nodes; do
      log=$out/$name-$g-s$s.log
      [[ -s $log ]] && continue
      # shellcheck disable=SC2086
      "$bin" train --graph workloads/doppler-paper/$g.txt --cluster doppler-paper:4 --model simple \
        --batch 8 --seed $s $args -o "$out/$name-$g-s$s.pt" --csv "$out/$name-$g-s$s.csv" >"$log.tmp" 2>&1
      mv "$log.tmp" "$log"
      echo "$name $g s$s: $(grep -o 'greedy [0-9.e+-]* s ([0-9.]*x cp[^)]*), best [0-9.e+-]* s ([0-9.]*x cp)' "$log")"
    done
  done
done
