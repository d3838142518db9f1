# Starting `doppler worker` processes from the scripts (sourced: soak_run.sh, share_workers.sh,
# phase3_gain.sh). Needs $DOPPLER, the doppler binary.

# start_worker LOG [worker flags...]: a `doppler worker` in the background (default --devices cpu:2),
# its output in LOG; waits until it listens (10 s at most) and sets $worker_pid and $worker_at
# (HOST:PORT). Exits 2 naming the log when it does not start.
start_worker() {
  local log=$1
  shift
  (($# > 0)) || set -- --devices cpu:2
  "$DOPPLER" worker "$@" >"$log" 2>&1 &
  worker_pid=$!
  for _ in $(seq 100); do
    grep -q 'listening on' "$log" && break
    sleep 0.1
  done
  worker_at=$(grep -o 'listening on [^ ]*' "$log" | awk '{print $3}') || true
  if [[ -z "$worker_at" ]]; then
    echo "$(basename "$0"): a doppler worker did not start ($log):" >&2
    cat "$log" >&2
    exit 2
  fi
}

# scratch_and_worker_pair BACKEND: a scratch folder $tmp and two `doppler worker`s of two devices each
# (kernels BACKEND), their addresses in ${workers[@]}; killed and removed on exit. Add other
# background processes to ${pids[@]} to have them killed too.
scratch_and_worker_pair() {
  tmp=$(mktemp -d)
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
  workers=()
  local w
  for w in a b; do
    start_worker "$tmp/worker-$w.log" --devices cpu:2 --backend "$1"
    pids+=("$worker_pid")
    workers+=("$worker_at")
  done
}
