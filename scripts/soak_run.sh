#!/usr/bin/env bash
# Soak test of `doppler run` as users run it: one process after another against the same two
# `doppler worker`s (and locally), next to BUSY busy loops, each invocation under `timeout`, with
# every kind of run in turn — direct and planned transfers, online learning through the learner
# actor, locally and over the workers. Counts the invocations that hung or failed. Each process is a
# new engine: what one run leaves behind in the long-lived workers (connections, routes, stale
# messages) meets the next one. It found that a second run over two workers lost every tensor
# between them (docs/performance.md, "The second run over two workers").
#
#   scripts/soak_run.sh [N]
#
# Environment (defaults in brackets): DOPPLER [build/release/cli/doppler], N [40 or $1] invocations,
# BUSY [2] busy loops, TIMEOUT [60] seconds per invocation (the run's own --timeout is a third of it),
# REPEAT [200] runs per invocation, BACKEND [null] (the workers' and the local devices' kernels: null
# runs the protocol at full speed; cpu runs real kernels), CASES [all]: a subset of
#   local-planned local-online workers workers-planned workers-online
# Exit status: 0 when every invocation finished, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
DOPPLER="${DOPPLER:-build/release/cli/doppler}"
N="${1:-${N:-40}}"
BUSY="${BUSY:-2}"
TIMEOUT="${TIMEOUT:-60}"
REPEAT="${REPEAT:-200}"
BACKEND="${BACKEND:-null}"
CASES="${CASES:-local-planned local-online workers workers-planned workers-online}"
[[ -x "$DOPPLER" ]] || { echo "soak_run.sh: no doppler binary $DOPPLER (cmake --build --preset release)" >&2; exit 2; }
read -r -a cases <<<"$CASES"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# Two workers of two devices each, for the whole soak (as a user's cluster would be).
workers=()
for w in a b; do
  "$DOPPLER" worker --devices cpu:2 --backend "$BACKEND" >"$tmp/worker-$w.log" 2>&1 &
  pids+=($!)
done
for w in a b; do
  for _ in $(seq 100); do
    grep -q 'listening on' "$tmp/worker-$w.log" && break
    sleep 0.1
  done
  at=$(grep -o 'listening on [^ ]*' "$tmp/worker-$w.log" | awk '{print $3}') ||
    { echo "soak_run.sh: worker $w did not start:" >&2; cat "$tmp/worker-$w.log" >&2; exit 2; }
  workers+=("$at")
done
for ((b = 0; b < BUSY; ++b)); do
  (while :; do :; done) &
  pids+=($!)
done

# The arguments of one case's `doppler run`.
case_args() {
  local run=(run --repeat "$REPEAT" --warmup 1 --timeout $((TIMEOUT / 3)) --json)
  case "$1" in
    local-planned) echo "${run[*]} --backend $BACKEND --transfers planned" ;;
    local-online) echo "${run[*]} --backend $BACKEND --learner cp --online --explore 0.3" ;;
    workers) echo "${run[*]} --workers ${workers[0]},${workers[1]}" ;;
    workers-planned) echo "${run[*]} --workers ${workers[0]},${workers[1]} --transfers planned" ;;
    workers-online) echo "${run[*]} --workers ${workers[0]},${workers[1]} --learner cp --online --explore 0.3" ;;
    *) echo "soak_run.sh: unknown case '$1'" >&2; exit 2 ;;
  esac
}

ok=0 hung=0 failed=0
echo "soak: $N invocations of $DOPPLER run (cases: ${cases[*]}; $REPEAT runs each, backend $BACKEND)," \
  "workers ${workers[*]}, $BUSY busy loops, timeout ${TIMEOUT} s, $(date -u +%FT%TZ)"
for ((i = 1; i <= N; ++i)); do
  c="${cases[$(((i - 1) % ${#cases[@]}))]}"
  read -r -a args <<<"$(case_args "$c")"
  rc=0
  timeout "$TIMEOUT" "$DOPPLER" "${args[@]}" >"$tmp/out.json" 2>"$tmp/err.log" || rc=$?
  if ((rc == 0)); then
    ok=$((ok + 1))
  elif ((rc == 124)) || grep -q 'timed out' "$tmp/err.log"; then
    hung=$((hung + 1))
    echo "invocation $i ($c): did not finish: $(grep -m1 'error' "$tmp/err.log" || echo "killed after ${TIMEOUT} s")"
  else
    failed=$((failed + 1))
    echo "invocation $i ($c): exit status $rc: $(tail -1 "$tmp/err.log")"
  fi
  printf '\r%d/%d: %d finished, %d hung, %d failed ' "$i" "$N" "$ok" "$hung" "$failed" >&2
done
echo >&2
echo "soak: $ok of $N finished, $hung hung, $failed failed ($(date -u +%FT%TZ))"
((hung == 0 && failed == 0))
