// Synthetic regression data and the closed-form least-squares yardstick.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "data/readers.hpp"

namespace actrain {
namespace {

TEST(LinearRegression, DeterministicFromSeed) {
  std::vector<float> w1, w2;
  float b1 = 0, b2 = 0;
  const dataset a = make_linear_regression(100, 4, 0.1f, 5, &w1, &b1);
  const dataset b = make_linear_regression(100, 4, 0.1f, 5, &w2, &b2);
  const dataset c = make_linear_regression(100, 4, 0.1f, 6);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(w1, w2);
  EXPECT_EQ(b1, b2);
  EXPECT_NE(a.x, c.x);
  EXPECT_EQ(a.rows, 100);
  EXPECT_EQ(a.features, 4);
  EXPECT_EQ(a.num_classes, 0);
  ASSERT_EQ(w1.size(), 4u);
  // Noise-free data lies exactly on the plane.
  std::vector<float> w;
  float bias = 0;
  const dataset exact = make_linear_regression(20, 4, 0.f, 9, &w, &bias);
  for (int r = 0; r < 20; ++r) {
    double y = bias;
    for (int j = 0; j < 4; ++j) y += double(exact.x[r * 4 + j]) * w[j];
    EXPECT_NEAR(exact.y[r], y, 1e-5);
  }
}

TEST(LinearRegression, DrawsLookStandardNormal) {
  const dataset d = make_linear_regression(20000, 5, 0.f, 3);
  double s = 0, s2 = 0;
  for (float v : d.x) s += v, s2 += double(v) * v;
  const double n = double(d.x.size()), mean = s / n;
  EXPECT_NEAR(mean, 0, 0.01);
  EXPECT_NEAR(s2 / n - mean * mean, 1, 0.02);
}

TEST(LeastSquares, RecoversTrueWeightsAndNoiseLevel) {
  std::vector<float> w;
  float b = 0;
  const float noise = 0.1f;
  const dataset d = make_linear_regression(20000, 10, noise, 11, &w, &b);
  std::vector<double> sol;
  const double mse = least_squares_mse(d, &sol);
  ASSERT_EQ(sol.size(), 11u);
  // Standard error of each coefficient is about noise / sqrt(rows) = 7e-4.
  for (int j = 0; j < 10; ++j) EXPECT_NEAR(sol[j], w[j], 5e-3) << "w" << j;
  EXPECT_NEAR(sol[10], b, 5e-3);
  // Residual variance: noise^2 (1 - 11/20000), with sampling spread about 1%.
  EXPECT_NEAR(mse, noise * noise, 0.05 * noise * noise);
}

TEST(LeastSquares, ExactFitHasZeroError) {
  dataset d;
  d.rows = 4;
  d.features = 1;
  d.x = {0, 1, 2, 3};
  d.y = {1, 3, 5, 7};  // y = 2 x + 1
  std::vector<double> sol;
  EXPECT_NEAR(least_squares_mse(d, &sol), 0, 1e-12);
  EXPECT_NEAR(sol[0], 2, 1e-9);
  EXPECT_NEAR(sol[1], 1, 1e-9);
}

TEST(LeastSquares, SingularThrows) {
  dataset d;
  d.rows = 4;
  d.features = 2;
  d.x = {1, 2, 2, 4, 3, 6, 4, 8};  // second column = 2 x first
  d.y = {1, 2, 3, 4};
  EXPECT_THAT([&] { least_squares_mse(d); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("singular")));
  dataset constant;
  constant.rows = 3;
  constant.features = 1;
  constant.x = {5, 5, 5};  // the same as the intercept column, scaled
  constant.y = {1, 2, 3};
  EXPECT_THROW(least_squares_mse(constant), std::invalid_argument);
}

}  // namespace
}  // namespace actrain
