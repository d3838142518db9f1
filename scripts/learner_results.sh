#!/usr/bin/env bash
# Issue 5's results table (docs/results.md, "DOPPLER vs the placers"): trains DOPPLER (and the
# GDP-like baseline; Placeto-like with KINDS="dual gdp placeto", ~1 s per episode) on the six paper
# graphs (doppler-paper:4 / :8, simple model, as the paper measured) and on generated Llama blocks
# (p100x4 and dgx1-v100, wc model), then runs one `doppler compare` per graph with every placer
# (10 seeds, search budget 20000) and the trained checkpoints as learned rows (--policy).
#
# Usage: scripts/learner_results.sh OUTDIR
#   DOPPLER=path/to/doppler (default build/release/cli/doppler)
#   SEEDS="0 1 2"  training seeds per kind      IL=200 RL=2000  episodes of phases I and II
#   BATCH=8        episodes per update (`train --batch`); a finished training is not redone when
#                  BATCH or ARGS change: give such a run its own OUTDIR
#   KINDS="dual gdp"                             GRAPHS="..." a subset of the names below
#   JOBS=1         trainings run at once (this script's machine has 2 cores)
#   ARGS="..."     extra `doppler train` flags for every training, e.g. ARGS="--algorithm ppo" KINDS=dual
#   TRAIN_ONLY=1   train and stop (no compare, no table): to give each kind its own ARGS in one
#                  OUTDIR, e.g. KINDS=dual ARGS="..." TRAIN_ONLY=1, then KINDS=gdp TRAIN_ONLY=1, then
#                  KINDS="dual gdp" (trains nothing more, compares both)
#   INIT=PREFIX    start every training from the checkpoint PREFIX-sS.pt of its own seed S (`train
#                  --init`; fine-tuning, usually with IL=0), e.g. the 8-device graphs from the 4-device
#                  layer: INIT=DIR/llama-layer-paper-dual IL=0 GRAPHS="llama-block-paper8 llama-layer-paper8"
#   SAMPLES=K      also a row "doppler best-of-K": the dual checkpoints with `compare --policy-samples K`
#                  (best of the greedy and K sampled placements under the simulator), in OUTDIR/<graph>.K.json
# Every training logs to OUTDIR/<graph>-<kind>-s<seed>.log (kept: a rerun skips finished ones, and
# redoes a graph's compare only when its list of checkpoints changed, e.g. more SEEDS);
# each compare writes OUTDIR/<graph>.json; the markdown table goes to stdout and OUTDIR/table.md.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
bin=${DOPPLER:-build/release/cli/doppler}
seeds=${SEEDS:-0 1 2}
kinds=${KINDS:-dual gdp}
il=${IL:-200}
rl=${RL:-2000}
jobs=${JOBS:-1}
mkdir -p "$out"
source "$(dirname "$0")/results_graphs.sh"
wanted() { [[ -z ${GRAPHS:-} ]] || [[ " $GRAPHS " == *" $1 "* ]]; }

echo "$(date -u '+%F %T') UTC, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
  | tee "$out/machine.txt" >&2

train() {  # name graph cluster model kind seed
  local log=$out/$1-$5-s$6.log
  [[ -s $log ]] && return 0
  "$bin" train --graph "$2" --cluster "$3" --model "$4" --policy-kind "$5" --il-episodes "$il" --rl-episodes "$rl" \
    --batch "${BATCH:-8}" --seed "$6" ${INIT:+--init "$INIT-s$6.pt"} ${ARGS:-} -o "$out/$1-$5-s$6.pt" \
    --csv "$out/$1-$5-s$6.csv" >"$log.tmp" 2>&1
  mv "$log.tmp" "$log"
  echo "$1 $5 s$6: $(grep -o 'greedy [0-9.e+-]* s ([0-9.]*x cp' "$log")" >&2
}

for s in "${setups[@]}"; do
  IFS='|' read -r name file cluster model <<<"$s"
  wanted "$name" || continue
  for k in $kinds; do
    for seed in $seeds; do
      train "$name" "$file" "$cluster" "$model" "$k" "$seed" &
      while (( $(jobs -rp | wc -l) >= jobs )); do wait -n; done
    done
  done
done
wait
[[ ${TRAIN_ONLY:-0} == 1 ]] && exit 0

