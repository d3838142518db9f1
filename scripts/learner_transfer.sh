#!/usr/bin/env bash
# Issue 5's transfer experiments (docs/learner-experiments.md, "Transfer"), simple model, paper graphs:
#  A. train on FFNN (doppler-paper:4), then on the 4-device Llama block: zero-shot (the FFNN policy's
#     greedy placement), fine-tuned (`--init ffnn.pt`, FT_IL + FT_RL episodes) and from scratch with
#     the same budget;
#  B. train on the 4-device Llama block, place the 8-device Llama block on doppler-paper:8 zero-shot,
#     and fine-tuned there (FT_IL + FT_RL), against a policy trained on the 8-device graph from
#     scratch with the same fine-tuning budget and with the full one.
# Usage: scripts/learner_transfer.sh OUTDIR
#   DOPPLER (default build/release/cli/doppler), SEEDS ["0 1 2"], IL [200], RL [2000] (source
#   training), FT_IL [0], FT_RL [200] (fine-tuning and the equal-budget scratch runs).
# Prints one markdown table (means over the seeds; simulated seconds and the ratio to cp).
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
D=${DOPPLER:-build/release/cli/doppler}
seeds=${SEEDS:-0 1 2}
IL=${IL:-200} RL=${RL:-2000} FT_IL=${FT_IL:-0} FT_RL=${FT_RL:-200}
P=workloads/doppler-paper
FFNN=$P/ffnn_192nodes.txt B4=$P/transformer_block_215nodes.txt B8=$P/8gpu_transformer_block.txt
C4=doppler-paper:4 C8=doppler-paper:8
mkdir -p "$out"
echo "$(date -u '+%F %T') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >&2

train() {  # name graph cluster extra-args...
  local name=$1 g=$2 c=$3; shift 3
  [[ -s $out/$name.log ]] && return 0
  "$D" train --graph "$g" --cluster "$c" --model simple --batch 8 "$@" -o "$out/$name.pt" >"$out/$name.log.tmp" 2>&1
  mv "$out/$name.log.tmp" "$out/$name.log"
}
greedy() {  # policy graph cluster -> simulated makespan of the policy's greedy placement
  "$D" place --graph "$2" --cluster "$3" --model simple --method doppler --policy "$1" -o "$out/tmp.json" |
    sed -n 's/^makespan *\([0-9.e+-]*\) s.*/\1/p'
}
cp_of() { "$D" place --graph "$1" --cluster "$2" --model simple --method cp -o "$out/tmp.json" | sed -n 's/^makespan *\([0-9.e+-]*\) s.*/\1/p'; }

rows=$out/rows.tsv
: >"$rows"
for s in $seeds; do
  train "ffnn-s$s" "$FFNN" $C4 --il-episodes "$IL" --rl-episodes "$RL" --seed "$s"
  train "b4-s$s" "$B4" $C4 --il-episodes "$IL" --rl-episodes "$RL" --seed "$s"
  train "b4-from-ffnn-s$s" "$B4" $C4 --init "$out/ffnn-s$s.pt" --il-episodes "$FT_IL" --rl-episodes "$FT_RL" --seed "$s"
  train "b4-scratch-s$s" "$B4" $C4 --il-episodes "$FT_IL" --rl-episodes "$FT_RL" --seed "$s"
  train "b8-from-b4-s$s" "$B8" $C8 --init "$out/b4-s$s.pt" --il-episodes "$FT_IL" --rl-episodes "$FT_RL" --seed "$s"
  train "b8-scratch-s$s" "$B8" $C8 --il-episodes "$FT_IL" --rl-episodes "$FT_RL" --seed "$s"
  train "b8-s$s" "$B8" $C8 --il-episodes "$IL" --rl-episodes "$RL" --seed "$s"
  {
    printf 'A\tzero-shot: FFNN policy on the 4-device block\t%s\n' "$(greedy "$out/ffnn-s$s.pt" "$B4" $C4)"
    printf 'A\tfine-tuned from FFNN (%s + %s)\t%s\n' "$FT_IL" "$FT_RL" "$(greedy "$out/b4-from-ffnn-s$s.pt" "$B4" $C4)"
    printf 'A\tfrom scratch (%s + %s)\t%s\n' "$FT_IL" "$FT_RL" "$(greedy "$out/b4-scratch-s$s.pt" "$B4" $C4)"
    printf 'A\ttrained on the block (%s + %s)\t%s\n' "$IL" "$RL" "$(greedy "$out/b4-s$s.pt" "$B4" $C4)"
    printf 'B\tzero-shot: 4-device block policy on 8 devices\t%s\n' "$(greedy "$out/b4-s$s.pt" "$B8" $C8)"
    printf 'B\tfine-tuned from 4 devices (%s + %s)\t%s\n' "$FT_IL" "$FT_RL" "$(greedy "$out/b8-from-b4-s$s.pt" "$B8" $C8)"
    printf 'B\tfrom scratch (%s + %s)\t%s\n' "$FT_IL" "$FT_RL" "$(greedy "$out/b8-scratch-s$s.pt" "$B8" $C8)"
    printf 'B\ttrained on 8 devices (%s + %s)\t%s\n' "$IL" "$RL" "$(greedy "$out/b8-s$s.pt" "$B8" $C8)"
  } >>"$rows"
  echo "seed $s done" >&2
done
python3 - "$rows" "$(cp_of "$B4" $C4)" "$(cp_of "$B8" $C8)" <<'EOF' | tee "$out/table.md"
import sys, statistics as st
rows, cp = sys.argv[1], {"A": float(sys.argv[2]), "B": float(sys.argv[3])}
vals = {}
for l in open(rows):
    exp, what, v = l.rstrip("\n").split("\t")
    vals.setdefault((exp, what), []).append(float(v))
print("| experiment | policy | greedy makespan, mean ± std (s) | / cp | per seed |")
print("|---|---|---|---|---|")
for (exp, what), xs in vals.items():
    name = {"A": "FFNN → Llama block (4 dev)", "B": "4 → 8 devices (Llama block)"}[exp]
    sd = st.stdev(xs) if len(xs) > 1 else 0.0
    print(f"| {name} | {what} | {st.mean(xs):.4g} ± {sd:.2g} | {st.mean(xs) / cp[exp]:.3f} | "
          + ", ".join(f"{x:.4g}" for x in xs) + " |")
print(f"\ncp (seed 0): 4-device block {cp['A']:.4g} s, 8-device block {cp['B']:.4g} s")
EOF
