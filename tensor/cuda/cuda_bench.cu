// sgemm timing with CUDA events (see cuda_bench.hpp). Uses its own stream and handle so that
// it measures cuBLAS alone, not the backend's bookkeeping.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_bench.hpp"
#include "tensor/cuda/cuda_check.cuh"
#include "tensor/cuda/cuda_kernels.cuh"

namespace actrain {
namespace {

using cuda::check;

/// Owns the device resources of one benchmark run; frees them however the run ends.
struct bench_resources {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  ~bench_resources() {
    cudaSetDevice(device);
    if (stream) cudaStreamSynchronize(stream);
    if (blas) cublasDestroy(blas);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    cudaFree(a), cudaFree(b), cudaFree(c);
    if (stream) cudaStreamDestroy(stream);
    cudaGetLastError();
  }
};

float* device_alloc(std::size_t n, int device) {
  void* p = nullptr;
  check(cudaMalloc(&p, n * sizeof(float)),
        ("cudaMalloc(" + std::to_string(n * sizeof(float)) + " bytes)").c_str(), device);
  return static_cast<float*>(p);
}

}  // namespace

sgemm_timing cuda_sgemm_bench(int m, int n, int k, bool tf32, int device, double min_seconds) {
  if (m <= 0 || n <= 0 || k <= 0)
    throw std::invalid_argument("cuda_sgemm_bench: m, n, k must be > 0 (got " + std::to_string(m) +
                                ", " + std::to_string(n) + ", " + std::to_string(k) + ")");
  std::string why;
  if (device < 0 || device >= cuda_device_count(&why))
    throw std::runtime_error("cuda_sgemm_bench: cuda:" + std::to_string(device) +
                             " is not available" + (why.empty() ? "" : ": " + why));
  bench_resources r;
  r.device = device;
  check(cudaSetDevice(device), "cudaSetDevice", device);
  check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate", device);
  check(cublasCreate(&r.blas), "cublasCreate", device);
  check(cublasSetStream(r.blas, r.stream), "cublasSetStream", device);
  check(cublasSetMathMode(r.blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode", device);
  check(cudaEventCreate(&r.start), "cudaEventCreate", device);
  check(cudaEventCreate(&r.stop), "cudaEventCreate", device);
  r.a = device_alloc(std::size_t(m) * k, device);
  r.b = device_alloc(std::size_t(k) * n, device);
  r.c = device_alloc(std::size_t(m) * n, device);
  cuda::launch_fill(r.stream, std::size_t(m) * k, 0.01f, r.a);
  cuda::launch_fill(r.stream, std::size_t(k) * n, 0.02f, r.b);
  cuda::launch_fill(r.stream, std::size_t(m) * n, 0.f, r.c);
  cuda::check_launch("fill_kernel", device);

  const float alpha = 1, beta = 0;
  auto run = [&](int calls) {
    for (int i = 0; i < calls; ++i)  // row-major C = A B as column-major C^T = B^T A^T
      check(cublasSgemm(r.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, r.b, n, r.a, k, &beta,
                        r.c, n),
            "cublasSgemm", device);
  };
  auto timed = [&](int calls) {
    check(cudaEventRecord(r.start, r.stream), "cudaEventRecord", device);
    run(calls);
    check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord", device);
    check(cudaEventSynchronize(r.stop), "cudaEventSynchronize", device);
    float ms = 0;
    check(cudaEventElapsedTime(&ms, r.start, r.stop), "cudaEventElapsedTime", device);
    return double(ms) / 1e3;
  };
  run(2);  // warm-up: cuBLAS picks and loads its kernel
  const double probe = std::max(timed(1), 1e-6);
  const int calls = int(std::clamp(min_seconds / probe, 3.0, 10000.0));
  const double seconds = timed(calls);

  sgemm_timing t;
  t.m = m, t.n = n, t.k = k, t.tf32 = tf32, t.iterations = calls;
  t.seconds_per_call = seconds / calls;
  t.tflops = 2.0 * m * n * k / t.seconds_per_call / 1e12;
  return t;
}

double cuda_sgemm_tflops(int m, int n, int k, bool tf32, int device) {
  return cuda_sgemm_bench(m, n, k, tf32, device).tflops;
}

}  // namespace actrain
