#!/usr/bin/env bash
# Installs every Debian package doppler needs to build, test and run. Idempotent: packages already
# present are skipped, and nothing outside Debian's archive is downloaded.
#   scripts/install-deps.sh            # everything (LibTorch included, ~500 MB the first time)
#   DOPPLER_NO_TORCH=1 scripts/install-deps.sh   # skip LibTorch (the learner is then not built)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  libcaf-dev libtbb-dev doctest-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libeigen3-dev libopenblas-dev libbenchmark-dev libmetis-dev
  coinor-libcbc-dev coinor-libclp-dev libssl-dev openssl
)
if [[ "${DOPPLER_NO_TORCH:-0}" != "1" ]]; then
  packages+=(libtorch-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
