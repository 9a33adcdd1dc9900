#pragma once
// Error checking for CUDA runtime and cuBLAS calls. Every failure becomes a std::runtime_error
// that names the device, the call and the library's own error string, e.g.
// "cuda:1: cudaMalloc: out of memory (error 2)". Compiled by nvcc only (tensor/cuda/*.cu).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace actrain::cuda {

/// Throws when `e` is an error. Clears the runtime's last-error slot first so that a later
/// cudaGetLastError() (used after kernel launches) does not report this failure a second time.
inline void check(cudaError_t e, const char* call, int device) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw std::runtime_error("cuda:" + std::to_string(device) + ": " + call + ": " +
                           cudaGetErrorString(e) + " (error " + std::to_string(int(e)) + ")");
}

/// Throws when `s` is a cuBLAS error.
inline void check(cublasStatus_t s, const char* call, int device) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error("cuda:" + std::to_string(device) + ": " + call + ": " +
                           cublasGetStatusString(s) + " (status " + std::to_string(int(s)) + ")");
}

/// Checks that the kernel launched just before this call was accepted (bad configuration,
/// missing machine code for this GPU); faults inside the kernel surface at the next sync.
inline void check_launch(const char* kernel, int device) {
  check(cudaGetLastError(), kernel, device);
}

}  // namespace actrain::cuda
