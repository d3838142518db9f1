#!/usr/bin/env bash
# Two `doppler run`s sharing the same two `doppler worker`s at once, against one alone: how much the
# turns between engines cost (a worker's device serves one run at a time; the later engine waits
# its turn, engine_options::busy_wait; docs/runtime.md, "Several engines on the same workers").
#
#   scripts/share_workers.sh
#
# Environment (defaults in brackets): DOPPLER [build/release/cli/doppler], REPEAT [200] runs per
# invocation, ROUNDS [3], BACKEND [null] (the workers' kernels: null measures the protocol alone),
# GRAPH [""] (a doppler-graph/1 file; default: run's own, the generated Llama block).
# Prints, per round, the wall time of one invocation alone, of two started together, their ratio to
# twice the one alone, and for each of the two the seconds it waited for the other's runs, the runs
# refused (each sent its plan) and the probes in between.
set -euo pipefail
cd "$(dirname "$0")/.."
DOPPLER="${DOPPLER:-build/release/cli/doppler}"
REPEAT="${REPEAT:-200}"
ROUNDS="${ROUNDS:-3}"
BACKEND="${BACKEND:-null}"
[[ -x "$DOPPLER" ]] || { echo "share_workers.sh: no doppler binary $DOPPLER (cmake --build --preset release)" >&2; exit 2; }

source scripts/lib/workers.sh
scratch_and_worker_pair "$BACKEND"
run=("$DOPPLER" run --workers "${workers[0]},${workers[1]}" --repeat "$REPEAT" --warmup 1 --json)
[[ -z "${GRAPH:-}" ]] || run+=(--graph "$GRAPH")
waited() {
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(f\"{j['busy_waited_s']:.2f} s/{j['busy_tries']}/{j['busy_probes']}\")" "$1"
}

echo "share_workers: ${GRAPH:-the generated Llama block}, $REPEAT runs per invocation, backend $BACKEND, workers ${workers[*]}, $(date -u +%FT%TZ)," \
  "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "| round | one alone (s) | two at once (s) | two at once / (2 x one alone) | waited / runs refused / probes: first, second |"
echo "|---|---|---|---|---|"
for ((r = 1; r <= ROUNDS; ++r)); do
  s=$(date +%s.%N)
  "${run[@]}" >"$tmp/alone.json" 2>"$tmp/alone.err"
  alone=$(echo "$(date +%s.%N) - $s" | bc)
  s=$(date +%s.%N)
  "${run[@]}" >"$tmp/one.json" 2>"$tmp/one.err" &
  first=$!
  "${run[@]}" >"$tmp/two.json" 2>"$tmp/two.err"
  wait "$first"
  both=$(echo "$(date +%s.%N) - $s" | bc)
  printf '| %d | %.3f | %.3f | %.2f | %s, %s |\n' "$r" "$alone" "$both" "$(echo "$both / (2 * $alone)" | bc -l)" \
    "$(waited "$tmp/one.json")" "$(waited "$tmp/two.json")"
done
