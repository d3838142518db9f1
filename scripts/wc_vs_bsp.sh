#!/usr/bin/env bash
# Work-conserving vs bulk-synchronous execution of the same placements, measured on the actor runtime
# with real kernels, next to the simulator's prediction (issue 4, docs/results.md).
#
#   scripts/wc_vs_bsp.sh DIR [PLACEMENT...]
#
# DIR is an output directory of scripts/sim_vs_measured.sh (its lb.json, cost.json, calibrate.txt
# and placements/); PLACEMENTs are names under DIR/placements (default: cp heft random-1). For each
# placement, ROUNDS rounds [5] alternate `--mode wc` and `--mode bsp` (warm-up + REPEAT [4] runs each),
# so load changes on a shared host hit both modes alike; prints mean ± std, min, and the speedup
# bsp / wc of the means and of the minima.
set -euo pipefail
D=${DOPPLER:-build/release/cli/doppler}
DIR=$1
shift
PLACEMENTS=("$@")
[ ${#PLACEMENTS[@]} -gt 0 ] || PLACEMENTS=(cp heft random-1)
ROUNDS=${ROUNDS:-5} REPEAT=${REPEAT:-4} BACKEND=${BACKEND:-cpu}
SPEC=$(sed -n 's/^simulate this host with --cluster \([^ ]*\) .*/\1/p' "$DIR/calibrate.txt")
echo "== $(date -u '+%F %T UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), cluster $SPEC"
: > "$DIR/wc_bsp.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for p in "${PLACEMENTS[@]}"; do
    for mode in wc bsp; do
      "$D" run --graph "$DIR/lb.json" --cluster "$SPEC" --placement "$DIR/placements/$p.json" --mode "$mode" \
        --backend "$BACKEND" --costs "$DIR/cost.json" --warmup 1 --repeat "$REPEAT" --json |
        jq -c --arg p "$p" --arg mode "$mode" '{placement: $p, mode: $mode, runs: .makespans_s, sim: .simulated_s}' \
        >> "$DIR/wc_bsp.jsonl"
    done
  done
done
echo "== done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$DIR/wc_bsp.jsonl" <<'EOF'
import json, statistics as st, sys
runs, sim = {}, {}
for l in open(sys.argv[1]):
    r = json.loads(l); runs.setdefault((r["placement"], r["mode"]), []).extend(r["runs"]); sim[(r["placement"], r["mode"])] = r["sim"]
print(f"{'placement':<10} {'mode':<4} {'n':>3} {'mean ms':>8} {'std':>6} {'min':>6} {'sim ms':>7}")
for (p, m), xs in runs.items():
    print(f"{p:<10} {m:<4} {len(xs):>3} {st.mean(xs)*1e3:8.1f} {st.stdev(xs)*1e3:6.1f} {min(xs)*1e3:6.1f} {sim[(p, m)]*1e3:7.1f}")
for p in dict.fromkeys(k[0] for k in runs):
    w, b = runs[(p, "wc")], runs[(p, "bsp")]
    print(f"{p}: bsp/wc means {st.mean(b)/st.mean(w):.3f}, minima {min(b)/min(w):.3f}, simulated {sim[(p, 'bsp')]/sim[(p, 'wc')]:.3f}")
EOF
