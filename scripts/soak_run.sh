#!/usr/bin/env bash
# Soak test of `doppler run` (and `train`) as users run it: one process after another against the same two
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
#   local-planned local-online workers workers-planned workers-online   direct / planned / online
#   workers-doppler   the DOPPLER learner (an untrained policy in doppler-learn) learning online
#   workers-train     `doppler train` whose phase III measures on the workers (--real-workers)
#   failover          `--failover` over worker a and a third worker started for the invocation and
#                     killed (SIGKILL) at a random moment: the run must finish on the survivors, or
#                     fail at once naming the lost worker when it died before the runs began
#   failover2         the same with two workers started for the invocation (cluster cpu:6), both
#                     killed at random moments: the run must finish on worker a alone
#   concurrent        two `doppler run --workers` started at the same moment on the same workers:
#                     both must finish (a worker serves one run at a time; the later waits, --busy-wait)
# (workers-doppler and workers-train are left out without doppler-learn beside $DOPPLER: no Torch).
# Exit status: 0 when every invocation finished (or, for failover, failed clearly), 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
DOPPLER="${DOPPLER:-build/release/cli/doppler}"
N="${1:-${N:-40}}"
BUSY="${BUSY:-2}"
TIMEOUT="${TIMEOUT:-60}"
REPEAT="${REPEAT:-200}"
BACKEND="${BACKEND:-null}"
[[ -x "$DOPPLER" ]] || { echo "soak_run.sh: no doppler binary $DOPPLER (cmake --build --preset release)" >&2; exit 2; }
if [[ -z "${CASES:-}" ]]; then
  CASES="local-planned local-online workers workers-planned workers-online failover failover2 concurrent"
  [[ -x "$(dirname "$DOPPLER")/doppler-learn" ]] && CASES+=" workers-doppler workers-train"
fi
read -r -a cases <<<"$CASES"

source scripts/lib/workers.sh
# Two workers of two devices each, for the whole soak (as a user's cluster would be).
scratch_and_worker_pair "$BACKEND"
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
    workers | concurrent) echo "${run[*]} --workers ${workers[0]},${workers[1]}" ;;
    workers-planned) echo "${run[*]} --workers ${workers[0]},${workers[1]} --transfers planned" ;;
    workers-online) echo "${run[*]} --workers ${workers[0]},${workers[1]} --learner cp --online --explore 0.3" ;;
    workers-doppler) echo "${run[*]} --workers ${workers[0]},${workers[1]} --learner doppler --online --explore 0.3" ;;
    failover) echo "${run[*]} --workers ${workers[0]},$2 --failover" ;;
    failover2) echo "${run[*]} --cluster cpu:6 --workers ${workers[0]},$2,$3 --failover" ;;
    workers-train) echo "train --il-episodes 2 --rl-episodes 2 --real-episodes 40 --hidden 16 --steps 2" \
      "--real-workers ${workers[0]},${workers[1]} -o $tmp/p$i.pt" ;;  # i: the invocation
    *) echo "soak_run.sh: unknown case '$1'" >&2; exit 2 ;;
  esac
}

ok=0 hung=0 failed=0 fo_mid=0 fo_after=0 fo_before=0 fo_two=0
echo "soak: $N invocations of $DOPPLER (cases: ${cases[*]}; $REPEAT runs each, backend $BACKEND)," \
  "workers ${workers[*]}, $BUSY busy loops, timeout ${TIMEOUT} s, $(date -u +%FT%TZ)"
for ((i = 1; i <= N; ++i)); do
  c="${cases[$(((i - 1) % ${#cases[@]}))]}"
  victims=() victim_ats=()
  if [[ "$c" == failover || "$c" == failover2 ]]; then
    n_victims=1
    [[ "$c" == failover2 ]] && n_victims=2
    for ((v = 0; v < n_victims; ++v)); do
      start_worker "$tmp/worker-c$i-$v.log" --devices cpu:2 --backend "$BACKEND"
      victims+=("$worker_pid")
      victim_ats+=("$worker_at")
      # dies at a random moment in the invocation's first ~0.4 s (about the length of its runs)
      (sleep "0.$((RANDOM % 4))$((RANDOM % 10))" && kill -9 "$worker_pid" 2>/dev/null) &
    done
    args_text=$(case_args "$c" "${victim_ats[@]}")
  else
    args_text=$(case_args "$c")
  fi
  read -r -a args <<<"$args_text"
  rc=0
  if [[ "$c" == concurrent ]]; then  # two engines at once; the invocation's status is the worse one
    timeout "$TIMEOUT" "$DOPPLER" "${args[@]}" >"$tmp/out.json" 2>"$tmp/err.log" &
    first=$!
    rc2=0
    timeout "$TIMEOUT" "$DOPPLER" "${args[@]}" >"$tmp/out2.json" 2>"$tmp/err2.log" || rc2=$?
    wait "$first" || rc=$?
    ((rc != 0)) || rc=$rc2
    cat "$tmp/err2.log" >>"$tmp/err.log"
  else
    timeout "$TIMEOUT" "$DOPPLER" "${args[@]}" >"$tmp/out.json" 2>"$tmp/err.log" || rc=$?
  fi
  for v in "${victims[@]}"; do
    kill -9 "$v" 2>/dev/null || true
    wait "$v" 2>/dev/null || true
  done
  named_victim=false
  for at in "${victim_ats[@]}"; do grep -q "worker $at" "$tmp/err.log" && named_victim=true; done
  if ((${#victims[@]} > 0)); then  # how the workers' deaths met the runs
    if ((rc == 0)) && grep -q '"failovers"' "$tmp/out.json"; then
      fo_mid=$((fo_mid + 1))
      lost=0  # workers the failovers name
      for at in "${victim_ats[@]}"; do grep -q "worker $at" "$tmp/out.json" && lost=$((lost + 1)); done
      ((lost < 2)) || fo_two=$((fo_two + 1))
    elif ((rc == 0)); then fo_after=$((fo_after + 1))
    else fo_before=$((fo_before + 1)); fi
  fi
  if ((rc == 0)); then
    ok=$((ok + 1))
  elif ((${#victims[@]} > 0 && rc != 124)) && $named_victim &&
    ! grep -q 'timed out' "$tmp/err.log"; then
    ok=$((ok + 1))  # lost before the runs began (at attach): a clear error naming it is the right answer
  elif ((rc == 124)) || grep -q 'timed out' "$tmp/err.log"; then
    hung=$((hung + 1))
    echo "invocation $i ($c): did not finish: $(grep -m1 'error' "$tmp/err.log" || echo "killed after ${TIMEOUT} s")"
  else
    failed=$((failed + 1))
    echo "invocation $i ($c): exit status $rc: $(grep -m1 'error' "$tmp/err.log" || tail -1 "$tmp/err.log")"
  fi
  printf '\r%d/%d: %d finished, %d hung, %d failed ' "$i" "$N" "$ok" "$hung" "$failed" >&2
done
echo >&2
echo "soak: $ok of $N finished, $hung hung, $failed failed ($(date -u +%FT%TZ))"
((fo_mid + fo_after + fo_before == 0)) ||
  echo "failover: $fo_mid lost a worker mid-run and finished on the survivors, $fo_after lost it after" \
    "their runs, $fo_before before (at attach; an error naming it); $fo_two lost two workers mid-run"
((hung == 0 && failed == 0))
