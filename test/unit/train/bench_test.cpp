// The bench library's pure parts: the sgemm shapes of a model and the recorded reference jobs.
#include <gtest/gtest.h>

#include "bench/bench.hpp"

namespace actrain {
namespace {

TEST(bench, mlp_gemm_shapes_follow_the_dense_stack) {
  const model_spec mlp{"mlp", 784, 10, {256}};
  const std::vector<gemm_shape> s = model_gemm_shapes(mlp, 64);
  ASSERT_EQ(s.size(), 5u);
  auto is = [](const gemm_shape& g, bool ta, bool tb, int m, int n, int k) {
    return g.trans_a == ta && g.trans_b == tb && g.m == m && g.n == n && g.k == k;
  };
  EXPECT_TRUE(is(s[0], false, false, 64, 256, 784));  // X W1
  EXPECT_TRUE(is(s[1], false, false, 64, 10, 256));   // H W2
  EXPECT_TRUE(is(s[2], true, false, 256, 10, 64));    // dW2 = H^T dZ2
  EXPECT_TRUE(is(s[3], false, true, 64, 256, 10));    // dH = dZ2 W2^T
  EXPECT_TRUE(is(s[4], true, false, 784, 256, 64));   // dW1 = X^T dZ1 (no dX for the input)
  EXPECT_EQ(describe(s[4]), "784x256x64 (A^T B)");
  // Softmax regression: one forward and one weight-gradient call.
  EXPECT_EQ(model_gemm_shapes(model_spec{"softmax", 784, 10, {}}, 32).size(), 2u);
}

TEST(bench, gemm_rate_is_positive_for_a_small_shape) {
  auto cpu = make_cpu_backend();
  const gemm_rate r = measure_gemm(*cpu, gemm_shape{false, true, 8, 8, 8, "tiny"}, 1, 0.001);
  EXPECT_GT(r.wall_gflops, 0);
  EXPECT_GT(r.cpu_gflops, 0);
  EXPECT_THROW(measure_gemm(*cpu, gemm_shape{false, false, 0, 8, 8, ""}), std::invalid_argument);
}

TEST(bench, reference_jobs_are_valid_and_described) {
  for (const job_spec& j :
       {reference_linear_job(100000, 100, 5), reference_softmax_job(10), reference_mlp_job(10)}) {
    EXPECT_NO_THROW(validate(j)) << j.name;
    EXPECT_LE(j.epochs, 10);
  }
  const job_spec mlp = reference_mlp_job(10);
  EXPECT_EQ(describe_hparams(mlp),
            "mlp 784-256-10, adam lr 0.001, cosine to 0 over 9380 steps, batch 64, 10 epochs, "
            "seed 42");
}

}  // namespace
}  // namespace actrain
