// evaluate(): mean loss and accuracy against values computed by hand, in any batch size.
#include <gtest/gtest.h>

#include <cmath>

#include <actrain/job.hpp>

namespace actrain {
namespace {

dataset make_set(int features, int classes, std::vector<float> x, std::vector<float> y) {
  dataset d;
  d.features = features;
  d.num_classes = classes;
  d.rows = static_cast<std::int64_t>(y.size());
  d.x = std::move(x);
  d.y = std::move(y);
  return d;
}

TEST(evaluate, linear_mse_by_hand_in_any_batch_size) {
  model_spec spec{"linear", 2, 1, {}};
  const std::vector<float> params = {1.f, -2.f, 0.5f};  // w then b
  // predictions 1.5, -1.5, -1.5; errors 0.5, -1.5, -1.5
  const dataset d = make_set(2, 0, {1, 0, 0, 1, 2, 2}, {1, 0, 0});
  auto cpu = make_cpu_backend();
  for (int batch : {1, 2, 1000}) {
    const eval_result r = evaluate(spec, params, d, *cpu, batch);
    EXPECT_NEAR(r.loss, 4.75 / 3, 1e-6) << "batch " << batch;
    EXPECT_EQ(r.accuracy, 0);
    EXPECT_EQ(r.rows, 3);
  }
}

TEST(evaluate, softmax_loss_and_accuracy_by_hand) {
  model_spec spec{"softmax", 2, 2, {}};
  const std::vector<float> params = {1, 0, 0, 1, 0, 0};  // W = I, b = 0: logits = x
  const dataset d = make_set(2, 2, {2, 0, 0, 3, 1, 1.5f}, {0, 0, 1});
  const double expected =
      (std::log1p(std::exp(-2.0)) + std::log1p(std::exp(3.0)) + std::log1p(std::exp(-0.5))) / 3;
  auto cpu = make_cpu_backend();
  for (int batch : {1, 2, 3}) {
    const eval_result r = evaluate(spec, params, d, *cpu, batch);
    EXPECT_NEAR(r.loss, expected, 1e-5) << "batch " << batch;
    EXPECT_NEAR(r.accuracy, 2.0 / 3, 1e-12);
  }
}

TEST(evaluate, rejects_wrong_sizes_and_handles_an_empty_set) {
  model_spec spec{"linear", 2, 1, {}};
  auto cpu = make_cpu_backend();
  const dataset d = make_set(2, 0, {1, 2}, {3});
  EXPECT_THROW(evaluate(spec, {1.f, 2.f}, d, *cpu), std::invalid_argument);
  const dataset wrong = make_set(3, 0, {1, 2, 3}, {3});
  EXPECT_THROW(evaluate(spec, {1.f, 2.f, 0.f}, wrong, *cpu), std::invalid_argument);
  EXPECT_THROW(evaluate(spec, {1.f, 2.f, 0.f}, d, *cpu, 0), std::invalid_argument);
  const eval_result empty = evaluate(spec, {1.f, 2.f, 0.f}, dataset{}, *cpu);
  EXPECT_EQ(empty.rows, 0);
}

TEST(evaluate, a_classifier_reports_precision_recall_and_average_precision_per_class) {
  // W = I (3 x 3), b = 0: the logits are the rows themselves, the five rows of
  // class_metrics_test's hand-worked case; every batch size gives the same report.
  model_spec spec{"softmax", 3, 3, {}};
  std::vector<float> params(12, 0.f);
  params[0] = params[4] = params[8] = 1.f;
  const dataset d = make_set(3, 3, {2, 0, 0, 0, 1, 0, 0, 2, 1, 0, 0, 3, 1, 0, 0}, {0, 1, 2, 0, 1});
  auto cpu = make_cpu_backend();
  for (int batch : {1, 2, 1000}) {
    const eval_result r = evaluate(spec, params, d, *cpu, batch);
    ASSERT_EQ(r.classes.precision.size(), 3u) << "batch " << batch;
    EXPECT_DOUBLE_EQ(r.classes.precision[0], 0.5);
    EXPECT_DOUBLE_EQ(r.classes.recall[2], 0);
    EXPECT_NEAR(r.classes.average_precision[0], 0.7, 1e-6);
    EXPECT_NEAR(r.classes.average_precision[1], 0.25 + 1.0 / 3, 1e-6);
    EXPECT_NEAR(r.classes.macro_recall, 1.0 / 3, 1e-12);
    EXPECT_DOUBLE_EQ(r.accuracy, 0.4);
  }
  // Regression has no report.
  model_spec lin{"linear", 2, 1, {}};
  const dataset l = make_set(2, 0, {1, 0, 0, 1}, {1, 0});
  EXPECT_TRUE(evaluate(lin, {1.f, -2.f, 0.5f}, l, *cpu).classes.empty());
}

}  // namespace
}  // namespace actrain
