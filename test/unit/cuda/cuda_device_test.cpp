// Opening GPUs, reporting why there is none, device errors, several backends and devices in one
// thread, and the sgemm benchmark. The GPU tests skip with the reason on machines without a GPU;
// the no-GPU report is checked by cuda_no_device_test, which hides every GPU.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_bench.hpp"
#include "test/unit/cuda/cuda_test_util.hpp"

namespace actrain::test {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(cuda_device, missing_device_throws_runtime_error_naming_it) {
  // Holds in every build: no GPU, a stub build, or a machine with fewer than 100 GPUs.
  for (int device : {99, -1}) {
    const std::string name = "cuda:" + std::to_string(device);
    try {
      make_cuda_backend(device);
      FAIL() << name << " was opened";
    } catch (const std::runtime_error& e) {
      EXPECT_TRUE(contains(e.what(), name)) << e.what();
    }
  }
}

TEST(cuda_device, backend_names_its_device) {
  ACTRAIN_REQUIRE_GPU();
  auto b = make_cuda_backend(0);
  EXPECT_EQ(b->name(), "cuda:0");
  EXPECT_FALSE(b->is_host());
}

TEST(cuda_device, failed_allocation_names_device_and_call_and_backend_survives) {
  ACTRAIN_REQUIRE_GPU();
  auto b = make_cuda_backend(0);
  try {
    b->allocate(std::size_t(1) << 42);  // 16 TiB
    FAIL() << "a 16 TiB allocation succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:0")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cudaMalloc")) << e.what();
  }
  // Out-of-memory is not sticky: the same backend keeps working.
  auto buf = b->allocate(3);
  const float in[3] = {1, 2, 3};
  float out[3] = {};
  b->upload(buf.data(), in, 3);
  b->scale(3, 2.f, buf.data());
  b->download(out, buf.data(), 3);
  EXPECT_EQ(out[2], 6.f);
}

TEST(cuda_device, interleaved_backends_on_every_gpu_keep_their_own_device) {
  ACTRAIN_REQUIRE_GPU();
  const int n = cuda_device_count();
  // Two backends per GPU, driven in turn from this thread: each call must make its own device
  // current, or the kernels would run against another device's memory.
  std::vector<std::unique_ptr<backend>> backends;
  std::vector<buffer> bufs;
  for (int d = 0; d < n; ++d)
    for (int j = 0; j < 2; ++j) backends.push_back(make_cuda_backend(d, j == 1));
  for (std::size_t i = 0; i < backends.size(); ++i) {
    bufs.push_back(backends[i]->allocate(1000));
    backends[i]->fill(1000, float(i), bufs[i].data());
  }
  for (std::size_t i = 0; i < backends.size(); ++i) {
    backends[i]->scale(1000, 2.f, bufs[i].data());
    EXPECT_EQ(backends[i]->sum_squares(1000, bufs[i].data()), 1000.0 * (2.0 * i) * (2.0 * i))
        << backends[i]->name();
  }
}

TEST(cuda_device, sgemm_bench_reports_its_shape_and_a_rate) {
  ACTRAIN_REQUIRE_GPU();
  for (bool tf32 : {false, true}) {
    const sgemm_timing t = cuda_sgemm_bench(256, 128, 512, tf32, 0, 0.01);
    EXPECT_EQ(t.m, 256);
    EXPECT_EQ(t.n, 128);
    EXPECT_EQ(t.k, 512);
    EXPECT_EQ(t.tf32, tf32);
    EXPECT_GE(t.iterations, 3);
    EXPECT_GT(t.seconds_per_call, 0);
    EXPECT_NEAR(t.tflops, 2.0 * 256 * 128 * 512 / t.seconds_per_call / 1e12, 1e-9 * t.tflops);
  }
  EXPECT_THROW(cuda_sgemm_bench(0, 1, 1, false), std::invalid_argument);
}

}  // namespace
}  // namespace actrain::test
