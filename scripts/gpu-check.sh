#!/usr/bin/env bash
# GPU check of the CUDA backend (issue 8): the CUDA tests and the Llama-7B block benchmark on 4
# virtual devices of one GPU (GPU-resident WC vs BSP, the actor engine with the cuda backend,
# placements cp / round-robin / a trained DOPPLER policy), printed as markdown and written to
# $OUT/gpu-check.md (or build-gpu/gpu-check.md), with every log in logs.tar.gz beside it.
# Budget: under 8 minutes on one GPU; later steps are skipped, and say so, when time runs short.
#
#   scripts/gpu-check.sh                     # builds with CUDA here (needs scripts/install-deps.sh's packages)
#   scripts/gpu-check.sh --bundle gpu-bundle # runs what scripts/gpu-bundle.sh built elsewhere: for a GPU
#                                            # machine without our Debian packages (the lent H100/H200)
#   SMALL=1 scripts/gpu-check.sh ...         # default (small) dimensions instead of Llama-7B
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) BUNDLE=${2:?--bundle needs a folder (scripts/gpu-bundle.sh writes one)}; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
BUILD=${BUILD:-build-gpu}
REPORT_DIR=${OUT:-$BUILD}
mkdir -p "$REPORT_DIR"
REPORT="$REPORT_DIR/gpu-check.md"
LOGS=$(mktemp -d)  # logs and side files; only the report and logs.tar.gz go to REPORT_DIR ($OUT keeps 8 files)
BUDGET=${BUDGET:-420}  # seconds for the whole script (the lent machine's 15 minutes also pay its start)
JOBS=${JOBS:-$(nproc)}
: >"$REPORT"
say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
left() { echo $((BUDGET - SECONDS)); }
# A step's timeout: at most CAP seconds and never past the budget less RESERVE (kept for later steps).
# At least 1: `timeout 0` would mean no limit at all.
step_timeout() { local cap=$1 reserve=$2 t; t=$(( $(left) - reserve )); [ $t -gt "$cap" ] && t=$cap; [ $t -lt 1 ] && t=1; echo $t; }
# The logs go to REPORT_DIR after every step, not only at the end: a run stopped at the device call's
# limit (SIGTERM, or SIGKILL, which no trap sees) still brings back what the finished steps logged.
save_logs() { tar -C "$LOGS" -czf "$REPORT_DIR/logs.tar.gz.part" . 2>/dev/null && mv -f "$REPORT_DIR/logs.tar.gz.part" "$REPORT_DIR/logs.tar.gz"; }
finish() {
  save_logs
  rm -rf "$LOGS"
  exit "$1"
}
trap 'say ""; say "Stopped by a signal after $SECONDS s: the report ends here."; finish 124' TERM INT

say "## doppler GPU check — $(date -u '+%Y-%m-%d %H:%M UTC')"
say ""
gpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=1
  say "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)" \
      "($(nvidia-smi -L | wc -l) visible); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version 2>/dev/null | head -1)"
else
  say "nvidia-smi not found: no GPU driver on this machine. GPU tests will skip."
fi
say ""

