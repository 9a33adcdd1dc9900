#include "tensor/device.hpp"

#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"

namespace actrain {

int parse_cuda_index(const std::string& device) {
  const std::string prefix = "cuda:";
  if (device.compare(0, prefix.size(), prefix) != 0 || device.size() == prefix.size()) return -1;
  auto digits = device.substr(prefix.size());
  if (digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

bool is_device_name(const std::string& device) {
  return device == "cpu" || device == "auto" || parse_cuda_index(device) >= 0;
}

device_report probe_devices() {
  device_report r;
  try {
    r.cuda_built = cuda_built();
    std::string why;
    r.cuda_devices = cuda_device_count(&why);
    if (r.cuda_devices <= 0) {
      r.cuda_devices = 0;
      r.why_no_cuda = why.empty() ? "no CUDA device found" : why;
    }
  } catch (const std::exception& e) {  // the contract says never throws
    r.cuda_devices = 0;
    r.why_no_cuda = std::string("probing CUDA failed: ") + e.what();
  }
  return r;
}

std::unique_ptr<backend> make_backend(const std::string& device, std::string* note) {
  if (device == "cpu") {
    if (note) *note = "device cpu: requested";
    return make_cpu_backend();
  }
  if (device == "auto") {
    auto r = probe_devices();
    if (r.cuda_devices > 0) {
      if (note)
        *note = "device auto -> cuda:0 (" + std::to_string(r.cuda_devices) + " GPU(s) visible)";
      return make_cuda_backend(0);
    }
    if (note) *note = "device auto -> cpu (no GPU: " + r.why_no_cuda + ")";
    return make_cpu_backend();
  }
  int index = parse_cuda_index(device);
  if (index < 0)
    throw std::invalid_argument("device \"" + device +
                                "\" is not valid: expected cpu, auto or cuda:N (N >= 0)");
  auto r = probe_devices();
  if (index >= r.cuda_devices) {
    std::string reason = r.cuda_devices == 0
                             ? r.why_no_cuda
                             : "only " + std::to_string(r.cuda_devices) + " GPU(s) visible";
    throw std::runtime_error("device " + device + " is not available: " + reason);
  }
  if (note) *note = "device " + device + ": requested";
  return make_cuda_backend(index);
}

}  // namespace actrain
