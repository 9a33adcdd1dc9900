// Linked when actrain is built without CUDA (ACTRAIN_CUDA=OFF, or no nvcc/cuBLAS found).
#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"

namespace actrain {

bool cuda_built() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = "built without CUDA (ACTRAIN_CUDA=OFF or no nvcc/cuBLAS at build time)";
  return 0;
}

std::unique_ptr<backend> make_cuda_backend(int device, bool) {
  throw std::runtime_error("cuda:" + std::to_string(device) +
                           " requested, but actrain was built without CUDA");
}

}  // namespace actrain
