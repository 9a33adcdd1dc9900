#!/usr/bin/env bash
# Packs a CUDA build made on this Debian 12 machine for a GPU machine that cannot install
# Debian's packages (no network, another distribution): the CUDA test binaries, the actrain
# binary, the Debian libraries they load (CAF, OpenSSL, OpenBLAS, zlib, libstdc++, and glibc
# with its loader, so the binaries run exactly as they were linked), and Fashion-MNIST.
# cudart, cuBLAS and the driver are NOT packed: they come from the GPU machine's CUDA 13
# (the binaries' RUNPATH is /usr/local/cuda/lib; check.sh also searches for them).
#   scripts/gpu/pack.sh            # builds build/ (CUDA on), writes .gpu/bundle.tar.gz
#   PREBUILT=.gpu scripts/gpu/check.sh   # on the GPU machine (see check.sh)
# Knobs: BUILD (build), DEST (.gpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
DEST=${DEST:-.gpu}
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "pack: no nvcc (CUDA 13 toolkit) here: the bundle needs a CUDA build" >&2; exit 2; }
cmake -S . -B "$BUILD" -G Ninja -DACTRAIN_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
tests=(cuda_kernels_test cuda_device_test cuda_no_device_test cuda_model_test cuda_engine_test)
bins=(apps/actrain)
for t in "${tests[@]}"; do bins+=("test/unit/cuda/$t"); done
cmake --build "$BUILD" --target "${tests[@]}" actrain
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/fashion-mnist"
for b in "${bins[@]}"; do cp "$BUILD/$b" "$stage/bin/"; done
# Every library the binaries load, except the CUDA runtime, cuBLAS and the driver.
for b in "${bins[@]}"; do ldd "$BUILD/$b"; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u |
  grep -v -e libcudart -e libcublas -e libcuda |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
data=${ACTRAIN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
cp "$data"/*-ubyte.gz "$stage/fashion-mnist/"
git log -1 --format='%H %s' >"$stage/COMMIT"
rm -rf "$DEST" && mkdir -p "$DEST"
tar -C "$stage" -czf "$DEST/bundle.tar.gz" .
ls -la "$DEST"
