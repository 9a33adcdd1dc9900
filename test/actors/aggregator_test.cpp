// Local aggregation (in-graph replication): the aggregator turns the slices of N workers into one
// push of their row-weighted mean, deterministically on CAF's test coordinator; with real workers
// it equals the reference trainer with an N-times larger batch, and a whole job trains with it.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include "actors/aggregator.hpp"
#include "actors/barrier.hpp"
#include "train_harness.hpp"

namespace actrain {
namespace {

using testing::fashion_job;
using testing::lay_out;
using testing::max_abs_diff;
using testing::run_deterministic;

struct aggregator_test : testing::front_probe {
  /// A shard holding {1, 2, 3} (plain SGD, lr 1: it moves by exactly minus the applied gradient),
  /// optionally a sync barrier for one group, and an aggregator for `members` workers in front.
  shard_actor make(int members, bool barrier_between = false) {
    make_shard();
    shard_actor front = sh;
    if (barrier_between) {
      barrier_config bc;
      bc.shard = sh;
      bc.workers = 1;
      front = ds.sys->spawn(barrier, std::move(bc));
      spawned.push_back(caf::actor_cast<caf::actor>(front));
    }
    aggregator_config ac;
    ac.front = front;
    ac.members = members;
    auto a = ds.sys->spawn(aggregator, std::move(ac));
    spawned.push_back(caf::actor_cast<caf::actor>(a));
    ds.run();
    return a;
  }
};

TEST_F(aggregator_test, n_workers_slices_become_one_push_of_their_row_weighted_mean) {
  for (bool via_barrier : {false, true}) {
    SCOPED_TRACE(via_barrier ? "aggregator -> barrier -> shard" : "aggregator -> shard");
    answers.clear();
    acks.clear();
    auto a = make(3, via_barrier);
    for (int w = 0; w < 3; ++w) pull(a, w, 0);
    settle();
    ASSERT_EQ(answers.size(), 3u);
    for (auto& x : answers) EXPECT_EQ(x.version, 0);
    answers.clear();
    push(a, 0, 0, 0, {4.f, 0.f, 0.f}, 2);
    pull(a, 0, 1);  // worker 0's prefetch of step 1: must wait for the group's push
    push(a, 1, 0, 0, {0.f, 4.f, 0.f}, 1);
    settle();
    EXPECT_EQ(acks.size(), 2u);
    EXPECT_TRUE(answers.empty()) << "step 1 answered before the group's step 0 was pushed";
    EXPECT_EQ(stats(sh).pushes, 0) << "pushed before every member's slice arrived";
    push(a, 2, 0, 0, {0.f, 0.f, 4.f}, 1);
    settle();
    auto s = stats(sh);
    EXPECT_EQ(s.pushes, 1) << "one push for the whole group";
    EXPECT_EQ(s.version, 1);
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(answers[0].version, 1);
    // (2 * {4,0,0} + {0,4,0} + {0,0,4}) / 4 = {2, 1, 1}, applied once with lr 1.
    EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-1.f, 1.f, 2.f}));
    EXPECT_TRUE(errors.empty());
  }
}

TEST_F(aggregator_test, steps_follow_one_another_and_a_departed_member_is_not_waited_for) {
  auto a = make(2);
  for (std::int64_t t = 0; t < 3; ++t) {
    for (int w = 0; w < 2; ++w) pull(a, w, t);
    settle();
    ASSERT_EQ(answers.size(), 2u) << "step " << t;
    for (auto& x : answers) EXPECT_EQ(x.version, t);
    answers.clear();
    push(a, 0, t, t, {1.f, 0.f, 0.f});
    push(a, 1, t, t, {0.f, 1.f, 0.f});
    settle();
  }
  EXPECT_EQ(stats(sh).pushes, 3);
  // Worker 1 leaves with worker 0's slice of step 3 already in: that slice goes alone.
  pull(a, 0, 3);
  settle();
  answers.clear();
  push(a, 0, 3, 3, {2.f, 0.f, 0.f});
  settle();
  EXPECT_EQ(stats(sh).pushes, 3);
  self->send(a, leave_atom::value, std::int32_t{1}, false);
  settle();
  EXPECT_EQ(stats(sh).pushes, 4);
  pull(a, 0, 4);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  // 3 steps of mean {0.5, 0.5, 0}, then {2, 0, 0}: {1 - 1.5 - 2, 2 - 1.5, 3}.
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-2.5f, 0.5f, 3.f}));
  EXPECT_TRUE(errors.empty());
}