# ---- the binaries: built here, or unpacked from a bundle ------------------------------------------------
cuda_tests=(test_cuda_gpu test_cuda_backend test_cuda_runner)  # test_cuda_gpu first: it tells the most
placement= placement_note=
if [ -n "$BUNDLE" ]; then
  [ -f "$BUNDLE/bundle.tar.gz" ] || { say "no $BUNDLE/bundle.tar.gz: run scripts/gpu-bundle.sh $BUNDLE where the project builds"; finish 2; }
  run=$(mktemp -d)
  tar -C "$run" -xzf "$BUNDLE/bundle.tar.gz" || { say "cannot unpack $BUNDLE/bundle.tar.gz"; finish 2; }
  say "Bundle: $(sed -n 1p "$run/MANIFEST"), $(sed -n 2p "$run/MANIFEST")."
  # CUDA's libraries come from this machine (they must match its driver): the toolkit's folders, the
  # driver's, then wherever a Python wheel put them (nvidia-cublas, nvidia-nccl-cu13, ...).
  dirs=()
  for lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    found=
    # On the loader's own path (ldconfig's cache) nothing needs adding.
    ldconfig -p 2>/dev/null | grep -qF "	$lib (" && continue
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib \
             /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
      [ -e "$d/$lib" ] && { found=$d; break; }
    done
    [ -z "$found" ] && found=$(find /usr /opt -name "$lib" -print -quit 2>/dev/null | xargs -r dirname)
    if [ -n "$found" ]; then dirs+=("$found"); else say "CUDA library $lib: not found on this machine"; fi
  done
  cuda_path=$(printf '%s\n' "${dirs[@]}" | awk 'NF && !seen[$0]++' | paste -sd: -)
  export LD_LIBRARY_PATH="$run/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "Library path: bundle, then ${cuda_path:-no CUDA folder found}."
  for b in "$run"/bin/*; do
    missing=$(ldd "$b" 2>&1 | grep -E 'not found|version .* not found' | sort -u | tr -s ' \t' ' ' | paste -sd';' -)
    [ -n "$missing" ] && say "$(basename "$b"): cannot load: $missing"
  done
  bin_of() { echo "$run/bin/$1"; }
  [ -x "$run/bin/test_cuda_actors" ] && cuda_tests+=(test_cuda_actors) && actors=1 || actors=0
  if [ -f "$run/doppler.json" ]; then
    placement="$run/doppler.json"
    placement_note="$(grep '^placement' "$run/MANIFEST" | sed 's/^placement doppler.json: //'), in the bundle"
    cp "$run/train.log" "$LOGS/" 2>/dev/null
  fi
  say ""
else
  t0=$SECONDS
  # NCCL: next to CUDA's libraries (the Debian setup here), else from a Python wheel (nvidia-nccl-cu13).
  nccl_flags=()
  if [ ! -e /usr/local/cuda/lib/libnccl.so ] && [ ! -e /usr/local/cuda/lib64/libnccl.so ]; then
    wheel=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
    [ -n "$wheel" ] && [ -e "$wheel/lib/libnccl.so.2" ] &&
      nccl_flags=(-DDOPPLER_NCCL_LIBRARY="$wheel/lib/libnccl.so.2" -DDOPPLER_NCCL_INCLUDE_DIR="$wheel/include")
  fi
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDOPPLER_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
    "${nccl_flags[@]}" -DDOPPLER_BUILD_BENCHMARKS=OFF >"$LOGS/configure.log" 2>&1 ||
    { say "configure FAILED (configure.log in logs.tar.gz; last lines below). On a machine without our Debian"
      say "packages build a bundle where the project builds (scripts/gpu-bundle.sh) and run with --bundle."
      say '```'; tail -15 "$LOGS/configure.log" | tee -a "$REPORT"; say '```'; finish 1; }
  actors=0
  grep -q 'actors=ON' "$LOGS/configure.log" && cuda_tests+=(test_cuda_actors) && actors=1
  cmake --build "$BUILD" -j "$JOBS" --target doppler_cuda "${cuda_tests[@]}" cuda_llama_block doppler \
    >"$LOGS/build.log" 2>&1 || { say "build FAILED (build.log in logs.tar.gz)"; tail -30 "$LOGS/build.log"; finish 1; }
  bin_of() {
    case "$1" in
      cuda_llama_block) echo "$BUILD/runtime/cuda/cuda_llama_block" ;;
      doppler) echo "$BUILD/cli/doppler" ;;
      *) echo "$BUILD/tests/$1" ;;
    esac
  }
  say "Build of the CUDA targets: $((SECONDS - t0)) s with $JOBS jobs."
  say ""
  # A trained DOPPLER placement, if the learner builds here and time allows.
  if grep -q 'torch=ON' "$LOGS/configure.log" && [ "$(left)" -gt 300 ]; then
    t1=$SECONDS
    if timeout 150 cmake --build "$BUILD" -j "$JOBS" --target doppler doppler-learn >"$LOGS/build-cli.log" 2>&1 &&
       "$BUILD/cli/doppler" workload llama-block --preset llama-7b --shards 4 -q -o "$LOGS/llama-block.json" &&
       timeout 90 "$BUILD/cli/doppler" train --graph "$LOGS/llama-block.json" --cluster cpu:4 --model wc \
         --il-episodes 200 --rl-episodes 2000 --batch 8 -o "$LOGS/policy.pt" --best "$LOGS/doppler.json" \
         >"$LOGS/train.log" 2>&1; then
      placement="$LOGS/doppler.json"
      placement_note="doppler train --cluster cpu:4 --model wc, 200 imitation + 2000 simulator-RL episodes, best placement, trained here in $((SECONDS - t1)) s"
    else
      say "DOPPLER placement: skipped (CLI build or training failed or timed out; build-cli.log / train.log)."
    fi
  fi
fi

# ---- tests ------------------------------------------------------------------------------------------
say "### Tests"
say ""
say "| suite | result | skipped GPU cases |"
say "|---|---|---|"
status=0
for t in "${cuda_tests[@]}"; do
  log="$LOGS/$t.log"
  # keep 200 s for the benchmark; under 5 s left for this suite it is not started at all
  if [ $(( $(left) - 200 )) -lt 5 ]; then say "| $t | not run: budget spent | |"; status=1; continue; fi
  limit=$(step_timeout 120 200)
  timeout "$limit" "$(bin_of "$t")" -s >"$log" 2>&1
  rc=$?
  summary=$(grep -E '^\[doctest\] test cases' "$log" | sed 's/\[doctest\] //; s/ *| */, /g; s/  */ /g')
  [ $rc -eq 124 ] && summary="timed out after $limit s${summary:+ ($summary)}"
  skips=$(grep -c 'skipped: no GPU\|skipped: NCCL' "$log")
  [ $rc -ne 0 ] && status=1
  say "| $t | ${summary:-no summary (rc $rc): $(tail -1 "$log")} | $skips |"
