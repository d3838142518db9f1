#!/usr/bin/env bash
# Install what doppler needs (Debian packages only), build everything, run the test suite
# (the `perf` benchmarks are excluded; `ctest --preset perf` runs them).
#   scripts/test.sh                 release build
#   DOPPLER_PRESET=sanitize scripts/test.sh   ASan + UBSan build (scripts/asan-check.sh also
#                                             catches reports in child processes: docs/testing.md)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${DOPPLER_PRESET:-release}"
scripts/install-deps.sh
# Of configure's output only its summary line (which optional parts — actors, torch, coin, cuda —
# this build has, so a log shows when a part's tests were left out); all of it when it fails.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cmake --preset "$preset" >"$log" || { cat "$log"; exit 1; }
grep -E '^-- doppler: actors=' "$log" || true
jobs="${DOPPLER_JOBS:-$(nproc)}"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
