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
  cmake --version
  git -C "$REPO" log -1 --oneline || true
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
step fatal deps deps
step fatal configure configure
step fatal build cmake --build "$REPO/$BUILD" -j "$JOBS"
step soft cuda_tests cuda_tests
if [ -x "$REPO/$BUILD/apps/actrain" ]; then
  step soft actrain_bench_gpu actrain_bench
else
  summary+=("skip  actrain_bench_gpu: $BUILD/apps/actrain was not built")
fi
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null
then
  step soft torch_mlp torch_bench
else
  summary+=("skip  torch_mlp: python3 has no torch with CUDA")
fi
finish $failed