done
save_logs
say ""
say "Numerical and timing lines from the tests:"
say ""
say '```'
cat "$LOGS"/test_cuda_*.log 2>/dev/null | grep -E 'MESSAGE: ' | sed 's/.*MESSAGE: //' | awk '!seen[$0]++' | tee -a "$REPORT"
say '```'
say ""

# ---- the CLI on the GPU: doppler run --backend cuda against the cpu backend -----------------------------
if [ "$gpu" = 0 ]; then
  say "\`doppler run --backend cuda\`: skipped (no GPU)."
  say ""
elif [ -x "$(bin_of doppler)" ] && [ "$(left)" -gt 260 ]; then
  say "### \`doppler run\` on the GPU"
  say ""
  say "The generated Llama block (default dimensions), cluster cpu:4, cp placement, 5 runs after a warm-up;"
  say "\`--backend cuda\`: the 4 devices are virtual devices of GPU 0. Traces in logs.tar.gz."
  say ""
  say "| backend | mode | mean ms | min ms | simulated ms | transfers |"
  say "|---|---|---|---|---|---|"
  for backend in cuda cpu; do
    for mode in wc bsp; do
      j="$LOGS/run-$backend-$mode.json"
      if timeout -k 5 "$(step_timeout 60 200)" "$(bin_of doppler)" run --backend "$backend" --mode "$mode" --repeat 5 --json \
           --trace "$LOGS/trace-$backend-$mode.json" >"$j" 2>"$LOGS/run-$backend-$mode.err"; then
        say "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("| %s | %s | %.3f | %.3f | %.3f | %d |" % (sys.argv[2], sys.argv[3], d["makespan_s"]*1e3, d["makespan_min_s"]*1e3, d["simulated_s"]*1e3, d["transfers"]))' "$j" "$backend" "$mode")"
      else
        say "| $backend | $mode | FAILED: $(tail -1 "$LOGS/run-$backend-$mode.err") | | | |"; status=1
      fi
    done
  done
  say ""
  save_logs
