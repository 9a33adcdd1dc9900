#!/usr/bin/env bash
# Installs every Debian 12 package actrain needs to build, test and run (as root, or via sudo).
# Idempotent and quick the second time: only missing packages are installed.
set -euo pipefail
pkgs=(
  cmake ninja-build g++ make pkg-config
  libcaf-dev            # C++ Actor Framework 0.17.6 (core, io, openssl)
  libssl-dev openssl    # TLS between nodes; the tests make their certificates with openssl
  libcereal-dev         # checkpoints
  libboost-dev          # Asio + Beast (HTTP endpoint), Process
  libopenblas-dev       # CPU BLAS
  libgtest-dev libgmock-dev
  zlib1g-dev            # gzipped IDX files
  nlohmann-json3-dev    # JSON status and metrics
  dataset-fashion-mnist # /usr/share/datasets/fashion-mnist
  chromium              # the dashboard test takes a headless screenshot
  clang-16 libfuzzer-16-dev libclang-rt-16-dev  # fuzz/: libFuzzer, ASan and UBSan runtimes
)
# --bench: also PyTorch (python3-torch, ~1 GB with its dependencies), the peer every
# `actrain bench` measures in the same run; without it those rows are skipped with the reason.
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(python3-torch)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
