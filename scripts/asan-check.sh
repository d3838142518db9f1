#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer over the whole test suite: every ctest test of the
# default run (label perf excluded), with LibTorch, COIN-OR and the CUDA backend compiled in (CUDA's
# tests skip without a GPU), and every `doppler` / `doppler-learn` process those tests start.
#
#   scripts/asan-check.sh [-j N] [-R REGEX] [--no-build]
#
# -j N: ctest's parallelism (default: nproc).  -R REGEX: only the tests ctest's -R selects.
# --no-build: run what build/sanitize holds.
#
# Why not just `ctest` in a sanitize tree: many tests start the CLI and check only its exit status,
# and several expect a failure (bad input must exit 1 or 2). A sanitizer's abort in such a child exits
# non-zero too, so the test would pass over it. Here
# - ASan and LSan write every process's report to build/sanitize/reports/asan.<pid> (log_path; exit
#   status 86) and the check fails on any such file, whatever the tests' verdicts;
# - UBSan (GCC's libubsan runs beside libasan and then ignores log_path and exitcode: it prints to
#   stderr and exits 1) is caught where that stderr goes: the tests' helpers that run a child
#   (tests/cli_run.hpp, tests/actors/shell.hpp) fail on a report in what they captured
#   (tests/sanitizer_output.hpp), and this script fails on one anywhere in ctest's full log
#   (Testing/Temporary/LastTest.log: every test's output, a worker's inherited stderr included).
#
# Leaks are checked too (LeakSanitizer, every process, LibTorch's included: none reported).
#
# One case is left out: "an op that fails while another device runs a kernel ends the process at
# once" checks a wall-clock bound (< 4 s) that instrumented kernels cannot meet (about 25 s here).
#
# Builds in build/sanitize (preset sanitize: RelWithDebInfo, -fsanitize=address,undefined,
# -fno-sanitize-recover=undefined; about 35 min on 2 cores from scratch). Exit status: 0 when every
# test passed and no process reported.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
regex=""
build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    -j) jobs="$2"; shift 2 ;;
    -R) regex="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "asan-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "asan-check.sh: -j takes a positive count, got '$jobs'" >&2; exit 2; }

tree=build/sanitize
if [[ $build -eq 1 ]]; then
  echo "== building with ASan + UBSan ($tree)"
  cmake --preset sanitize >/dev/null
  cmake --build "$tree" -j "$(nproc)" >"$root/$tree.build.log" 2>&1 ||
    { tail -30 "$root/$tree.build.log" >&2; echo "asan-check.sh: build failed (log: $tree.build.log)" >&2; exit 1; }
fi
[[ -x "$tree/cli/doppler" ]] || { echo "asan-check.sh: $tree/cli/doppler is missing (run without --no-build)" >&2; exit 2; }

reports="$root/$tree/reports"
rm -rf "$reports"
mkdir -p "$reports"

# ---- a canary per sanitizer: if these are not reported into log_path, silence below means nothing --
cat >"$tree/canary.cpp" <<'CANARY'
#include <climits>
#include <cstdlib>
#include <cstring>
int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "ub") == 0) {
    volatile int big = INT_MAX;
    return big + argc;  // signed overflow
  }
  char* p = static_cast<char*>(std::malloc(8));
  std::free(p);
  return p[argc];  // heap use after free
}
CANARY
c++ -std=c++20 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined "$tree/canary.cpp" -o "$tree/canary"
export ASAN_OPTIONS="log_path=$reports/asan exitcode=86 detect_leaks=1 abort_on_error=0 strict_string_checks=1 detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
"$tree/canary" >/dev/null 2>&1 || true
ub=$("$tree/canary" ub 2>&1 >/dev/null || true)
shopt -s nullglob
if ! grep -qs 'heap-use-after-free' "$reports"/asan.* || [[ "$ub" != *": runtime error: signed integer overflow"* ]]; then
  echo "asan-check.sh: a sanitizer did not report the canary (ASan into $reports, UBSan on stderr); its silence below would mean nothing" >&2
  exit 1
fi
rm -f "$reports"/asan.*
echo "canary: ASan and UBSan report planted errors"

# ---- the suite -------------------------------------------------------------------------------------
export DOPPLER_PAPER_DIR="$root/workloads/doppler-paper"
args=(--test-dir "$tree" -LE perf -j "$jobs" --timeout 3000 --output-on-failure
      -E 'ends the process at once')
[[ -n "$regex" ]] && args+=(-R "$regex")
start=$SECONDS
failed=0
ctest "${args[@]}" >"$reports/ctest.out" 2>&1 || failed=1
grep -E '^[0-9]+% tests passed|tests failed out of' "$reports/ctest.out" || true
grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)' "$reports/ctest.out" || true
echo "ctest: $((SECONDS - start)) s (log: $tree/reports/ctest.out)"

log="$tree/Testing/Temporary/LastTest.log"
[[ -f "$log" ]] || { echo "asan-check.sh: ctest wrote no $log" >&2; exit 1; }
cp "$log" "$reports/LastTest.log"
found=("$reports"/asan.*)
ub_count=$(grep -c ': runtime error: ' "$reports/LastTest.log" || true)
if [[ ${#found[@]} -gt 0 || $ub_count -gt 0 ]]; then
  echo "sanitizers reported: ASan/LSan in ${#found[@]} process(es), UBSan $ub_count time(s) in the tests' output:"
  for f in "${found[@]}"; do
    echo "--- $f"
    grep -m 1 -A 14 -E 'ERROR: (Address|Leak)Sanitizer' "$f" || head -20 "$f"
  done
  grep -m 5 -B 2 -A 8 ': runtime error: ' "$reports/LastTest.log" || true
  exit 1
fi
[[ $failed -eq 0 ]] || { echo "asan-check.sh: tests failed (no sanitizer report)"; exit 1; }
echo "ASan + UBSan: no reports"
