// Every model's analytic float32 gradient against central finite differences of an independent
// double-precision forward pass (reference_model.hpp).
//
// Tolerance: each component must satisfy |analytic - numeric| <= 1e-3 * |numeric| + 1e-6, and
// the whole vector ||analytic - numeric|| / ||numeric|| < 1e-4. The differences are taken in
// float64 (h = 1e-5, truncation and rounding error ~1e-10), so what is left is the model's own
// float32 rounding (~1e-6 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <actrain/model.hpp>
#include "reference_model.hpp"

namespace actrain {
namespace {

struct problem {
  std::vector<float> params, x, y;
  int rows;
};

problem make_problem(const model_spec& spec, std::size_t n_params, int rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  problem p;
  p.rows = rows;
  // Random biases too (init_params zeroes them), so bias gradients are exercised off zero.
  for (std::size_t i = 0; i < n_params; ++i) p.params.push_back(0.6f * u(rng));
  for (int i = 0; i < rows * spec.input_dim; ++i) p.x.push_back(u(rng));
  for (int r = 0; r < rows; ++r)
    p.y.push_back(spec.kind == "linear" ? 2.0f * u(rng) : static_cast<float>(r % spec.output_dim));
  return p;
}

void check_gradient(const model_spec& spec) {
  SCOPED_TRACE(describe(spec));
  auto b = make_cpu_backend();
  const int rows = 7, max_rows = 9;  // a partial batch: scratch is larger than the batch
  auto m = make_model(spec, *b, max_rows);
  auto pr = make_problem(spec, m->num_params(), rows, 1234);
  std::vector<float> grad(m->num_params(), std::nanf(""));  // every entry must be written
  auto r = m->forward_backward(pr.params.data(), {rows, pr.x.data(), pr.y.data()}, grad.data());

  std::vector<double> p(pr.params.begin(), pr.params.end());
  std::vector<double> x(pr.x.begin(), pr.x.end()), y(pr.y.begin(), pr.y.end());
  double ref = testing::reference_mean_loss(spec, p, x, y, rows);
  EXPECT_NEAR(r.loss / rows, ref, 1e-5 * std::abs(ref) + 1e-7) << "returned loss is the sum";

  const double h = 1e-5;
  double diff2 = 0, norm2 = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    double keep = p[i];
    p[i] = keep + h;
    double up = testing::reference_mean_loss(spec, p, x, y, rows);
    p[i] = keep - h;
    double down = testing::reference_mean_loss(spec, p, x, y, rows);
    p[i] = keep;
    double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-3 * std::abs(numeric) + 1e-6) << "param " << i;
    diff2 += (grad[i] - numeric) * (grad[i] - numeric);
    norm2 += numeric * numeric;
  }
  ASSERT_GT(norm2, 0.0);
  EXPECT_LT(std::sqrt(diff2 / norm2), 1e-4);

  // Forward-only evaluation agrees, and a second pass gives bit-identical results (no state
  // leaks from one call into the next).
  auto e = m->evaluate(pr.params.data(), {rows, pr.x.data(), pr.y.data()});
  EXPECT_EQ(e.loss, r.loss);
  EXPECT_EQ(e.correct, r.correct);
  std::vector<float> grad2(m->num_params());
  auto r2 = m->forward_backward(pr.params.data(), {rows, pr.x.data(), pr.y.data()}, grad2.data());
  EXPECT_EQ(r2.loss, r.loss);
  EXPECT_EQ(grad2, grad);
}

TEST(model_gradient, linear_regression) {
  check_gradient({"linear", 6, 1, {}});
}

TEST(model_gradient, softmax_regression) {
  check_gradient({"softmax", 6, 4, {}});
}

TEST(model_gradient, mlp_two_hidden_layers) {
  check_gradient({"mlp", 6, 3, {5, 4}});
}

TEST(model_gradient, mlp_one_hidden_layer) {
  check_gradient({"mlp", 8, 3, {6}});
}

TEST(model_gradient, correct_count_matches_argmax) {
  model_spec spec{"mlp", 4, 3, {5}};
  auto b = make_cpu_backend();
  auto m = make_model(spec, *b, 16);
  auto pr = make_problem(spec, m->num_params(), 16, 99);
  auto r = m->evaluate(pr.params.data(), {16, pr.x.data(), pr.y.data()});
  // Recount from logits computed by the double reference, one row at a time: a row is right
  // when its loss is below that of every other label.
  std::vector<double> p(pr.params.begin(), pr.params.end());
  std::int64_t correct = 0;
  for (int row = 0; row < 16; ++row) {
    std::vector<double> x(pr.x.begin() + row * 4, pr.x.begin() + row * 4 + 4);
    int label = static_cast<int>(pr.y[row]);
    double own = testing::reference_mean_loss(spec, p, x, {double(label)}, 1);
    bool best = true;
    for (int c = 0; c < 3; ++c)
      if (c != label && testing::reference_mean_loss(spec, p, x, {double(c)}, 1) < own)
        best = false;
    correct += best;
  }
  EXPECT_EQ(r.correct, correct);
}

}  // namespace
}  // namespace actrain
