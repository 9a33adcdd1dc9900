// The sparse models' gradients against central finite differences of an independent
// double-precision forward pass (pairwise interactions summed explicitly, O(n^2), not with the
// O(nk) identity the models use), on batches where rows share gathered rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <actrain/sparse.hpp>

namespace actrain {
namespace {

struct sparse_problem {
  std::vector<std::int64_t> offsets{0};
  std::vector<std::uint32_t> slots;
  std::vector<float> values, y, rows, dense;
  std::size_t unique = 0;
  int batch = 0;
  sparse_batch_view view(bool with_values) const {
    return {batch,    offsets.data(), slots.data(), with_values ? values.data() : nullptr,
            y.data(), unique};
  }
};

sparse_problem make(int dim, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.7f, 0.7f);
  sparse_problem p;
  p.batch = 6;
  p.unique = 9;
  for (int r = 0; r < p.batch; ++r) {
    // 2-4 distinct slots per row; slots repeat across rows (shared ids)
    int n = 2 + r % 3;
    for (int i = 0; i < n; ++i) {
      p.slots.push_back(static_cast<std::uint32_t>((r * 2 + i * 3) % p.unique));
      p.values.push_back(0.5f + (u(rng) + 0.7f));
    }
    p.offsets.push_back(static_cast<std::int64_t>(p.slots.size()));
    p.y.push_back(static_cast<float>(r % 2));
  }
  for (std::size_t i = 0; i < p.unique * dim; ++i) p.rows.push_back(u(rng));
  p.dense = {0.3f};
  return p;
}

/// The mean loss in double, interactions summed pair by pair.
double reference_loss(const sparse_problem& p, const std::vector<double>& rows, double bias,
                      int dim, bool with_values) {
  double total = 0;
  for (int r = 0; r < p.batch; ++r) {
    double z = bias;
    for (auto e = p.offsets[r]; e < p.offsets[r + 1]; ++e) {
      double x = with_values ? p.values[e] : 1.0;
      z += rows[p.slots[e] * dim] * x;
      for (auto f = e + 1; f < p.offsets[r + 1]; ++f) {
        double xf = with_values ? p.values[f] : 1.0;
        double dot = 0;
        for (int c = 1; c < dim; ++c)
          dot += rows[p.slots[e] * dim + c] * rows[p.slots[f] * dim + c];
        z += dot * x * xf;
      }
    }
    double y = p.y[r];
    total += std::log1p(std::exp(-std::fabs(z))) + std::max(z, 0.0) - z * y;
  }
  return total / p.batch;
}

void check(const sparse_model_spec& spec, bool with_values) {
  SCOPED_TRACE(describe(spec) + (with_values ? " with values" : " one-hot"));
  auto m = make_sparse_model(spec);
  int dim = m->dim();
  auto p = make(dim, 7);
  std::vector<float> dg(1), rg(p.unique * dim);
  auto ls =
      m->forward_backward(p.dense.data(), p.rows.data(), p.view(with_values), dg.data(), rg.data());
  std::vector<double> rows(p.rows.begin(), p.rows.end());
  double bias = p.dense[0];
  EXPECT_NEAR(ls.loss / p.batch, reference_loss(p, rows, bias, dim, with_values), 1e-5);
  const double h = 1e-5;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto plus = rows, minus = rows;
    plus[i] += h;
    minus[i] -= h;
    double num = (reference_loss(p, plus, bias, dim, with_values) -
                  reference_loss(p, minus, bias, dim, with_values)) /
                 (2 * h);
    EXPECT_NEAR(rg[i], num, 1e-3 * std::fabs(num) + 1e-6) << "row value " << i;
  }
  double num_b = (reference_loss(p, rows, bias + h, dim, with_values) -
                  reference_loss(p, rows, bias - h, dim, with_values)) /
                 (2 * h);
  EXPECT_NEAR(dg[0], num_b, 1e-3 * std::fabs(num_b) + 1e-6);
  // predict() gives the logits the loss came from
  std::vector<float> logits(p.batch);
  m->predict(p.dense.data(), p.rows.data(), p.view(with_values), logits.data());
  double again = 0;
  for (int r = 0; r < p.batch; ++r)
    again +=
        std::log1p(std::exp(-std::fabs(logits[r]))) + std::max(logits[r], 0.f) - logits[r] * p.y[r];
  EXPECT_NEAR(again, ls.loss, 1e-4);
}

TEST(sparse_models, logistic_regression_gradient_matches_finite_differences) {
  sparse_model_spec s;
  s.kind = "sparse_lr";
  check(s, true);
  check(s, false);
}

TEST(sparse_models, factorization_machine_gradient_matches_finite_differences) {
  sparse_model_spec s;
  s.kind = "fm";
  s.factors = 4;
  check(s, true);
  check(s, false);
}

TEST(sparse_models, bad_specs_are_named) {
  sparse_model_spec s;
  s.kind = "fm";
  s.factors = 0;
  EXPECT_THROW(validate(s), std::invalid_argument);
  s.kind = "mlp";
  EXPECT_THROW(validate(s), std::invalid_argument);
  s.kind = "fm";
  s.factors = 8;
  EXPECT_EQ(sparse_model_dim(s), 9);
}

}  // namespace
}  // namespace actrain
