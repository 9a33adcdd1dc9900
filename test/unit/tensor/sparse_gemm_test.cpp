// The CPU backend's zero-skipping GEMM path (tensor/cpu/sparse_gemm.hpp) against the product
// computed in double straight from its definition: both layouts, odd row counts, widths with and
// without a tail past the last block, inner lengths across several chunks, alpha and beta, with
// the lists built by AVX-512 (where the machine has it) and by the portable loop; when it declines;
// and a model's gradient through the backend with the path on and off.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <actrain/backend.hpp>
#include <actrain/model.hpp>
#include "naive_gemm.hpp"
#include "tensor/cpu/sparse_gemm.hpp"

namespace actrain {
namespace {

/// Values in [-1, 1), each zero with probability `zeros` (a negative zero now and then). Random
/// zeros do not line up in rows the way an image's background does: a pair of rows at 70% zeros
/// lists about half of its entries, one at 50% three quarters (where the path declines).
std::vector<float> sparse_values(std::size_t n, double zeros, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_real_distribution<double> p(0.0, 1.0);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
    if (p(rng) < zeros) x = p(rng) < 0.1 ? -0.0f : 0.0f;
  }
  return v;
}

/// alpha op(A) B + beta C in double; A is m x k, or k x m when trans_a.
std::vector<double> reference(bool trans_a, int m, int n, int k, double alpha,
                              const std::vector<float>& a, const std::vector<float>& b,
                              double beta, const std::vector<float>& c) {
  return testing_gemm::naive_gemm(trans_a, false, m, n, k, alpha, a, b, beta, c);
}

struct shape {
  int m, n, k;
};

class sparse_gemm_test : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { cpu::set_portable_lists(GetParam()); }
  void TearDown() override { cpu::set_portable_lists(false); }
  cpu::sparse_scratch scratch;
};

TEST_P(sparse_gemm_test, every_layout_and_size_matches_the_product_from_its_definition) {
  const std::vector<shape> shapes = {{64, 256, 784}, {7, 64, 600},  {33, 100, 129},
                                     {64, 130, 64},  {1, 200, 4096}, {15, 64, 17 * 16 + 3}};
  std::uint64_t seed = 1;
  for (bool trans_a : {false, true})
    for (auto [m, n, k] : shapes)
      for (auto [alpha, beta] : {std::pair<float, float>{1.f, 0.f}, {-2.f, 0.5f}}) {
        auto a = sparse_values(static_cast<std::size_t>(m) * k, 0.7, seed++);
        auto b = sparse_values(static_cast<std::size_t>(k) * n, 0.0, seed++);
        auto c = sparse_values(static_cast<std::size_t>(m) * n, 0.0, seed++);
        auto want = reference(trans_a, m, n, k, alpha, a, b, beta, c);
        auto got = c;
        bool took = trans_a ? cpu::sparse_gemm_tn(m, n, k, alpha, a.data(), b.data(), beta,
                                                  got.data(), scratch)
                            : cpu::sparse_gemm_nn(m, n, k, alpha, a.data(), b.data(), beta,
                                                  got.data(), scratch);
        ASSERT_TRUE(took) << m << "x" << n << "x" << k << (trans_a ? " A^T B" : " A B");
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])))
              << "entry " << i << " of " << m << "x" << n << "x" << k
              << (trans_a ? " A^T B" : " A B") << ", alpha " << alpha << ", beta " << beta;
      }
}

