#!/usr/bin/env bash
# Soak test of the remote dispatch path: runs `bench_remote`'s chain case (1,000 dependent no-op ops on
# a device served by a worker over TCP, tests/perf/bench_remote.cpp) again and again next to BUSY busy
# loops, each invocation under `timeout`, and counts the invocations that did not finish. A run that
# loses a message hangs until the engine's run timeout (120 s), so an invocation that ends on TIMEOUT
# is a lost message. Each invocation is ~600 engine runs (~2 s of benchmark time).
#
#   scripts/soak_remote.sh [N]
#
# Environment (defaults in brackets): BENCH [build/release/tests/perf/bench_remote], N [60 or $1],
# BUSY [2] (busy loops beside it: a loaded host is where the races show), TIMEOUT [60] seconds per
# invocation, FILTER [bm_ops/remote:1/dag:0] (remote:0 = the same on local devices, for comparison).
# Exit status: 0 when every invocation finished, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH="${BENCH:-build/release/tests/perf/bench_remote}"
N="${1:-${N:-60}}"
BUSY="${BUSY:-2}"
TIMEOUT="${TIMEOUT:-60}"
FILTER="${FILTER:-bm_ops/remote:1/dag:0}"
[[ -x "$BENCH" ]] || { echo "soak_remote.sh: no benchmark binary $BENCH (cmake --build --preset release)" >&2; exit 2; }

busy=()
cleanup() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for ((b = 0; b < BUSY; ++b)); do
  (while :; do :; done) &
  busy+=($!)
done

log=$(mktemp)
ok=0 hung=0 failed=0
echo "soak: $N invocations of $BENCH --benchmark_filter=$FILTER, $BUSY busy loops, timeout ${TIMEOUT} s, $(date -u +%FT%TZ)"
for ((i = 1; i <= N; ++i)); do
  rc=0
  timeout "$TIMEOUT" "$BENCH" --benchmark_filter="$FILTER" --benchmark_min_time=2 >"$log" 2>&1 || rc=$?
  if ((rc == 0)); then
    ok=$((ok + 1))
  elif ((rc == 124)); then
    hung=$((hung + 1))
    echo "invocation $i: did not finish in ${TIMEOUT} s (a lost message)"
  else
    failed=$((failed + 1))
    echo "invocation $i: exit status $rc"
    tail -3 "$log"
  fi
  printf '\r%d/%d: %d finished, %d hung, %d failed ' "$i" "$N" "$ok" "$hung" "$failed" >&2
done
echo >&2
rm -f "$log"
echo "soak: $ok of $N finished, $hung hung, $failed failed ($(date -u +%FT%TZ))"
((hung == 0 && failed == 0))
