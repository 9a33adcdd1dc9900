// validate(job_spec), load_job_data and fit_model_to_data.
#include <cmath>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include <actrain/job.hpp>
#include "data/readers.hpp"

namespace actrain {
namespace {

job_spec good_job() {
  job_spec j;
  j.model.kind = "linear";
  j.model.input_dim = 3;
  j.data.kind = "synthetic_linear";
  return j;
}

// Applies `edit` to a good job and expects validate() to throw a message containing `expected`.
void expect_invalid(const std::function<void(job_spec&)>& edit, const std::string& expected) {
  job_spec j = good_job();
  edit(j);
  try {
    validate(j);
    ADD_FAILURE() << "no error, expected: " << expected;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << expected;
  }
}

TEST(job_validate, accepts_a_good_job_and_unset_dims) {
  EXPECT_NO_THROW(validate(good_job()));
  job_spec j;
  j.model.kind = "softmax";  // dims 0/1: filled from the data later
  j.model.input_dim = 0;
  EXPECT_NO_THROW(validate(j));
  j.mode = "ssp";
  j.ssp_bound = 3;
  j.workers = 4;
  j.backup = 3;
  j.device = "cuda:1";
  EXPECT_NO_THROW(validate(j));
}

TEST(job_validate, names_each_bad_field) {
  expect_invalid([](job_spec& j) { j.workers = 0; }, "job.workers must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.shards = 0; }, "job.shards must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.batch = -2; }, "job.batch must be >= 1, got -2");
  expect_invalid([](job_spec& j) { j.epochs = 0; }, "job.epochs must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.window = 0; }, "job.window must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.mode = "bsp"; }, "job.mode must be one of async, sync, ssp");
  expect_invalid([](job_spec& j) { j.backup = -1; }, "job.backup must be >= 0, got -1");
  expect_invalid(
      [](job_spec& j) {
        j.workers = 2;
        j.backup = 2;
      },
      "job.backup must be < job.workers (2), got 2");
  expect_invalid([](job_spec& j) { j.ssp_bound = -1; }, "job.ssp_bound must be >= 0, got -1");
  expect_invalid([](job_spec& j) { j.late_policy = "keep"; }, "job.late_policy");
  expect_invalid([](job_spec& j) { j.async_pull = "eager"; }, "job.async_pull");
  expect_invalid([](job_spec& j) { j.compute_slots = -1; }, "job.compute_slots must be >= 0, got -1");
  expect_invalid([](job_spec& j) { j.turn_steps = 0; }, "job.turn_steps must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.eval_every = 0; }, "job.eval_every must be > 0");
  expect_invalid([](job_spec& j) { j.target_accuracy = 1.5; }, "job.target_accuracy");
  expect_invalid([](job_spec& j) { j.clip_norm = -1; }, "job.clip_norm");
  expect_invalid([](job_spec& j) { j.device = "gpu"; }, "job.device");
  expect_invalid([](job_spec& j) { j.device = "cuda:x"; }, "job.device");
  expect_invalid([](job_spec& j) { j.name = ""; }, "job.name");
}

TEST(job_validate, names_bad_model_optimizer_and_data_fields) {
  expect_invalid([](job_spec& j) { j.model.kind = "cnn"; },
                 "job.model.kind must be one of linear, softmax, mlp, got 'cnn'");
  expect_invalid([](job_spec& j) { j.model.input_dim = -1; }, "job.model.input_dim");
  expect_invalid([](job_spec& j) { j.model.output_dim = 3; }, "job.model.output_dim");
  expect_invalid(
      [](job_spec& j) {
        j.model.kind = "mlp";
        j.model.output_dim = 10;
        j.model.hidden = {8, 0};
      },
      "job.model.hidden[1] must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.model.hidden = {4}; }, "job.model.hidden");
  expect_invalid([](job_spec& j) { j.optim.lr = 0; }, "job.optim");
  expect_invalid([](job_spec& j) { j.optim.kind = "lbfgs"; }, "job.optim");
  expect_invalid([](job_spec& j) { j.staleness.kind = "sometimes"; }, "job.staleness");
  expect_invalid([](job_spec& j) { j.data.kind = "parquet"; }, "job.data.kind");
  expect_invalid([](job_spec& j) { j.data.rows = 0; }, "job.data.rows must be >= 1, got 0");
  expect_invalid([](job_spec& j) { j.data.features = 0; }, "job.data.features");
  expect_invalid([](job_spec& j) { j.data.noise = -0.5f; }, "job.data.noise");
  expect_invalid([](job_spec& j) { j.data.train_subset = -1; }, "job.data.train_subset");
  expect_invalid([](job_spec& j) { j.data.kind = "csv"; }, "job.data.path");
  expect_invalid(
      [](job_spec& j) {
        j.data.kind = "csv";
        j.data.path = "x.csv";
        j.data.test_fraction = 1;
      },
      "job.data.test-fraction");
  // linear with 3 inputs has 4 parameters: 5 shards cannot each own one.
  expect_invalid([](job_spec& j) { j.shards = 5; },
                 "job.shards must be <= the model's parameter count (4), got 5");
}

// One topology decision per job, read by the local engine and the cluster alike.
TEST(plan_topology, what_stands_in_front_of_the_shards_in_each_mode) {
  job_spec j;
  j.model = {"mlp", 784, 10, {256}};
  j.workers = 4;
  auto t = plan_topology(j, placement::one_process, 8);
  EXPECT_FALSE(t.barriers);
  EXPECT_FALSE(t.aggregators);
  EXPECT_FALSE(t.push_pull);  // async in one process: a prefetched pull overlaps the compute
  EXPECT_FALSE(t.workers_on_scheduler);
  // Across processes the next weights answer the push: one round trip per shard and step.
  EXPECT_TRUE(plan_topology(j, placement::cluster, 8).push_pull);
  EXPECT_EQ(plan_topology(j, placement::cluster, 8).compute_slots, 0);
  // More computing workers than cores: they keep the cores busy, a prefetch only adds staleness;
  // the next weights answer the push. More than twice the cores: they take turns in cores + 1
  // compute slots, pulling once they hold one (neither prefetched nor with the push).
  t = plan_topology(j, placement::one_process, 2);
  EXPECT_TRUE(t.push_pull);
  EXPECT_EQ(t.compute_slots, 0);
  t = plan_topology(j, placement::one_process, 1);
  EXPECT_EQ(t.compute_slots, 2);
  EXPECT_FALSE(t.push_pull);
  EXPECT_EQ(plan_topology(j, placement::one_process, 4).compute_slots, 0);
  EXPECT_FALSE(plan_topology(j, placement::one_process, 4).push_pull);
  j.compute_slots = 5;
  EXPECT_EQ(plan_topology(j, placement::one_process, 1).compute_slots, 5);
  j.compute_slots = 0;
  j.simulated_compute_s = 0.001;  // sleeping workers leave the cores free
  EXPECT_EQ(plan_topology(j, placement::one_process, 1).compute_slots, 0);
  EXPECT_FALSE(plan_topology(j, placement::one_process, 1).push_pull);
  j.simulated_compute_s = 0;
  j.async_pull = "prefetch";
  EXPECT_FALSE(plan_topology(j, placement::cluster).push_pull);
  t = plan_topology(j, placement::one_process, 1);
  EXPECT_FALSE(t.push_pull);
  EXPECT_EQ(t.compute_slots, 0);
  j.async_pull = "with-push";
  t = plan_topology(j, placement::one_process, 1);
  EXPECT_TRUE(t.push_pull);
  EXPECT_EQ(t.compute_slots, 0);
  j.async_pull = "in-turn";  // asked for: also where the cores outnumber the workers
  EXPECT_EQ(plan_topology(j, placement::one_process, 8).compute_slots, 9);
  EXPECT_THROW(plan_topology(j, placement::cluster), std::invalid_argument);
  j.async_pull = "auto";

  j.mode = "sync";
  j.backup = 1;
  t = plan_topology(j);
  EXPECT_TRUE(t.barriers);
  EXPECT_EQ(t.barrier_workers, 4);
  EXPECT_EQ(t.barrier_backup, 1);
  EXPECT_TRUE(t.push_pull);  // step t+1's weights cannot come before step t is applied

  j.mode = "ssp";
  t = plan_topology(j);
  EXPECT_TRUE(t.barriers);
  EXPECT_EQ(t.barrier_backup, 0);  // backups are a sync matter
  EXPECT_FALSE(t.push_pull);
  EXPECT_FALSE(plan_topology(j, placement::cluster).push_pull);  // its barrier holds a pull

  j.mode = "sync";
  j.backup = 0;
  j.local_aggregation = true;
  t = plan_topology(j);
  EXPECT_TRUE(t.aggregators);
  EXPECT_EQ(t.barrier_workers, 1);  // the process pushes as one group
  EXPECT_TRUE(t.push_pull);
  EXPECT_THROW(plan_topology(j, placement::cluster), std::invalid_argument);
}

TEST(plan_topology, only_a_lone_small_model_worker_in_one_process_shares_the_scheduler) {
  job_spec j;
  j.model = {"linear", 100, 1, {}};
  j.workers = 1;
  auto t = plan_topology(j);
  EXPECT_TRUE(t.workers_on_scheduler);
  EXPECT_TRUE(t.push_pull);  // no prefetch when it takes turns with its shard anyway
  EXPECT_FALSE(plan_topology(j, placement::cluster).workers_on_scheduler);
  j.async_pull = "prefetch";
  EXPECT_FALSE(plan_topology(j, placement::cluster).push_pull);
  j.async_pull = "auto";
  j.workers = 2;
  EXPECT_FALSE(plan_topology(j).workers_on_scheduler);
  j.workers = 1;
  j.simulated_compute_s = 0.001;  // sleeps block a thread
  EXPECT_FALSE(plan_topology(j).workers_on_scheduler);
  j.simulated_compute_s = 0;
  j.model = {"mlp", 784, 10, {256}};  // ~1 ms steps hide the wake-ups
  EXPECT_FALSE(plan_topology(j).workers_on_scheduler);
}

TEST(load_job_data, synthetic_train_and_test_share_one_model_and_are_deterministic) {
  job_spec j = good_job();
  j.data.rows = 500;
  j.data.test_rows = 100;
  j.data.features = 3;
  j.data.noise = 0;
  const job_data a = load_job_data(j);
  ASSERT_EQ(a.train.rows, 500);
  ASSERT_EQ(a.test.rows, 100);
  EXPECT_EQ(a.train.features, 3);
  EXPECT_EQ(a.train.num_classes, 0);
  // Without noise, the closed-form fit of train explains test exactly: one true w for both.
  std::vector<double> sol;
  EXPECT_LT(least_squares_mse(a.train, &sol), 1e-8);
  ASSERT_EQ(sol.size(), 4u);
  double test_mse = 0;
  for (std::int64_t r = 0; r < a.test.rows; ++r) {
    double pred = sol[3];
    for (int c = 0; c < 3; ++c) pred += sol[c] * a.test.x[r * 3 + c];
    test_mse += (pred - a.test.y[r]) * (pred - a.test.y[r]);
  }
  EXPECT_LT(test_mse / 100, 1e-8);

  const job_data b = load_job_data(j);
  EXPECT_EQ(a.train.x, b.train.x);
  EXPECT_EQ(a.test.y, b.test.y);
  j.seed = 43;
  const job_data c = load_job_data(j);
  EXPECT_NE(a.train.x, c.train.x);
}

TEST(load_job_data, subsets_take_the_first_rows) {
  job_spec j = good_job();
  j.data.rows = 300;
  j.data.test_rows = 50;
  j.data.features = 3;
  const job_data full = load_job_data(j);
  j.data.train_subset = 120;
  j.data.test_subset = 7;
  const job_data sub = load_job_data(j);
  ASSERT_EQ(sub.train.rows, 120);
  ASSERT_EQ(sub.test.rows, 7);
  EXPECT_TRUE(std::equal(sub.train.x.begin(), sub.train.x.end(), full.train.x.begin()));
  EXPECT_TRUE(std::equal(sub.test.y.begin(), sub.test.y.end(), full.test.y.begin()));
  j.data.train_subset = 1000;  // larger than the set: all of it
  EXPECT_EQ(load_job_data(j).train.rows, 300);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(load_job_data, csv_holds_out_the_last_rows_and_infers_classes) {
  std::string text = "a,b,label\n";
  for (int i = 0; i < 10; ++i)
    text += std::to_string(i) + "," + std::to_string(2 * i) + "," + std::to_string(i % 3) + "\n";
  job_spec j;
  j.model.kind = "softmax";
  j.data.kind = "csv";
  j.data.path = write_temp("actrain_job_test.csv", text);
  j.data.label = "label";
  j.data.test_fraction = 0.2;
  const job_data d = load_job_data(j);
  ASSERT_EQ(d.train.rows, 8);
  ASSERT_EQ(d.test.rows, 2);
  EXPECT_EQ(d.train.features, 2);
  EXPECT_EQ(d.train.num_classes, 3);
  EXPECT_EQ(d.test.num_classes, 3);
  EXPECT_FLOAT_EQ(d.test.x[0], 8);  // row 8 is the first held out
  EXPECT_FLOAT_EQ(d.test.y[1], 0);  // 9 % 3

  fit_model_to_data(j, d);
  EXPECT_EQ(j.model.input_dim, 2);
  EXPECT_EQ(j.model.output_dim, 3);
  std::remove(j.data.path.c_str());
}

TEST(load_job_data, csv_rejects_a_non_integer_label_for_a_classifier) {
  job_spec j;
  j.model.kind = "softmax";
  j.data.kind = "csv";
  j.data.path = write_temp("actrain_job_test_bad.csv", "a,y\n1,0\n2,1.5\n3,1\n");
  try {
    load_job_data(j);
    ADD_FAILURE() << "no error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find(j.data.path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("row 2"), std::string::npos) << e.what();
  }
  std::remove(j.data.path.c_str());
}

// One stray label must not decide the model's size: a label far beyond the rows, or classes in
// between that no row has, is refused by row and label instead of training a huge or wrong
// softmax.
TEST(load_job_data, csv_refuses_a_stray_label_that_would_invent_classes) {
  job_spec j;
  j.model.kind = "softmax";
  j.data.kind = "csv";
  auto refused = [&](const std::string& name, const std::string& text, const std::string& says) {
    j.data.path = write_temp(name, text);
    try {
      load_job_data(j);
      ADD_FAILURE() << "no error for " << name;
    } catch (const data_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(j.data.path), std::string::npos) << e.what();
    }
    std::remove(j.data.path.c_str());
  };
  refused("actrain_stray_huge.csv", "a,y\n1,0\n2,1\n3,100000000\n4,1\n",
          "row 3: label 100000000 means 100000000 + 1 classes, more than the file's 4 rows");
  refused("actrain_stray_gap.csv",
          "a,y\n1,0\n2,1\n3,2\n4,10\n5,1\n6,0\n7,2\n8,1\n9,0\n10,2\n11,1\n",
          "labels go up to 10 (row 4), but 7 classes below it have no row (3, 4, 5, 6, 7, ...)");
  // With the class count configured, unseen classes are the user's choice.
  j.model.output_dim = 11;
  j.data.path = write_temp("actrain_stray_ok.csv", "a,y\n1,0\n2,1\n3,10\n4,1\n");
  EXPECT_EQ(load_job_data(j).train.num_classes, 11);
  std::remove(j.data.path.c_str());
}

// [data] header, delimiter, test-fraction and standardize, by hand: the training rows' mean and
// population standard deviation scale both sets (features and a regression target); a
// classifier's labels stay class indices; a constant column becomes 0, not NaN.
TEST(load_job_data, csv_options_header_delimiter_fraction_and_standardize) {
  job_spec j;
  j.model.kind = "linear";
  j.data.kind = "csv";
  j.data.header = false;
  j.data.delimiter = "tab";
  j.data.test_fraction = 0.25;
  j.data.standardize = true;
  // x1 = 1,2,3 (train) | 10 (test); x2 constant 5; y = 2,4,6 | 20. Tab-separated, no header.
  j.data.path = write_temp("actrain_std.tsv", "1\t5\t2\n2\t5\t4\n3\t5\t6\n10\t5\t20\n");
  const job_data d = load_job_data(j);
  ASSERT_EQ(d.train.rows, 3);
  ASSERT_EQ(d.test.rows, 1);
  const float sd1 = std::sqrt(2.0f / 3), sdy = 2 * sd1;  // population sd of 1,2,3 and 2,4,6
  EXPECT_FLOAT_EQ(d.scaling.mean[0], 2);
  EXPECT_FLOAT_EQ(d.scaling.scale[0], sd1);
  EXPECT_FLOAT_EQ(d.scaling.scale[1], 1);  // constant column
  EXPECT_TRUE(d.scaling.target);
  EXPECT_FLOAT_EQ(d.scaling.y_mean, 4);
  EXPECT_FLOAT_EQ(d.scaling.y_scale, sdy);
  EXPECT_NEAR(d.train.x[0], -1 / sd1, 1e-6);
  EXPECT_FLOAT_EQ(d.train.x[1], 0);
  EXPECT_NEAR(d.train.y[2], 2 / sdy, 1e-6);
  EXPECT_NEAR(d.test.x[0], 8 / sd1, 1e-5);  // scaled by the training statistics
  EXPECT_NEAR(d.test.y[0], 16 / sdy, 1e-5);
  // A classifier: features standardized, labels untouched.
  j.model.kind = "softmax";
  j.data.path = write_temp("actrain_std_cls.tsv", "1\t5\t0\n2\t5\t1\n3\t5\t0\n4\t5\t1\n");
  const job_data c = load_job_data(j);
  EXPECT_FALSE(c.scaling.target);
  EXPECT_EQ(c.train.y, (std::vector<float>{0, 1, 0}));
  EXPECT_FLOAT_EQ(c.scaling.mean[0], 2);
  std::remove(j.data.path.c_str());
}

// A header expected but the first line all numbers: the file has none, and reading it as one
// would silently drop a row.
TEST(load_job_data, csv_refuses_a_numeric_first_line_as_header_and_a_bad_delimiter) {
  job_spec j;
  j.model.kind = "linear";
  j.data.kind = "csv";
  j.data.path = write_temp("actrain_noheader.csv", "1,2,3\n4,5,6\n7,8,9\n");
  try {
    load_job_data(j);
    ADD_FAILURE() << "no error";
  } catch (const data_error& e) {
    EXPECT_NE(std::string(e.what()).find(j.data.path + ":1: the first line is all numbers"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("header=false"), std::string::npos) << e.what();
  }
  j.data.header = false;
  EXPECT_EQ(load_job_data(j).train.rows + load_job_data(j).test.rows, 3);
  j.data.delimiter = ";;";
  expect_invalid([&](job_spec& k) { k = j; }, "data.delimiter must be one character");
  std::remove(j.data.path.c_str());
}

// More workers than rows: refused (each worker trains rows of its own); fewer rows per worker
// than a batch: a warning naming the numbers.
TEST(fit_model_to_data, refuses_more_workers_than_rows_and_warns_of_short_batches) {
  job_data d;
  d.train.rows = 360;
  d.train.features = 2;
  d.train.x.assign(720, 0.f);
  d.train.y.assign(360, 0.f);
  job_spec j;
  j.model.kind = "linear";
  j.workers = 500;
  try {
    fit_model_to_data(j, d);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("job.workers is 500 but the data has 360 training rows"),
              std::string::npos)
        << e.what();
  }
  j.workers = 30;
  j.batch = 64;
  fit_model_to_data(j, d);
  EXPECT_NE(data_warning(j, d).find("job.workers x job.batch = 30 x 64 exceeds the 360 training "
                                    "rows: each worker has about 12 rows"),
            std::string::npos)
      << data_warning(j, d);
  j.workers = 5;
  EXPECT_EQ(data_warning(j, d), "");
}

TEST(fit_model_to_data, fills_dims_and_rejects_mismatches) {
  job_data d;
  d.train.rows = 2;
  d.train.features = 5;
  d.train.num_classes = 4;
  d.train.x.assign(10, 0.f);
  d.train.y = {0, 3};
  job_spec j;
  j.model.kind = "mlp";
  j.model.hidden = {7};
  fit_model_to_data(j, d);
  EXPECT_EQ(j.model.input_dim, 5);
  EXPECT_EQ(j.model.output_dim, 4);

  j.model.input_dim = 6;
  EXPECT_THROW(fit_model_to_data(j, d), std::invalid_argument);
  j.model.input_dim = 5;
  j.model.output_dim = 3;  // fewer classes than the labels need
  EXPECT_THROW(fit_model_to_data(j, d), std::invalid_argument);

  job_spec lin;
  lin.model.kind = "linear";
  fit_model_to_data(lin, d);
  EXPECT_EQ(lin.model.output_dim, 1);
  d.train.num_classes = 0;
  job_spec soft;
  soft.model.kind = "softmax";
  EXPECT_THROW(fit_model_to_data(soft, d), std::invalid_argument);  // regression data
}

}  // namespace
}  // namespace actrain
