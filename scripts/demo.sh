#!/usr/bin/env bash
# The demo: install what doppler needs (Debian packages only), build it, and run the main job:
# generate a Llama block, place it with the critical-path teacher and HEFT on 4 virtual CPU devices,
# simulate it, run it for real on the actor runtime (measured vs simulated, a Perfetto trace), train
# DOPPLER on a graph of the DOPPLER paper and compare it with the placers there, and plan an allgather
# on a DGX-1.
#   scripts/demo.sh            (as root, or a user with sudo, on Debian 12)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target doppler
bin=build/release/cli/doppler
out=build/demo
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "doppler workload llama-block --shards 4: a Llama attention block sharded over 4 devices"
"$bin" workload llama-block --shards 4 -o "$out/llama-block.json"
step "doppler validate (our format and the paper's text format)"
"$bin" validate "$out/llama-block.json" workloads/doppler-paper/transformer_block_215nodes.txt

for method in cp heft; do
  step "doppler place --method $method on cpu:4 (4 virtual CPU devices)"
  "$bin" place --graph "$out/llama-block.json" --cluster cpu:4 --method "$method" -o "$out/placement-$method.json"
  step "doppler run: execute it with real kernels on the actor runtime, work-conserving"
  "$bin" run --graph "$out/llama-block.json" --cluster cpu:4 --placement "$out/placement-$method.json" \
    --repeat 5 --trace "$out/trace-$method.json"
done
step "doppler run --mode bsp: the same cp placement level by level, with barriers"
"$bin" run --graph "$out/llama-block.json" --cluster cpu:4 --placement "$out/placement-cp.json" --mode bsp --repeat 5

layer=workloads/doppler-paper/full_transformer_layer_261nodes.txt
learned=()
if [[ -x build/release/cli/doppler-learn ]]; then  # built with LibTorch (the default where it is installed)
  step "doppler train: DOPPLER's SEL + PLC policies on the paper's Llama layer (imitate cp, then RL in the simulator)"
  "$bin" train --graph "$layer" --cluster doppler-paper:4 --model simple --il-episodes 200 --rl-episodes 2000 \
    --batch 8 --sibling-feature --temperature 1.5 --self-imitation 2 --self-imitation-gate --active-search 0.05 \
    -o "$out/policy.pt" --csv "$out/train.csv" --svg "$out/train.svg"
  learned=(--policy "$out/policy.pt")
fi
step "doppler compare: placers${learned:+ and DOPPLER} on the paper's Llama layer (doppler-paper:4, the paper's simulator model)"
"$bin" compare --graph "$layer" --cluster doppler-paper:4 \
  --model simple --seeds 3 --budget 2000 "${learned[@]}" --csv "$out/compare.csv" --svg "$out/compare.svg"

step "doppler compare-comm: an allgather on a DGX-1 (8x V100, hybrid cube-mesh), MILP vs the ring"
"$bin" compare-comm --cluster dgx1-v100 --collective allgather --chunk-bytes 1048576 --chunks-per-gpu 2 --methods milp,greedy,ring,direct

step "doppler simulate --transfers planned: a Llama-7B layer on the DGX-1, shared tensors as multicast plans"
"$bin" workload llama-layer --preset llama-7b --shards 8 -o "$out/llama7b-layer.json" -q
"$bin" place --graph "$out/llama7b-layer.json" --cluster dgx1-v100 --method heft -o "$out/placement-dgx1.json" >/dev/null
for transfers in direct planned; do
  printf '%-8s ' "$transfers"
  "$bin" simulate --graph "$out/llama7b-layer.json" --cluster dgx1-v100 --placement "$out/placement-dgx1.json" \
    --transfers "$transfers" --json | grep -o '"makespan_s":[0-9.e-]*'
done

printf '\nTraces (open in https://ui.perfetto.dev): %s/trace-cp.json %s/trace-heft.json\n' "$out" "$out"
printf 'Comparison chart: %s/compare.svg\n' "$out"
if [[ -f $out/train.svg ]]; then printf 'Training curve: %s/train.svg\n' "$out"; fi
