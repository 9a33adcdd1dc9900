#pragma once
#include <memory>
#include <string>
#include <vector>

#include <actrain/backend.hpp>

namespace actrain {

/// What the machine offers, found at run time.
struct device_report {
  bool cuda_built = false;  ///< compiled with the CUDA backend
  int cuda_devices = 0;     ///< GPUs visible through the CUDA runtime
  std::string why_no_cuda;  ///< empty when cuda_devices > 0, else the reason (one line)
};

/// The N of "cuda:N" (N of at most 4 digits); -1 when `device` is not of that form.
int parse_cuda_index(const std::string& device);
/// Whether `device` names a device: "cpu", "auto" or "cuda:N". Checked without a GPU.
bool is_device_name(const std::string& device);

/// Probes the CUDA runtime once (cudaGetDeviceCount); never throws.
device_report probe_devices();

/// Makes the backend named by `device`: "cpu", "cuda:N", or "auto" (cuda:0 when a GPU is
/// there, else the CPU; `note` receives one line saying which and why).
/// Throws std::runtime_error naming the device when "cuda:N" cannot be had.
std::unique_ptr<backend> make_backend(const std::string& device, std::string* note = nullptr);

}  // namespace actrain
