#!/usr/bin/env bash
# GPU check of the CUDA backend (issue 8): builds with CUDA, runs the CUDA tests and the Llama-7B
# block benchmark on 4 virtual devices of one GPU (GPU-resident WC vs BSP, the actor engine with the
# cuda backend, placements cp / round-robin / a trained DOPPLER policy when the learner is built),
# and prints the results as markdown (also written to $OUT/gpu-check.md, or build-gpu/gpu-check.md).
# Budget: under 8 minutes on one GPU; later steps are skipped, and say so, when time runs short.
#
#   scripts/gpu-check.sh            # full check
#   SMALL=1 scripts/gpu-check.sh    # default (small) dimensions instead of Llama-7B
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
REPORT_DIR=${OUT:-$BUILD}
mkdir -p "$REPORT_DIR"
REPORT="$REPORT_DIR/gpu-check.md"
BUDGET=${BUDGET:-470}  # seconds for the whole script
JOBS=${JOBS:-$(nproc)}
: >"$REPORT"
say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
left() { echo $((BUDGET - SECONDS)); }

say "## doppler GPU check — $(date -u '+%Y-%m-%d %H:%M UTC')"
say ""
if command -v nvidia-smi >/dev/null 2>&1; then
  say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)" \
      "($(nvidia-smi -L | wc -l) visible); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
else
  say "nvidia-smi not found: no GPU driver on this machine. The build still runs; GPU tests will skip."
fi
say ""

# ---- build ------------------------------------------------------------------------------------------
t0=$SECONDS
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDOPPLER_WITH_CUDA=ON \
  -DDOPPLER_BUILD_BENCHMARKS=OFF >"$REPORT_DIR/configure.log" 2>&1 || { say "configure FAILED (see configure.log)"; exit 1; }
cuda_tests=(test_cuda_backend test_cuda_runner test_cuda_gpu)
grep -q 'actors=ON' "$REPORT_DIR/configure.log" && cuda_tests+=(test_cuda_actors)  # the actor engine on the GPU
cmake --build "$BUILD" -j "$JOBS" --target doppler_cuda "${cuda_tests[@]}" cuda_llama_block \
  >"$REPORT_DIR/build.log" 2>&1 || { say "build FAILED (see build.log)"; tail -30 "$REPORT_DIR/build.log"; exit 1; }
say "Build of the CUDA targets: $((SECONDS - t0)) s with $JOBS jobs."
say ""

# ---- tests ------------------------------------------------------------------------------------------
say "### Tests"
say ""
say "| suite | result | skipped GPU cases |"
say "|---|---|---|"
status=0
for t in "${cuda_tests[@]}"; do
  log="$REPORT_DIR/$t.log"
  timeout $(( $(left) > 60 ? 240 : 60 )) "$BUILD/tests/$t" -s >"$log" 2>&1
  rc=$?
  summary=$(grep -E '^\[doctest\] test cases' "$log" | sed 's/\[doctest\] //; s/ *| */, /g; s/  */ /g')
  skips=$(grep -c 'skipped: ' "$log")
  [ $rc -ne 0 ] && status=1
  say "| $t | ${summary:-no summary (rc $rc)} | $skips |"
done
say ""
say "Numerical and timing lines from the tests:"
say ""
say '```'
grep -hE 'MESSAGE: ' "$REPORT_DIR"/test_cuda_*.log | sed 's/.*MESSAGE: //' | awk '!seen[$0]++' | tee -a "$REPORT"
say '```'
say ""

# ---- placements: a trained DOPPLER policy, if the learner and time allow ------------------------------------
bench_args=(--devices 4 --streams 4 --repeat 3 --placers cp,round-robin)
[ -n "${SMALL:-}" ] && bench_args+=(--small)
dims=(--preset llama-7b)
[ -n "${SMALL:-}" ] && dims=()
if grep -q 'torch=ON' "$REPORT_DIR/configure.log" && [ "$(left)" -gt 300 ]; then
  t1=$SECONDS
  if timeout 150 cmake --build "$BUILD" -j "$JOBS" --target doppler >"$REPORT_DIR/build-cli.log" 2>&1 &&
     "$BUILD/cli/doppler" workload llama-block "${dims[@]}" --shards 4 -o "$REPORT_DIR/llama-block.json" >/dev/null &&
     timeout 90 "$BUILD/cli/doppler" train --graph "$REPORT_DIR/llama-block.json" --cluster cpu:4 \
       --il-episodes 40 --rl-episodes 40 -o "$REPORT_DIR/policy.ckpt" --best "$REPORT_DIR/doppler.json" \
       >"$REPORT_DIR/train.log" 2>&1; then
    bench_args+=(--placement "doppler=$REPORT_DIR/doppler.json")
    say "DOPPLER placement: \`doppler train\` (40 imitation + 40 simulator-RL episodes, cluster cpu:4), best placement, $((SECONDS - t1)) s."
  else
    say "DOPPLER placement: skipped (CLI build or training failed or timed out; see build-cli.log / train.log)."
  fi
else
  say "DOPPLER placement: skipped (learner not built, or under 300 s of budget left)."
fi
say ""

# ---- the Llama block benchmark ------------------------------------------------------------------------------
if grep -q 'actors=ON' "$REPORT_DIR/configure.log"; then
  bench_args+=(--actors)
else
  say "Actor engine runs: skipped (CAF actor layer not built)."
fi
if [ -z "${SMALL:-}" ] && [ "$(left)" -gt 120 ]; then
  say "Smoke run first, default (small) dimensions, GPU-resident only:"
  say ""
  timeout 60 "$BUILD/runtime/cuda/cuda_llama_block" --small --devices 4 --streams 4 --repeat 3 --placers cp 2>&1 | tee -a "$REPORT"
  [ "${PIPESTATUS[0]}" -ne 0 ] && { say "smoke run FAILED or timed out"; status=1; }
fi
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 10 )) "$BUILD/runtime/cuda/cuda_llama_block" "${bench_args[@]}" 2>&1 | tee -a "$REPORT"
  [ "${PIPESTATUS[0]}" -ne 0 ] && { say "benchmark FAILED or timed out"; status=1; }
else
  say "Benchmark: skipped (budget spent)."
fi
say ""
say "Total: $SECONDS s. Virtual devices share one GPU (its SMs, memory bandwidth and copy engines):"
say "these are single-GPU numbers, not multi-GPU ones."
exit $status
