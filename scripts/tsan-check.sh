#!/usr/bin/env bash
# ThreadSanitizer over everything that runs on several threads outside the learner: the CAF actor
# layer (dispatcher, device actors and their worker pools, remote workers through the middleman,
# the learner and comm-planner actors), the host buffer pool and the CPU kernels' threads.
#
# Debian's libcaf is not built with -fsanitize=thread, so TSan cannot see the synchronization of a
# CAF mailbox: every message that carries a pointer reads as a race (thousands of reports, all
# false). This script therefore builds CAF 0.17.6 itself, from Debian's source package, with
# ThreadSanitizer, and runs doppler's tests against that library (LD_LIBRARY_PATH); it checks with
# ldd that the instrumented library is the one loaded.
#
#   scripts/tsan-check.sh [--caf-source DIR|TARBALL] [--soak N] [--torch]
#
# --caf-source: an unpacked actor-framework-0.17.6 tree or its .orig.tar.gz. Without it the source
#   is fetched with `apt-get source --download-only actor-framework` into build/tsan-caf/, which
#   needs a deb-src line in apt's sources; as root the script adds one for bookworm for the fetch
#   and removes it afterwards.
# --soak N: also run scripts/soak_run.sh for N invocations with the instrumented `doppler` (its
#   cases in turn: local, over workers, online, failover, concurrent; 8 runs each once).
# --torch: build with LibTorch too (in build/tsan-torch; ~10 min more) and add test_train_cli, so the
#   DOPPLER learner's paths run instrumented: phase III through the learner actor, online learning,
#   doppler-learn processes. LibTorch itself is not instrumented; doppler runs it on one thread.
# Builds in build/tsan (preset tsan: no LibTorch, no CUDA) and build/tsan-caf; reports go to
# build/tsan/reports/ (build/tsan-torch/reports/). Exit status: 0 when every test passed and TSan
# reported nothing.
#
# One case is left out: "an op that fails while another device runs a kernel ends the process at
# once" checks a wall-clock bound (< 4 s) that instrumented kernels cannot meet (about 100 s here).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
caf_source=""
soak=0
torch=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --caf-source) caf_source="$2"; shift 2 ;;
    --soak) soak="$2"; shift 2 ;;
    --torch) torch=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "tsan-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$soak" =~ ^[0-9]+$ ]] || { echo "tsan-check.sh: --soak takes a count, got '$soak'" >&2; exit 2; }

caf_dir="$root/build/tsan-caf"
mkdir -p "$caf_dir"

# ---- 1. CAF 0.17.6's source ---------------------------------------------------------------------
src="$caf_dir/actor-framework-0.17.6"
if [[ -d "$caf_source" ]]; then
  src="$(cd "$caf_source" && pwd)"
elif [[ -f "$src/CMakeLists.txt" ]]; then
  :  # unpacked by an earlier run (unpacking again would touch the sources and rebuild CAF)
elif [[ -n "$caf_source" ]]; then
  tar -xzf "$caf_source" -C "$caf_dir"
else
  # The .orig tarball is all we need (apt-get fails when the Debian tarball is missing from the
  # mirror, as it is for 0.17.6-2.1, so its status is not the test).
  fetch() { (cd "$caf_dir" && apt-get source --download-only actor-framework >/dev/null 2>&1) || true; }
  orig() { ls "$caf_dir"/actor-framework_0.17.6*.orig.tar.gz 2>/dev/null | head -1; }
  fetch
  if [[ -z "$(orig)" ]]; then
    [[ $(id -u) -eq 0 ]] || {
      echo "tsan-check.sh: could not fetch CAF's source (no deb-src entry in apt's sources?); add one or pass --caf-source" >&2
      exit 2
    }
    added=/etc/apt/sources.list.d/doppler-tsan-src.sources
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$added"
    trap 'rm -f "$added"; apt-get update -qq >/dev/null 2>&1 || true' EXIT
    apt-get update -qq >/dev/null
    fetch
  fi
  [[ -n "$(orig)" ]] || { echo "tsan-check.sh: could not fetch CAF 0.17.6's source" >&2; exit 2; }
  tar -xzf "$(orig)" -C "$caf_dir"
fi
[[ -f "$src/libcaf_core/caf/actor.hpp" ]] || { echo "tsan-check.sh: $src is not a CAF source tree" >&2; exit 2; }
grep -q 'CAF_VERSION 1706' "$src/libcaf_core/caf/config.hpp" ||
  { echo "tsan-check.sh: $src is not CAF 0.17.6 (Debian's headers are; the ABI must match)" >&2; exit 2; }

