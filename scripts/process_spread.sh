#!/usr/bin/env bash
# How much does one placement's measured makespan depend on the process that measures it?
# (docs/cpu_backend.md "The host buffer cache, on and off"; docs/learner-experiments.md "The process effect, found")
#
#   scripts/process_spread.sh [OUT_DIR]
#
# Generates the phase-III Llama block (`doppler workload llama-block`, DIM/HEADS/SEQ/SHARDS), places
# it with METHOD on CLUSTER (or takes PLACEMENT), and runs it PROCS times per arm in separate
# `doppler run` processes (a warm-up + REPEAT runs each), the arms interleaved so that a change of
# the host's load hits both alike. Arms: `cache` (the host buffer cache, the default) and `malloc`
# (DOPPLER_HOST_CACHE_MB=0: every buffer from malloc). Prints per arm the mean makespan, the standard
# deviation of the process means, what that deviation would be without a process effect (the mean
# within-process standard deviation / sqrt(REPEAT)), and their ratio (≈ 1: no process effect).
# Environment [defaults]: DOPPLER [build/release/cli/doppler], DIM [1024], HEADS [16], SEQ [512],
# SHARDS [4], CLUSTER [cpu:4], METHOD [heft], PLACEMENT [placed here], PROCS [12], REPEAT [5],
# STRAGGLER [none] (DEV:FACTOR, e.g. cpu0:3: `run --straggler`), ARMS ["cache malloc"].
set -euo pipefail
D=${DOPPLER:-build/release/cli/doppler}
OUT=${1:-/tmp/doppler-process-spread}
PROCS=${PROCS:-12} REPEAT=${REPEAT:-5} CLUSTER=${CLUSTER:-cpu:4} ARMS=${ARMS:-cache malloc}
mkdir -p "$OUT"
G=$OUT/block.json
"$D" workload llama-block --dim "${DIM:-1024}" --heads "${HEADS:-16}" --seq "${SEQ:-512}" --shards "${SHARDS:-4}" -q -o "$G"
P=${PLACEMENT:-$OUT/placement.json}
[[ -n ${PLACEMENT:-} ]] || "$D" place --graph "$G" --cluster "$CLUSTER" --method "${METHOD:-heft}" -o "$P" > /dev/null
SLOW=()
[[ -z ${STRAGGLER:-} ]] || SLOW=(--straggler "$STRAGGLER")
echo "== $(date -u '+%F %T UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $CLUSTER, $PROCS processes per arm x (1 warm-up + $REPEAT runs), straggler ${STRAGGLER:-none}"
: > "$OUT/rows.jsonl"
for i in $(seq 1 "$PROCS"); do
  for arm in $ARMS; do
    case $arm in
      cache) envs=() ;;
      malloc) envs=(DOPPLER_HOST_CACHE_MB=0) ;;
      *) echo "unknown arm '$arm' (cache or malloc)" >&2; exit 2 ;;
    esac
    env "${envs[@]}" "$D" run --graph "$G" --cluster "$CLUSTER" --placement "$P" --backend cpu \
        --warmup 1 --repeat "$REPEAT" "${SLOW[@]}" --json |
      jq -c --arg arm "$arm" '{arm: $arm, runs: .makespans_s}' >> "$OUT/rows.jsonl"
  done
done
echo "| arm | mean makespan (ms) | std of process means (ms) | expected without a process effect (ms) | ratio | process means (ms) |"
echo "|---|---:|---:|---:|---:|---|"
jq -rs --argjson r "$REPEAT" '
  def mean: add / length;
  def sd: (mean as $m | (map((. - $m) * (. - $m)) | add) / (length - 1) | sqrt);
  group_by(.arm)[] | . as $rows
  | ($rows | map(.runs | mean)) as $means
  | ($rows | map(.runs | sd) | mean / ($r | sqrt)) as $exp
  | "| \($rows[0].arm) | \($means | mean * 1e4 | round / 10) | \($means | sd * 1e4 | round / 10) | \($exp * 1e4 | round / 10) | \(($means | sd) / $exp * 100 | round / 100) | \($means | map(. * 1e3 | round | tostring) | join(" ")) |"
' "$OUT/rows.jsonl"
