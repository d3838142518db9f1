#!/usr/bin/env bash
# The demo: install what doppler needs (Debian packages only), build it, and run the main job:
# generate a Llama block, validate it and print its summary.
#   scripts/demo.sh            (as root, or a user with sudo, on Debian 12)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target doppler
bin=build/release/cli/doppler
out=build/demo
mkdir -p "$out"

echo
echo "== doppler workload llama-block: a Llama attention block sharded over 4 devices"
"$bin" workload llama-block --shards 4 -o "$out/llama-block.json"
echo
echo "== doppler validate"
"$bin" validate "$out/llama-block.json" workloads/doppler-paper/transformer_block_215nodes.txt
echo
echo "== doppler cluster p100x4 (4x P100, NVLink)"
"$bin" cluster p100x4 -o "$out/p100x4.json"
"$bin" validate "$out/p100x4.json"