else
  say "\`doppler run --backend cuda\`: skipped ($( [ -x "$(bin_of doppler)" ] && echo "budget: $(left) s left, it needs 260" || echo "no doppler binary in the bundle"))."
  say ""
fi

# ---- the Llama block benchmark ------------------------------------------------------------------------------
bench_args=(--devices 4 --streams 4 --repeat 3 --placers cp,round-robin)
[ -n "${SMALL:-}" ] && bench_args+=(--small)
if [ -n "$placement" ]; then
  bench_args+=(--placement "doppler=$placement")
  say "DOPPLER placement: $placement_note."
else
  say "DOPPLER placement: none (the learner was not built, or its training was skipped)."
fi
if [ "$actors" = 1 ]; then
  bench_args+=(--actors)
else
  say "Actor engine runs: skipped (CAF actor layer not built)."
fi
say ""
if [ -z "${SMALL:-}" ] && [ "$(left)" -gt 120 ]; then
  say "Smoke run first, default (small) dimensions, GPU-resident only:"
  say ""
  timeout -k 5 60 "$(bin_of cuda_llama_block)" --small --devices 4 --streams 4 --repeat 3 --placers cp 2>&1 | tee -a "$REPORT"
  [ "${PIPESTATUS[0]}" -ne 0 ] && { say "smoke run FAILED or timed out"; status=1; }
fi
if [ "$(left)" -gt 60 ]; then
  timeout -k 5 $(( $(left) - 10 )) "$(bin_of cuda_llama_block)" "${bench_args[@]}" 2>&1 | tee -a "$REPORT"
  [ "${PIPESTATUS[0]}" -ne 0 ] && { say "benchmark FAILED or timed out"; status=1; }
else
  say "Benchmark: skipped (budget spent)."; status=1
fi
say ""
save_logs

# ---- memcheck of the kernels on odd shapes, with what budget is left -----------------------------------------
# compute-sanitizer finds out-of-bounds and misaligned accesses the tolerance checks cannot (it works
# on Firecracker machines, not under gVisor: /work/.library/device/KINDS.md); a few kernels on odd
# shapes are enough for the index arithmetic.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ "$gpu" = 1 ] && [ -n "$sanitizer" ] && [ "$(left)" -gt 60 ]; then
  timeout -k 5 $(( $(left) - 10 )) "$sanitizer" --tool memcheck --error-exitcode 3 "$(bin_of test_cuda_gpu)" \
    -tc="every op kind on odd shapes*" >"$LOGS/memcheck.log" 2>&1
  rc=$?
  case $rc in
    0) say "compute-sanitizer memcheck, every op kind on odd shapes: $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -1)" ;;
    124) say "compute-sanitizer memcheck: timed out (memcheck.log)" ;;
    *) say "compute-sanitizer memcheck: rc $rc: $(grep -E 'ERROR SUMMARY|Invalid|not supported' "$LOGS/memcheck.log" | head -3 | paste -sd';' -)"
       # rc 3 is a memcheck finding, unless the sanitizer could not attach at all (gVisor: "not supported")
       [ $rc -eq 3 ] && ! grep -q 'not supported' "$LOGS/memcheck.log" && status=1 ;;
  esac
else
  say "compute-sanitizer memcheck: skipped (no GPU, no compute-sanitizer, or under 60 s left)."
fi
say ""
say "Total: $SECONDS s. Virtual devices share one GPU (its SMs, memory bandwidth and copy engines):"
say "these are single-GPU numbers, not multi-GPU ones."
finish $status