TEST_F(aggregator_test, bad_slices_and_strangers_are_rejected_with_a_reason) {
  auto a = make(2);
  pull(a, 0, 0);
  settle();
  push(a, 0, 0, 0, {1.f, 2.f});  // shard holds 3 values: the first slice fixes the length
  push(a, 0, 0, 0, {1.f, 2.f, 3.f, 4.f});
  push(a, 7, 0, 0, {1.f, 2.f});
  settle();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("expected 2"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("worker 7"), std::string::npos) << errors[1];
}

TEST(aggregator_train_test, n_aggregated_workers_equal_the_reference_with_an_n_times_larger_batch) {
  const int n = 3, batch = 16, steps = 30;
  auto job = fashion_job(n * batch * steps, batch * n);
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  auto ref = reference_train(job, *data);
  auto laid = lay_out(job, data->train, n, batch, steps);
  job.workers = n;
  job.shards = 2;
  job.batch = batch;
  job.local_aggregation = true;
  job.staleness.average = 0;  // async: the live weights, not their average
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    job.mode = mode;
    auto params = run_deterministic(job, laid, false, true);
    EXPECT_LT(max_abs_diff(params, ref.params), 1e-4f);
  }
  auto init = make_model(job.model, *make_cpu_backend(), 1)->init_params(job.seed);
  EXPECT_GT(max_abs_diff(ref.params, init), 1e-2f);
}

TEST(aggregator_train_test, a_whole_job_trains_with_local_aggregation) {
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  auto job = fashion_job(6000, 32);
  job.workers = 3;
  job.shards = 2;
  job.epochs = 2;
  job.local_aggregation = true;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    job.mode = mode;
    auto res = run_job(sys, job, data);
    ASSERT_TRUE(res.ok) << res.error;
    EXPECT_EQ(res.samples, 2 * 6000);
    // One shard step per group step: 2 epochs of 2000 rows per worker in batches of 32.
    for (auto& s : res.shards) EXPECT_EQ(s.version, 2 * ((2000 + 31) / 32)) << "shard " << s.shard;
    EXPECT_GT(res.test.accuracy, 0.6) << "it did not learn";
  }
}

// CAF 0.17 drops a promise nobody delivers without a word: an aggregator that ends while it holds
// a member's pull answers it, with the job's own reason when it has one.
TEST_F(aggregator_test, an_aggregator_that_ends_answers_its_held_pulls) {
  struct ending {
    caf::error reason;
    std::string want;
  };
  for (auto& e : {ending{caf::exit_reason::kill,
                         "aggregator 0 stopped while pull of step 1 by worker 0 waited"},
                  ending{make_error(errc::job_stopped, "stopped: signal TERM"),
                         "actrain.job_stopped: stopped: signal TERM"}}) {
    answers.clear();
    errors.clear();
    auto a = make(2);
    push(a, 0, 0, 0, {1.f, 0.f, 0.f}, 1);
    pull(a, 0, 1);  // held: worker 1 has not pushed step 0
    settle();
    ASSERT_TRUE(answers.empty());
    ASSERT_TRUE(errors.empty());
    self->send_exit(a, e.reason);
    settle();
    EXPECT_TRUE(answers.empty());
    ASSERT_EQ(errors.size(), 1u) << "the held pull is answered";
    EXPECT_NE(errors[0].find(e.want), std::string::npos) << errors[0];
  }
}

}  // namespace
}  // namespace actrain
