// reference_train(): converges to the closed form on linear regression, learns Fashion-MNIST,
// and is a pure function of the job (same seed, same parameters).
#include <gtest/gtest.h>

#include <cmath>

#include <actrain/reference_trainer.hpp>
#include "data/readers.hpp"

namespace actrain {
namespace {

job_spec linear_job() {
  job_spec j;
  j.model.kind = "linear";
  j.data.kind = "synthetic_linear";
  j.data.rows = 20000;
  j.data.test_rows = 2000;
  j.data.features = 20;
  j.data.noise = 0.1f;
  j.batch = 64;
  j.epochs = 6;
  // Cosine decay to 0: the large early steps find the solution, the small late ones remove the
  // SGD noise floor (constant-lr SGD stalls at a relative excess of about lr * features / batch).
  j.optim.kind = "sgd";
  j.optim.lr = 0.05f;
  j.optim.schedule = "cosine";
  j.optim.total_steps = j.epochs * ((j.data.rows + j.batch - 1) / j.batch);
  return j;
}

TEST(reference_train, linear_regression_reaches_the_closed_form_mse) {
  job_spec j = linear_job();
  const job_data d = load_job_data(j);
  fit_model_to_data(j, d);
  const train_result r = reference_train(j, d);

  const double best = least_squares_mse(d.train);
  auto cpu = make_cpu_backend();
  const double mse = evaluate(j.model, r.params, d.train, *cpu).loss;
  EXPECT_GE(mse, best * (1 - 1e-5));  // nothing beats least squares (float rounding aside)
  EXPECT_LT((mse - best) / best, 1e-3) << "mse " << mse << " closed form " << best;
  RecordProperty("relative_gap", std::to_string((mse - best) / best));
  // Test MSE near the noise variance the data was drawn with.
  EXPECT_NEAR(r.test.loss, 0.01, 0.002);
  EXPECT_EQ(r.samples, j.epochs * j.data.rows);
  EXPECT_EQ(r.history.size(), static_cast<std::size_t>(j.epochs));
  EXPECT_GT(r.seconds, 0);
}

job_spec fashion_job() {
  job_spec j;
  j.model.kind = "softmax";
  j.data.kind = "fashion_mnist";
  j.data.train_subset = 10000;
  j.batch = 64;
  j.epochs = 2;
  j.optim.lr = 0.1f;
  return j;
}

TEST(reference_train, softmax_learns_a_fashion_mnist_subset) {
  job_spec j = fashion_job();
  const job_data d = load_job_data(j);
  fit_model_to_data(j, d);
  ASSERT_EQ(j.model.input_dim, 784);
  ASSERT_EQ(j.model.output_dim, 10);
  std::vector<progress_point> seen;
  const train_result r = reference_train(j, d, [&](const progress_point& p) { seen.push_back(p); });
  EXPECT_GE(r.test.accuracy, 0.75);
  RecordProperty("test_accuracy", std::to_string(r.test.accuracy));
  EXPECT_EQ(r.test.rows, 10000);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].epoch, 1);
  EXPECT_EQ(seen[1].epoch, 2);
  EXPECT_LT(seen[1].train_loss, seen[0].train_loss);
  EXPECT_EQ(seen[1].test_accuracy, r.test.accuracy);
}

TEST(reference_train, same_seed_gives_identical_parameters) {
  job_spec j = fashion_job();
  j.model.kind = "mlp";
  j.model.hidden = {32};
  j.data.train_subset = 2000;
  j.data.test_subset = 500;
  j.epochs = 1;
  j.optim.kind = "momentum";
  j.optim.lr = 0.05f;
  j.clip_norm = 5;
  const job_data d = load_job_data(j);
  fit_model_to_data(j, d);
  const train_result a = reference_train(j, d);
  const train_result b = reference_train(j, d);
  EXPECT_EQ(a.params, b.params);  // bit for bit
  EXPECT_EQ(a.test.loss, b.test.loss);
  j.seed = 7;
  const train_result c = reference_train(j, d);
  EXPECT_NE(a.params, c.params);
}

TEST(reference_train, max_steps_target_accuracy_and_eval_every) {
  job_spec j = fashion_job();
  j.data.train_subset = 6400;
  j.data.test_subset = 1000;
  const job_data d = load_job_data(j);
  fit_model_to_data(j, d);

  const train_result stepped = reference_train(j, d, {}, 30);
  EXPECT_EQ(stepped.samples, 30 * 64);
  EXPECT_EQ(stepped.history.size(), 1u);  // the final evaluation only

  job_spec half = j;
  half.eval_every = 0.5;  // 100 batches per epoch: evaluate every 50 steps
  const train_result r = reference_train(half, d);
  ASSERT_EQ(r.history.size(), 4u);
  EXPECT_EQ(r.history[0].step, 50);
  EXPECT_EQ(r.history[3].step, 200);

  job_spec early = j;
  early.epochs = 5;
  early.target_accuracy = 0.5;  // reached after the first epoch
  const train_result e = reference_train(early, d);
  EXPECT_EQ(e.history.size(), 1u);
  EXPECT_EQ(e.samples, 6400);
  EXPECT_GE(e.test.accuracy, 0.5);
}

TEST(reference_train, clipping_bounds_each_update) {
  job_spec j = linear_job();
  j.data.rows = 640;
  j.data.test_rows = 10;
  j.optim.schedule = "constant";
  j.optim.lr = 0.1f;
  j.clip_norm = 0.01f;
  const job_data d = load_job_data(j);
  fit_model_to_data(j, d);
  const train_result r = reference_train(j, d, {}, 1);
  auto cpu = make_cpu_backend();
  const std::vector<float> w0 = make_model(j.model, *cpu, 1)->init_params(j.seed);
  double moved = 0;
  for (std::size_t i = 0; i < w0.size(); ++i) moved += std::pow(r.params[i] - w0[i], 2);
  // One SGD step of a gradient clipped to norm 0.01 with lr 0.1 moves exactly 0.001 (the
  // unclipped gradient of this problem is far larger).
  EXPECT_NEAR(std::sqrt(moved), 0.001, 1e-6);
}

TEST(reference_train, rejects_a_model_that_does_not_fit_the_data) {
  job_spec j = linear_job();
  j.data.rows = 100;
  const job_data d = load_job_data(j);
  j.model.input_dim = 5;  // data has 20 features
  EXPECT_THROW(reference_train(j, d), std::invalid_argument);
}

}  // namespace
}  // namespace actrain