label() { case $1 in dual) echo doppler;; gdp) echo gdp-like;; placeto) echo placeto-like;; joint) echo joint;; *) echo "$1";; esac; }
# placed JSON SPEC...: JSON is a compare whose learned rows placed exactly SPEC... ("label=a.pt,b.pt",
# in order; compare records each learned row's checkpoints), so a rerun with other SEEDS or KINDS redoes it.
placed() {
  [[ -s $1 ]] || return 1
  [[ "$(python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r.get("learned"): print(r["method"] + "=" + ",".join(r["policies"]))' "$1")" == "$(printf '%s\n' "${@:2}")" ]]
}
for s in "${setups[@]}"; do
  IFS='|' read -r name file cluster model <<<"$s"
  wanted "$name" || continue
  specs=() args=()
  for k in $kinds; do
    list=""
    for seed in $seeds; do list+="${list:+,}$out/$name-$k-s$seed.pt"; done
    specs+=("$(label "$k")=$list")
    args+=(--policy "${specs[-1]}")
  done
  placed "$out/$name.json" "${specs[@]}" && continue
  "$bin" compare --graph "$file" --cluster "$cluster" --model "$model" --seeds 10 --budget 20000 \
    --methods cp,heft,m-etf,metis,search "${args[@]}" --json >"$out/$name.json.tmp"
  mv "$out/$name.json.tmp" "$out/$name.json"
done
if [[ -n ${SAMPLES:-} ]]; then
  for s in "${setups[@]}"; do
    IFS='|' read -r name file cluster model <<<"$s"
    wanted "$name" || continue
    list=""
    for seed in $seeds; do list+="${list:+,}$out/$name-dual-s$seed.pt"; done
    placed "$out/$name.$SAMPLES.json" "best-of-$SAMPLES=$list" && continue
    "$bin" compare --graph "$file" --cluster "$cluster" --model "$model" --methods '' --policy "best-of-$SAMPLES=$list" \
      --policy-samples "$SAMPLES" --json >"$out/$name.$SAMPLES.json.tmp"
    mv "$out/$name.$SAMPLES.json.tmp" "$out/$name.$SAMPLES.json"
  done
fi

python3 - "$out" "$kinds" "${SAMPLES:-}" "${setups[@]}" <<'EOF' | tee "$out/table.md"
import json, sys, os
out, kinds, samples, setups = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4:]
label = {"dual": "doppler", "gdp": "gdp-like", "placeto": "placeto-like", "joint": "joint"}
placers = ["cp", "heft", "m-etf", "metis", "search"]
learned = [label.get(k, k) for k in kinds] + ([f"best-of-{samples}"] if samples else [])
def unit(bound):  # one time unit per row: s, ms or µs
    return (1, "s") if bound >= 1 else (1e3, "ms") if bound >= 1e-3 else (1e6, "µs")
def cell(r, scale):
    m, sd = r["makespan_s"] * scale, r["std_s"] * scale
    return f"{m:.4g}" + (f" ± {sd:.2g}" if sd > 1e-6 * m else "")  # no ± for float noise
print("| graph | cluster | model | unit | bound | " + " | ".join(placers + learned) +
      " | DOPPLER / best placer | DOPPLER / cp |" + (f" best-of-{samples} / best placer |" if samples else ""))
print("|" + "---|" * (5 + len(placers) + len(learned) + 2 + (1 if samples else 0)))
for s in setups:
    name, file, cluster, model = s.split("|")
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        continue
    j = json.load(open(path))
    rows = {r["method"]: r for r in j["rows"]}
    if samples and os.path.exists(os.path.join(out, f"{name}.{samples}.json")):
        for r in json.load(open(os.path.join(out, f"{name}.{samples}.json")))["rows"]:
            rows[r["method"]] = r
    best = min(rows[p]["makespan_s"] for p in placers)
    scale, u = unit(j["lower_bound_s"])
    cells = []
    for m in placers + learned:
        if m not in rows:  # a learned row this directory has no compare for (e.g. no SAMPLES run of this graph)
            cells.append("—")
            continue
        r = rows[m]
        c = cell(r, scale)
        cells.append(f"**{c}**" if not r["learned"] and r["makespan_s"] <= best * 1.0001 else c)
    d = rows["doppler"]["makespan_s"] if "doppler" in rows else float("nan")
    print(f"| {name} | {cluster} | {model} | {u} | {j['lower_bound_s'] * scale:.4g} | " + " | ".join(cells) +
          f" | {d / best:.3f} ({j['best_heuristic']}) | {d / rows['cp']['makespan_s']:.3f} |" +
          ("" if not samples else f" {rows[f'best-of-{samples}']['makespan_s'] / best:.3f} |"
           if f"best-of-{samples}" in rows else " — |"))
EOF
