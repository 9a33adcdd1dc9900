#pragma once
// Shared helpers for the CUDA tests: the GPU gate (skip with the reason when there is no usable
// GPU), a fixture holding a CUDA backend and its CPU twin, and tolerance checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <actrain/backend.hpp>
#include "tensor/cuda/cuda_backend.hpp"

namespace actrain::test {

/// Skips the current test, with the reason, unless a GPU is usable. In a build without CUDA
/// the reason reads "built without CUDA ...". With ACTRAIN_EXPECT_GPU set in the environment
/// (scripts/gpu/check.sh sets it) a missing GPU fails the test instead.
#define ACTRAIN_REQUIRE_GPU()                                                        \
  do {                                                                               \
    std::string why_no_gpu_;                                                         \
    if (::actrain::cuda_device_count(&why_no_gpu_) <= 0) {                           \
      if (std::getenv("ACTRAIN_EXPECT_GPU"))                                         \
        FAIL() << "ACTRAIN_EXPECT_GPU is set, but there is no GPU: " << why_no_gpu_; \
      GTEST_SKIP() << "no GPU: " << why_no_gpu_;                                     \
    }                                                                                \
  } while (0)

/// Uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1,
                                        float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

/// Class indices in [0, classes) stored as floats, as the backend's label convention wants.
inline std::vector<float> random_labels(std::size_t n, int classes, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, classes - 1);
  std::vector<float> v(n);
  for (auto& x : v) x = float(dist(gen));
  return v;
}

/// A CUDA backend on cuda:0 next to the CPU backend, and the plumbing to put the same host data
/// on both and read results back.
class cuda_vs_cpu : public ::testing::Test {
 protected:
  void SetUp() override {
    ACTRAIN_REQUIRE_GPU();
    cpu_ = make_cpu_backend();
    gpu_ = make_cuda_backend(0, tf32_);
  }

  /// The same values in both backends' memory.
  struct twin {
    buffer cpu, gpu;
  };
  twin put(const std::vector<float>& host) {
    twin t{cpu_->allocate(host.size()), gpu_->allocate(host.size())};
    cpu_->upload(t.cpu.data(), host.data(), host.size());
    gpu_->upload(t.gpu.data(), host.data(), host.size());
    return t;
  }
  std::vector<float> get_cpu(const twin& t) { return read(*cpu_, t.cpu); }
  std::vector<float> get_gpu(const twin& t) { return read(*gpu_, t.gpu); }
  static std::vector<float> read(backend& b, const buffer& buf) {
    std::vector<float> v(buf.size());
    b.download(v.data(), buf.data(), v.size());
    return v;
  }

  bool tf32_ = false;
  std::unique_ptr<backend> cpu_, gpu_;
};

/// Expects got[i] == want[i] bit for bit (ops that do one rounding, or none).
inline void expect_same(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
}

/// Expects |got[i] - want[i]| <= tol * scale[i] + abs_floor: `scale` is the magnitude the
/// error can grow from (for a sum, the sum of absolute values of its terms).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         const std::vector<double>& scale, double tol, const std::string& what,
                         double abs_floor = 1e-30) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(scale.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(double(got[i]) - want[i]), tol * scale[i] + abs_floor)
        << what << " at " << i << ": gpu " << got[i] << " cpu " << want[i] << " scale " << scale[i];
}

}  // namespace actrain::test
