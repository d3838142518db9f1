# Sourced by the measured-learner scripts (phase3_gain.sh, online_gain.sh): a Llama block calibrated on
# this host, and DOPPLER trainings on it. The sourcing script sets D (the doppler binary), OUT, and
# N DIM HEADS SEQ SHARDS (devices and block sizes); CAL_ROUNDS [5] and CAL_FLAGS [--flops-only] (the
# calibration's kind: "" for the full table — memory term, dispatch overhead, host_cores) are read from
# the environment.

# load: the time and the host's load average, for progress lines
load() { echo "$(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"; }

# calibrated_block: prints the host and doppler's version, generates the block G=$OUT/lb.json,
# calibrates this host on it (`calibrate --flops-only`: $OUT/cost.json, $OUT/calibrate.txt) and sets
# SPEC, the cluster spec of this host that calibrate prints. With CAL_WORKERS=HOST:PORT,... it also
# measures the links between those workers' processes and SPEC is the deployment's cluster file
# ($OUT/cluster.json, `calibrate --workers`).
calibrated_block() {
  echo "== $(date -u '+%F %T UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== $("$D" --version)"
  G=$OUT/lb.json
  "$D" workload llama-block --dim "$DIM" --heads "$HEADS" --seq "$SEQ" --shards "$SHARDS" -q -o "$G"
  local on=()
  [[ -n ${CAL_WORKERS:-} ]] && on=(--workers "$CAL_WORKERS" --cluster-out "$OUT/cluster.json")
  local kind
  read -r -a kind <<<"${CAL_FLAGS---flops-only}"
  "$D" calibrate --cluster "cpu:$N" --graph "$G" --rounds "${CAL_ROUNDS:-5}" "${kind[@]}" -o "$OUT/cost.json" \
    "${on[@]}" | tee "$OUT/calibrate.txt"
  calibrated_spec
  [[ -n $SPEC ]] || { echo "no cluster spec in calibrate's output" >&2; exit 1; }
}

# calibrated_spec: SPEC from an earlier calibrate's $OUT/calibrate.txt (the deployment's cluster file
# when it had one, else this host's spec)
calibrated_spec() {
  SPEC=$(sed -n 's/^simulate this \(host\|deployment\) with --cluster \([^ ]*\) .*/\2/p' "$OUT/calibrate.txt" | tail -1)
}

# train_as NAME SEED ARGS...: `doppler train ARGS` into $OUT/train/NAME.{pt,csv,txt} (progress bars dropped)
train_as() {
  local name=$1 seed=$2
  shift 2
  "$@" --seed "$seed" --csv "$OUT/train/$name.csv" -o "$OUT/train/$name.pt" 2>&1 |
    grep -v '^\(il\|rl\|real\) *\[' | tee "$OUT/train/$name.txt"
}
