#!/usr/bin/env bash
# shellcheck disable=SC2317  # the step functions are called through step()
# The one prepared GPU check for actrain. On a GPU machine with this repository checked
# out (Debian-like, root; CUDA toolkit at /usr/local/cuda), run from anywhere:
#   OUT=/some/dir scripts/gpu/check.sh
# It installs missing Debian build deps (tolerating an unreachable apt), configures build-gpu
# with -DACTRAIN_CUDA=ON, builds, runs the CUDA-labelled tests (ctest -L cuda), then the GPU
# benchmarks that exist (`actrain bench gpu`, bench/gpu/torch_mlp.py). Every step logs to
# $OUT/<step>.log; $OUT/summary.txt lists each step's outcome. Setup and build failures stop the
# run at once; test and benchmark failures are recorded, the remaining steps still run (device
# time is scarce), and the exit status is non-zero if anything failed.
# Knobs: BUILD (build-gpu), CUDA_ARCHS (e.g. 90-real; default: the project's 80/90 set),
# JOBS (nproc), TORCH_STEPS (200).
#
# PREBUILT=<dir> skips install, configure and build: <dir>/bundle.tar.gz, made by
# scripts/gpu/pack.sh on a Debian 12 machine with the CUDA 13 toolkit, holds the CUDA test
# binaries, the actrain binary, the Debian libraries they load (glibc and its loader among them)
# and Fashion-MNIST. Each binary runs through the packed loader with the packed libraries first,
# then the GPU machine's cudart, cuBLAS and driver; the tests run one binary at a time (what
# `ctest -L cuda` runs) with ACTRAIN_EXPECT_GPU=1. This is the mode for GPU machines that have
# CUDA but cannot install Debian's packages (no network, another distribution).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
OUT=${OUT:-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
export PATH="$PATH:/usr/local/cuda/bin"
summary=()
failed=0

finish() {
  printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
  exit "$1"
}

# step <fatal|soft> <name> <command...>: runs the command with its output in $OUT/<name>.log.
step() {
  local mode=$1 name=$2 t0=$SECONDS rc
  shift 2
  echo "== $name" >&2
  "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    summary+=("ok    $name ($((SECONDS - t0)) s)")
    return 0
  fi
  summary+=("FAIL  $name: exit $rc after $((SECONDS - t0)) s, log $OUT/$name.log")
  tail -n 40 "$OUT/$name.log" >&2
  failed=1
  [ "$mode" = fatal ] && finish 1
  return $rc
}

machine() {
  nvidia-smi
  nvidia-smi -L | grep -q GPU || { echo "nvidia-smi lists no GPU"; return 1; }
  command -v nvcc && nvcc --version
  command -v cmake && cmake --version
  head -n 3 /etc/os-release || true
  git -C "$REPO" log -1 --oneline || true
}

# PREBUILT mode: unpack the bundle and find the GPU machine's CUDA 13 runtime, cuBLAS and driver.
unpack() {
  P=${P:-/tmp/actrain-prebuilt}
  rm -rf "$P" && mkdir -p "$P" && tar -C "$P" -xzf "$REPO/$PREBUILT/bundle.tar.gz" || return 1
  echo "bundle: $(cat "$P/COMMIT")"
  local lib dirs=()
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcuda.so.1; do
    local at
    at=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
    [ -n "$at" ] || at=$(find /usr/local/cuda/lib /usr/local/cuda/lib64 /usr/local/nvidia \
      /usr/lib/x86_64-linux-gnu /usr/local /opt -name "$lib" 2>/dev/null | head -n 1)
    if [ -z "$at" ]; then
      # The driver's libcuda may sit where only the default search finds it; the first test
      # names any library that is really missing.
      echo "$lib: not found by ldconfig or find; left to the loader's defaults"
      continue
    fi
    echo "$lib: $at"
    dirs+=("$(dirname "$at")")
  done
  CUDA_LIBS=$(printf '%s\n' "${dirs[@]}" | awk '!seen[$0]++' | paste -sd:)
  echo "CUDA library path: $CUDA_LIBS"
  run_packed cuda_device_test --gtest_list_tests >/dev/null || return 1
}

# run_packed <binary> <args...>: one packed binary, through the packed loader. Such a process
# cannot re-run itself with the OpenBLAS core it would pick (apps/main.cpp), so the core is set
# here, from the CPU's flags, unless the caller chose one.
run_packed() {
  local bin=$1 core=${OPENBLAS_CORETYPE:-}
  shift
  if [ -z "$core" ]; then
    if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then core=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then core=Haswell
    fi
  fi
  env ${core:+OPENBLAS_CORETYPE=$core} ACTRAIN_FASHION_MNIST="$P/fashion-mnist" \
    "$P/lib/ld-linux-x86-64.so.2" --library-path "$P/lib:$CUDA_LIBS" "$P/bin/$bin" "$@"
}

packed_tests() {
  local t rc=0
  for t in "$P"/bin/cuda_*_test; do
    t=$(basename "$t")
    echo "== $t"
    ACTRAIN_EXPECT_GPU=1 run_packed "$t" --gtest_output="xml:$OUT/$t.xml" || rc=1
  done
  return $rc
}

packed_bench() {
  # fp32 writes section "gpu" of docs/benchmarks.md, --tf32 section "gpu-tf32".
  ACTRAIN_SOURCE_DIR="$REPO" run_packed actrain bench gpu --tf32 || return 1
  ACTRAIN_SOURCE_DIR="$REPO" run_packed actrain bench gpu && cp "$REPO/docs/benchmarks.md" "$OUT/benchmarks.md"
}

have_headers() {
  local h
  for h in caf/all.hpp cereal/cereal.hpp gtest/gtest.h boost/version.hpp zlib.h \
           nlohmann/json.hpp; do
    [ -e "/usr/include/$h" ] || { echo "missing /usr/include/$h"; return 1; }
  done
  find /usr/include -name cblas.h | grep -q . || { echo "missing cblas.h"; return 1; }
  command -v cmake && command -v g++ && command -v nvcc
}

deps() {
  if have_headers; then echo "build dependencies present"; return 0; fi
  # apt may be unreachable on the GPU machine: try, then judge by what is installed.
  DEBIAN_FRONTEND=noninteractive apt-get update || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends cmake g++ make \
    libcaf-dev libcereal-dev libboost-dev libopenblas-dev libgtest-dev zlib1g-dev \
    nlohmann-json3-dev || true
  have_headers
}

configure() {
  cmake -S "$REPO" -B "$REPO/$BUILD" -DACTRAIN_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    ${CUDA_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS}
}

cuda_tests() {
  # ACTRAIN_EXPECT_GPU turns the tests' "no GPU" skip into a failure: here a skip would hide a
  # broken driver or runtime.
  ACTRAIN_EXPECT_GPU=1 ctest --test-dir "$REPO/$BUILD" -L cuda --output-on-failure \
    --timeout 300 --output-junit "$OUT/ctest-cuda.xml"
}

actrain_bench() {
  local exe="$REPO/$BUILD/apps/actrain"
  # The source dir tells the bench where docs/benchmarks.md and the torch script are; the
  # updated document is copied to $OUT so it comes back from a device machine.
  ACTRAIN_SOURCE_DIR="$REPO" "$exe" bench gpu && cp "$REPO/docs/benchmarks.md" "$OUT/benchmarks.md"
}

torch_bench() {
  python3 "$REPO/bench/gpu/torch_mlp.py" --steps "${TORCH_STEPS:-200}" | tee "$OUT/torch_mlp.json"
}

step fatal machine machine
if [ -n "${PREBUILT:-}" ]; then
  CUDA_LIBS=
  step fatal unpack unpack  # step runs the function in this shell: CUDA_LIBS stays set
  step soft cuda_tests packed_tests
  step soft actrain_bench_gpu packed_bench
else
  step fatal deps deps
  step fatal configure configure
  step fatal build cmake --build "$REPO/$BUILD" -j "$JOBS"
  step soft cuda_tests cuda_tests
  if [ -x "$REPO/$BUILD/apps/actrain" ]; then
    step soft actrain_bench_gpu actrain_bench
  else
    summary+=("skip  actrain_bench_gpu: $BUILD/apps/actrain was not built")
  fi
fi
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null
then
  step soft torch_mlp torch_bench
  step soft torch_mlp_host_data python3 "$REPO/bench/gpu/torch_mlp.py" --host-data \
    --steps "${TORCH_STEPS:-200}"
else
  summary+=("skip  torch_mlp: python3 has no torch with CUDA")
fi
finish $failed
