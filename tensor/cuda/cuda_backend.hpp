#pragma once
#include <memory>
#include <string>

#include <actrain/backend.hpp>

namespace actrain {

/// True when this binary was compiled with the CUDA backend.
bool cuda_built();
/// Number of usable GPUs (0 when built without CUDA or when no driver/GPU is present);
/// `why` receives the reason for 0, e.g. "cudaGetDeviceCount: no CUDA-capable device is
/// detected (error 100)" or "built without CUDA". Never throws.
int cuda_device_count(std::string* why = nullptr);
/// A backend on GPU `device` with its own stream and cuBLAS handle.
/// Throws std::runtime_error naming the device when it cannot be opened.
std::unique_ptr<backend> make_cuda_backend(int device, bool allow_tf32 = false);

}  // namespace actrain
