#!/usr/bin/env bash
# Packs what `scripts/gpu-check.sh --bundle DIR` needs to run the GPU check without building, for a
# GPU machine that has the CUDA toolkit, CMake and PyTorch but none of our Debian packages and no
# network (the lent H100/H200 machines: /work/.library/device/KINDS.md): the CUDA test binaries,
# the benchmark and the `doppler` CLI built here, every shared library they load except glibc's, libstdc++/libgcc_s and
# CUDA's own (cudart, cuBLAS, cuBLASLt, NCCL: the GPU machine's are used), and a DOPPLER placement
# of the Llama-7B block trained here (the GPU machine has no LibTorch of ours).
#
#   scripts/gpu-bundle.sh [DIR]      # default DIR: gpu-bundle (git-ignored); builds in build/gpu-bundle
#   REHEARSE=1 scripts/gpu-bundle.sh # then run every binary of the bundle in a chroot holding only the
#                                    # loader, glibc, libstdc++, libgcc_s and /usr/local/cuda (root)
#
# DIR/bundle.tar.gz is what travels (64 MiB limit for the tree and carried paths together):
#   device run: command "scripts/gpu-check.sh --bundle gpu-bundle", carry ["gpu-bundle"]
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own build, without LibTorch: `doppler` then links the CUDA backend itself (with LibTorch it
# goes to the Torch twin doppler-learn, which is far too large to travel). LEARN_BUILD's doppler
# (with the learner: build/release by default) trains the placement.
BUILD=${BUILD:-build/gpu-bundle}
LEARN_BUILD=${LEARN_BUILD:-build/release}
DIR=${1:-gpu-bundle}
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  echo "gpu-bundle: configuring $BUILD (CUDA on, LibTorch off)"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDOPPLER_WITH_CUDA=ON -DDOPPLER_WITH_TORCH=OFF \
    -DDOPPLER_BUILD_BENCHMARKS=OFF >/dev/null
fi
grep -q '^DOPPLER_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
  { echo "gpu-bundle: $BUILD is not configured with DOPPLER_WITH_CUDA=ON (is the CUDA toolkit in /usr/local/cuda?)" >&2; exit 2; }
grep -q '^DOPPLER_WITH_TORCH:BOOL=OFF' "$BUILD/CMakeCache.txt" ||
  { echo "gpu-bundle: $BUILD is configured with LibTorch; use a folder of its own (BUILD=...)" >&2; exit 2; }
tests=(test_cuda_backend test_cuda_runner test_cuda_gpu)
grep -q '^DOPPLER_WITH_ACTORS:BOOL=ON' "$BUILD/CMakeCache.txt" && tests+=(test_cuda_actors)
targets=("${tests[@]}" cuda_llama_block doppler)
echo "gpu-bundle: building ${targets[*]} in $BUILD"
cmake --build "$BUILD" -j "${JOBS:-2}" --target "${targets[@]}" >/dev/null
with_learner=0
if [ -x "$LEARN_BUILD/cli/doppler-learn" ]; then
  cmake --build "$LEARN_BUILD" -j "${JOBS:-2}" --target doppler doppler-learn >/dev/null && with_learner=1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
bins=()
for t in "${tests[@]}"; do bins+=("$BUILD/tests/$t"); done
bins+=("$BUILD/runtime/cuda/cuda_llama_block" "$BUILD/cli/doppler")
cp "${bins[@]}" "$stage/bin/"

# Libraries: what ldd resolves, less the ones the GPU machine must supply itself: its C library and
# C++ runtime (the loader ties them to the system; the rehearsal's chroot holds exactly these) and
# CUDA's (they must match its driver).
system_libs=(libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libstdc++.so.6 libgcc_s.so.1)
cuda_libs=(libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2)
for b in "${bins[@]}"; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ " ${system_libs[*]} ${cuda_libs[*]} " == *" $name "* ]] && continue
  cp -L "$path" "$stage/lib/$name"
done
symbols=$(for b in "${bins[@]}" "$stage"/lib/*; do objdump -T "$b" 2>/dev/null; done)
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (modified tree)')"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "needs from the GPU machine: glibc >= $(grep -o 'GLIBC_2\.[0-9]*' <<<"$symbols" | sort -V -u | tail -1 | sed 's/GLIBC_//')," \
    "libstdc++ with $(grep -o 'GLIBCXX_3\.[0-9.]*' <<<"$symbols" | sort -V -u | tail -1), and CUDA 13's ${cuda_libs[*]:1}"
} >"$stage/MANIFEST"

# The DOPPLER placement the benchmark compares with cp and round-robin (as gpu-check.sh trained it
# on the GPU machine when it could build the learner there).
if [ $with_learner = 1 ]; then
  "$LEARN_BUILD/cli/doppler" workload llama-block --preset llama-7b --shards 4 -q -o "$stage/llama-block.json"
  "$LEARN_BUILD/cli/doppler" train --graph "$stage/llama-block.json" --cluster cpu:4 --model wc \
    --il-episodes 200 --rl-episodes 2000 --batch 8 --seed 0 -o "$stage/policy.pt" \
    --best "$stage/doppler.json" >"$stage/train.log" 2>&1
  rm -f "$stage/policy.pt" "$stage/llama-block.json"
  echo "placement doppler.json: doppler train --cluster cpu:4 --model wc, 200 imitation + 2000 simulator-RL episodes, seed 0, best placement" >>"$stage/MANIFEST"
fi

mkdir -p "$DIR"
tmp="$DIR/bundle.tar.gz.tmp$$"
tar -C "$stage" -czf "$tmp" .
mv "$tmp" "$DIR/bundle.tar.gz"
cat "$stage/MANIFEST"
echo "gpu-bundle: wrote $DIR/bundle.tar.gz ($(du -m "$DIR/bundle.tar.gz" | cut -f1) MiB; $(ls "$stage/lib" | wc -l) libraries)"

# The rehearsal: a root with nothing of ours but the bundle, as on the GPU machine (no GPU here, so the
# GPU cases skip; what it shows is that every library the binaries load is in the bundle or the system's).
if [ -n "${REHEARSE:-}" ]; then
  root=$(mktemp -d)
  cleanup() { umount "$root/usr/local/cuda" 2>/dev/null; rm -rf "$root" "$stage"; }
  trap cleanup EXIT
  mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/usr/local/cuda" "$root/run"
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
  for l in "${system_libs[@]}"; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$root/lib/x86_64-linux-gnu/"
  done
  mount --bind "$(readlink -f /usr/local/cuda)" "$root/usr/local/cuda"
  tar -C "$root/run" -xzf "$DIR/bundle.tar.gz"
  failed=0
  for b in "$root"/run/bin/*; do
    name=$(basename "$b")
    args=()
    [ "$name" = doppler ] && args=(run --backend cpu --repeat 1)  # the CLI end to end on the CPU kernels
    if out=$(LD_LIBRARY_PATH=/run/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib chroot "$root" "/run/bin/$name" "${args[@]}" 2>&1); then
      echo "rehearsal: $name ran: $(printf '%s\n' "$out" | grep -E '^\[doctest\] test cases|^skipped|^measured' | head -1)"
    else
      echo "rehearsal: $name FAILED: $(printf '%s\n' "$out" | tail -2)"; failed=1
    fi
  done
  exit $failed
fi
