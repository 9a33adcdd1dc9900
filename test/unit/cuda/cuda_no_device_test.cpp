// What a process that sees no GPU reports, on every machine: main() hides all GPUs
// (CUDA_VISIBLE_DEVICES=-1) before the CUDA runtime first loads, so on a GPU machine this checks
// the same report that a machine without a GPU or driver gives (there it is error 35 or 100).
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_bench.hpp"

namespace actrain {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(cuda_no_device, no_gpu_is_reported_with_the_reason) {
  std::string why;
  const int n = cuda_device_count(&why);
  EXPECT_EQ(n, 0) << "CUDA_VISIBLE_DEVICES=-1 should hide every GPU";
  if (!cuda_built()) {
    EXPECT_TRUE(contains(why, "built without CUDA")) << why;
  } else {
    // e.g. "cudaGetDeviceCount: no CUDA-capable device is detected (error 100)"
    EXPECT_EQ(why.rfind("cudaGetDeviceCount: ", 0), 0u) << why;
    EXPECT_TRUE(contains(why, "(error ") || contains(why, "0 devices")) << why;
  }
  try {
    make_cuda_backend(0);
    FAIL() << "cuda:0 opened with every GPU hidden";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:0")) << e.what();
    EXPECT_TRUE(contains(e.what(), cuda_built() ? "cudaGetDeviceCount" : "built without CUDA"))
        << e.what();
  }
  EXPECT_THROW(cuda_sgemm_bench(64, 64, 64, false), std::runtime_error);
}

}  // namespace
}  // namespace actrain

int main(int argc, char** argv) {
  ::setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
