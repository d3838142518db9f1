#!/usr/bin/env bash
# Install what doppler needs (Debian packages only), build everything, run the test suite
# (the `perf` benchmarks are excluded; `ctest --preset perf` runs them).
#   scripts/test.sh                 release build
#   DOPPLER_PRESET=sanitize scripts/test.sh   ASan + UBSan build
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${DOPPLER_PRESET:-release}"
scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
jobs="${DOPPLER_JOBS:-$(nproc)}"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