// A row or column of A without a nonzero entry still gets beta * C; a NaN in A is not a zero
// and reaches C, as in dense BLAS.
TEST_P(sparse_gemm_test, empty_rows_get_beta_c_and_a_nan_in_a_reaches_c) {
  const int m = 9, n = 64, k = 600;
  for (bool trans_a : {false, true}) {
    auto a = sparse_values(static_cast<std::size_t>(m) * k, 0.7, 7);
    auto at = [&](int i, int e) -> float& {
      return trans_a ? a[static_cast<std::size_t>(e) * m + i] : a[static_cast<std::size_t>(i) * k + e];
    };
    for (int e = 0; e < k; ++e) at(4, e) = 0.0f;  // C's row 4: nothing listed
    at(6, 33) = std::numeric_limits<float>::quiet_NaN();
    auto b = sparse_values(static_cast<std::size_t>(k) * n, 0.0, 8);
    std::vector<float> c(static_cast<std::size_t>(m) * n, 3.0f);
    bool took = trans_a ? cpu::sparse_gemm_tn(m, n, k, 1.f, a.data(), b.data(), 0.5f, c.data(), scratch)
                        : cpu::sparse_gemm_nn(m, n, k, 1.f, a.data(), b.data(), 0.5f, c.data(), scratch);
    ASSERT_TRUE(took);
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(c[static_cast<std::size_t>(4) * n + j], 1.5f) << "column " << j;
      EXPECT_TRUE(std::isnan(c[static_cast<std::size_t>(6) * n + j])) << "column " << j;
      EXPECT_FALSE(std::isnan(c[static_cast<std::size_t>(5) * n + j])) << "column " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(lists, sparse_gemm_test, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "portable" : "native"; });

// Dense inputs, narrow outputs, tiny and huge products go to BLAS: the functions decline and
// leave C.
TEST(sparse_gemm, it_declines_where_dense_blas_is_faster) {
  cpu::sparse_scratch s;
  auto dense = sparse_values(64 * 784, 0.1, 1), half = sparse_values(64 * 784, 0.7, 2);
  auto b = sparse_values(784 * 256, 0.0, 3);
  std::vector<float> c(64 * 256, 7.0f);
  EXPECT_FALSE(cpu::sparse_gemm_nn(64, 256, 784, 1.f, dense.data(), b.data(), 0.f, c.data(), s));
  EXPECT_FALSE(cpu::sparse_gemm_tn(784, 64, 64, 1.f, dense.data(), b.data(), 0.f, c.data(), s));
  EXPECT_FALSE(cpu::sparse_gemm_nn(64, 32, 784, 1.f, half.data(), b.data(), 0.f, c.data(), s));
  EXPECT_FALSE(cpu::sparse_gemm_nn(4, 256, 16, 1.f, half.data(), b.data(), 0.f, c.data(), s));
  // Past max_entries the lists would be an allocation of their own: declined before any.
  const int rows = static_cast<int>(cpu::max_entries / 784) + 1;
  std::vector<float> huge(static_cast<std::size_t>(rows) * 784, 0.0f);
  std::vector<float> huge_c(static_cast<std::size_t>(rows) * 256, 7.0f);
  EXPECT_FALSE(
      cpu::sparse_gemm_nn(rows, 256, 784, 1.f, huge.data(), b.data(), 0.f, huge_c.data(), s));
  EXPECT_EQ(huge_c.back(), 7.0f);
  EXPECT_EQ(s.index.capacity(), 0u);
  for (float x : c) ASSERT_EQ(x, 7.0f);
  EXPECT_TRUE(cpu::sparse_gemm_nn(64, 256, 784, 1.f, half.data(), b.data(), 0.f, c.data(), s));
}

// The MLP's gradient on a batch half of whose inputs are zero (as Fashion-MNIST's pixels are),
// through the CPU backend with the path on (its default) and off: the same numbers.
TEST(sparse_gemm, a_models_gradient_is_the_same_with_the_path_on_and_off) {
  if (!cpu::sparse_path_available())
    GTEST_SKIP() << "the CPU backend takes the zero-skipping path only on AVX-512 machines";
  ASSERT_TRUE(cpu::sparse_path());
  auto b = make_cpu_backend();
  model_spec spec{"mlp", 784, 10, {256}};
  auto net = make_model(spec, *b, 64);
  std::vector<float> params(net->num_params());
  net->init(params.data(), 3);
  auto x = sparse_values(64 * 784, 0.7, 4);
  for (auto& v : x) v = std::abs(v);
  {  // the first layer's product takes the path on this batch
    cpu::sparse_scratch s;
    std::vector<float> w(784 * 256, 1.0f), z(64 * 256);
    ASSERT_TRUE(cpu::sparse_gemm_nn(64, 256, 784, 1.f, x.data(), w.data(), 0.f, z.data(), s));
    ASSERT_TRUE(cpu::sparse_gemm_tn(784, 256, 64, 1.f, x.data(), z.data(), 0.f, w.data(), s));
  }
  std::vector<float> y(64);
  for (int i = 0; i < 64; ++i) y[static_cast<std::size_t>(i)] = static_cast<float>(i % 10);
  std::vector<float> on(params.size()), off(params.size());
  auto loss_on = net->forward_backward(params.data(), batch_view{64, x.data(), y.data()}, on.data());
  cpu::set_sparse_path(false);
  auto loss_off = net->forward_backward(params.data(), batch_view{64, x.data(), y.data()}, off.data());
  cpu::set_sparse_path(true);
  EXPECT_NEAR(loss_on.loss, loss_off.loss, 1e-5 * std::abs(loss_off.loss));
  EXPECT_EQ(loss_on.correct, loss_off.correct);
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < on.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(on[i] - off[i])));
    scale = std::max(scale, static_cast<double>(std::abs(off[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale);
  EXPECT_GT(scale, 0);
}

}  // namespace
}  // namespace actrain
