// Linked when actrain is built without CUDA (ACTRAIN_CUDA=OFF, or no nvcc/cuBLAS found).
#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_bench.hpp"

namespace actrain {

bool cuda_built() {
  return false;
}

int cuda_device_count(std::string* why) {
  if (why) *why = "built without CUDA (ACTRAIN_CUDA=OFF or no nvcc/cuBLAS at build time)";
  return 0;
}

std::unique_ptr<backend> make_cuda_backend(int device, bool) {
  throw std::runtime_error("cuda:" + std::to_string(device) +
                           " requested, but actrain was built without CUDA");
}

sgemm_timing cuda_sgemm_bench(int, int, int, bool, int device, double) {
  throw std::runtime_error("cuda_sgemm_bench: cuda:" + std::to_string(device) +
                           " requested, but actrain was built without CUDA");
}

double cuda_sgemm_tflops(int m, int n, int k, bool tf32, int device) {
  return cuda_sgemm_bench(m, n, k, tf32, device).tflops;
}

}  // namespace actrain