# ---- 2. CAF core and io with ThreadSanitizer (Debian's build options: log level quiet, defaults) ---
# 0.17.6's receive_buffer.hpp uses std::numeric_limits without <limits> (GCC 12 refuses it).
rb="$src/libcaf_io/caf/io/network/receive_buffer.hpp"
grep -q '#include <limits>' "$rb" || sed -i '0,/#include <cstddef>/s//#include <cstddef>\n#include <limits>/' "$rb"
cmake -S "$src" -B "$caf_dir/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAF_NO_EXAMPLES=yes \
  -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_COMPILER_CHECK=yes "-DCMAKE_CXX_FLAGS=-fsanitize=thread -fno-omit-frame-pointer" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread" >/dev/null
echo "== building CAF 0.17.6 with ThreadSanitizer (build/tsan-caf)"
cmake --build "$caf_dir/build" -j "$(nproc)" >/dev/null
caf_lib="$caf_dir/build/lib"

# ---- 3. doppler with ThreadSanitizer ------------------------------------------------------------
tree=build/tsan
tests=(test_actor_engine test_actor_faults test_actor_transfers test_actor_sharing test_actor_resident
       test_actor_remote test_actor_protocol test_actor_serialization test_actor_learner test_actor_cli
       test_host_buffers test_cpu_kernels)
targets=(doppler)
if [[ $torch -eq 1 ]]; then
  tree=build/tsan-torch
  tests+=(test_train_cli)
  targets+=(doppler-learn)
  echo "== building doppler with ThreadSanitizer and LibTorch ($tree)"
  cmake --preset tsan -B "$tree" -DDOPPLER_WITH_TORCH=ON >/dev/null
else
  echo "== building doppler with ThreadSanitizer ($tree)"
  cmake --preset tsan >/dev/null
fi
cmake --build "$tree" -j "$(nproc)" --target "${targets[@]}" "${tests[@]}" >/dev/null

export LD_LIBRARY_PATH="$caf_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DOPPLER_PAPER_DIR="$root/workloads/doppler-paper"
for lib in libcaf_core libcaf_io; do
  ldd "$tree/tests/test_actor_remote" | grep -q "$lib.so.* => $caf_lib/" ||
    { echo "tsan-check.sh: $lib is not loaded from $caf_lib" >&2; exit 1; }
done

# ---- 4. a canary, the tests, then the soak -------------------------------------------------------
reports="$root/$tree/reports"
rm -rf "$reports"
mkdir -p "$reports"
# The canary: two threads write one int unsynchronized. If TSan does not report it into log_path, a
# clean result below would mean nothing.
cat >"$tree/canary.cpp" <<'CANARY'
#include <thread>
int shared = 0;
int main() {
  std::thread a([] { shared = 1; });
  std::thread b([] { shared = 2; });
  a.join();
  b.join();
  return shared == 0;
}
CANARY
c++ -std=c++20 -O1 -g -fsanitize=thread "$tree/canary.cpp" -o "$tree/canary"
TSAN_OPTIONS="halt_on_error=0 exitcode=0 log_path=$reports/canary" "$tree/canary" || true
shopt -s nullglob
canary=("$reports"/canary.*)
if [[ ${#canary[@]} -ne 1 ]] || ! grep -q 'WARNING: ThreadSanitizer: data race' "${canary[0]}"; then
  echo "tsan-check.sh: ThreadSanitizer did not report the canary's race; its silence below would mean nothing" >&2
  exit 1
fi
rm -f "${canary[@]}"
echo "canary: TSan reports a planted race"
failed=0
for t in "${tests[@]}"; do
  args=()
  [[ $t == test_actor_cli ]] && args=(-tce="*ends the process at once*")
  start=$SECONDS
  if TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/$t" \
     timeout 2400 "$tree/tests/$t" "${args[@]}" >"$reports/$t.out" 2>&1; then
    status=passed
  else
    status="FAILED (see $reports/$t.out)"
    failed=1
  fi
  echo "$t: $status, $(grep -h 'test cases' "$reports/$t.out" | sed 's/.*test cases: *//'), $((SECONDS - start)) s"
done
if [[ $soak -gt 0 ]]; then
  echo "== scripts/soak_run.sh $soak with the instrumented doppler"
  if TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/soak" DOPPLER="$tree/cli/doppler" \
     TIMEOUT=300 REPEAT=20 scripts/soak_run.sh "$soak" >"$reports/soak.out" 2>&1; then
    echo "soak: passed"
  else
    echo "soak: FAILED (see $reports/soak.out)"
    failed=1
  fi
fi

# TSan writes one file per process that reported (log_path.PID): test binaries and the doppler
# processes they start.
found=("$reports"/*.[0-9]*)
if [[ ${#found[@]} -gt 0 ]]; then
  echo "ThreadSanitizer reported in ${#found[@]} process(es):"
  for f in "${found[@]}"; do
    echo "--- $f: $(grep -c 'WARNING: ThreadSanitizer' "$f") report(s)"
    grep -m 3 -A 12 'WARNING: ThreadSanitizer' "$f" || true
  done
  exit 1
fi
[[ $failed -eq 0 ]] || exit 1
echo "ThreadSanitizer: no reports"
