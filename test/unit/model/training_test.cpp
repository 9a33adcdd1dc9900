// A sanity check that the pieces train: plain SGD on softmax regression reaches 100% training
// accuracy on a linearly separable synthetic problem.
#include <gtest/gtest.h>

#include <random>

#include <actrain/model.hpp>

namespace actrain {
namespace {

TEST(model_training, softmax_sgd_separates_a_separable_problem) {
  const int dim = 5, classes = 3, n = 240;
  // Labels come from a fixed "teacher" linear classifier; points with a small margin between
  // the best and second-best class are dropped, so the data is separable with a margin.
  std::mt19937_64 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> teacher(dim * classes);
  for (auto& t : teacher) t = g(rng);
  std::vector<float> x, y;
  while (static_cast<int>(y.size()) < n) {
    std::vector<float> p(dim);
    for (auto& v : p) v = g(rng);
    std::vector<float> s(classes, 0.0f);
    for (int c = 0; c < classes; ++c)
      for (int i = 0; i < dim; ++i) s[c] += p[i] * teacher[i * classes + c];
    int best = 0;
    for (int c = 1; c < classes; ++c)
      if (s[c] > s[best]) best = c;
    float second = -1e30f;
    for (int c = 0; c < classes; ++c)
      if (c != best) second = std::max(second, s[c]);
    if (s[best] - second < 1.0f) continue;
    x.insert(x.end(), p.begin(), p.end());
    y.push_back(static_cast<float>(best));
  }

  auto b = make_cpu_backend();
  const int batch = 40;
  auto m = make_model({"softmax", dim, classes, {}}, *b, n);
  auto params = m->init_params(1);
  std::vector<float> grad(m->num_params());
  const float lr = 0.5f;
  auto first = m->evaluate(params.data(), {n, x.data(), y.data()});
  for (int step = 0; step < 400; ++step) {
    int start = (step * batch) % n;
    m->forward_backward(params.data(), {batch, x.data() + start * dim, y.data() + start},
                        grad.data());
    b->axpy(params.size(), -lr, grad.data(), params.data());
  }
  auto last = m->evaluate(params.data(), {n, x.data(), y.data()});
  EXPECT_EQ(last.correct, n);
  EXPECT_LT(last.loss, 0.25 * first.loss);
}

}  // namespace
}  // namespace actrain
