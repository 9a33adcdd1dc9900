// The barrier with real workers: sync reproduces the reference trainer (1 worker: same batches;
// N workers: the reference with an N-times larger batch), a worker runs the same code against a
// barrier as against a shard, and ssp keeps every worker within s steps of the slowest in a run
// with a straggler.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include "actors/barrier.hpp"
#include "actors/coordinator.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"
#include "test/support/jobs.hpp"
#include "train_harness.hpp"

namespace actrain {
namespace {

using testing::fashion_job;
using testing::max_abs_diff;
using testing::run_deterministic;

// Workers cannot tell a barrier from a shard: both are spawned as the same typed handle.
static_assert(std::is_same_v<decltype(std::declval<caf::actor_system&>().spawn(
                                 barrier, std::declval<barrier_config>())),
                             shard_actor>);

struct barrier_train_test : ::testing::Test {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  barrier_train_test() {
    prepare_config(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

TEST_F(barrier_train_test, sync_with_one_worker_reproduces_the_reference_after_100_steps) {
  auto job = fashion_job(6400, 64);  // one epoch = 100 steps of 64 rows
  job.mode = "sync";
  job.workers = 1;
  job.shards = 2;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  auto ref = reference_train(job, *data, {}, 100);
  auto res = run_job(*sys, job, data);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.samples, 6400);
  for (auto& s : res.shards) EXPECT_EQ(s.version, 100) << "shard " << s.shard;
  EXPECT_LT(max_abs_diff(res.params, ref.params), 1e-5f);
  // The parameters moved: the comparison is not between two untouched initialisations.
  auto init = make_model(job.model, *make_cpu_backend(), 1)->init_params(job.seed);
  EXPECT_GT(max_abs_diff(res.params, init), 1e-2f);
}

TEST_F(barrier_train_test, a_worker_runs_the_same_code_against_a_shard_and_a_barrier) {
  auto job = fashion_job(1280, 32);
  job.workers = 1;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  auto train = std::shared_ptr<const dataset>(data, &data->train);
  auto ref = reference_train(job, *data);
  // Straight to the shard: without prefetch every step sees the previous one's update.
  job.mode = "async";
  job.staleness.average = 0;  // the live weights, not their average
  auto direct = run_deterministic(job, train, true, false);
  // Through a barrier: the prefetched pull waits for the step to be applied.
  job.mode = "sync";
  auto via_barrier = run_deterministic(job, train, true, true);
  EXPECT_LT(max_abs_diff(direct, ref.params), 1e-5f);
  EXPECT_LT(max_abs_diff(via_barrier, ref.params), 1e-5f);
}

TEST_F(barrier_train_test, sync_with_n_workers_equals_the_reference_with_an_n_times_larger_batch) {
  const int n = 3, batch = 16, steps = 40;
  auto job = fashion_job(n * batch * steps, batch * n);
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  auto ref = reference_train(job, *data);  // shuffled batches of n * batch rows
  // Worker i's step t (rows walked in order) is the i-th slice of the reference's batch t.
  auto laid = testing::lay_out(job, data->train, n, batch, steps);
  job.mode = "sync";
  job.workers = n;
  job.shards = 2;
  job.batch = batch;
  auto params = run_deterministic(job, laid, false, true);
  EXPECT_LT(max_abs_diff(params, ref.params), 1e-4f);
  // The tolerance means something: the same workers on batches that do not line up differ.
  auto shuffled = run_deterministic(job, laid, true, true);
  EXPECT_GT(max_abs_diff(shuffled, ref.params), 1e-3f);
  auto init = make_model(job.model, *make_cpu_backend(), 1)->init_params(job.seed);
  EXPECT_GT(max_abs_diff(params, init), 1e-2f);
}

TEST_F(barrier_train_test,
       ssp_keeps_every_worker_within_the_bound_of_the_slowest_with_a_straggler) {
  auto job = test::small_linear_job(4);
  job.mode = "ssp";
  job.ssp_bound = 2;
  job.stragglers = {3};
  job.straggler_delay_s = 0.002;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  // run_job's wiring, with a log on barrier 0.
  set_blas_threads(1);
  auto log = std::make_shared<barrier_log>();
  coordinator_config cc;
  cc.job = job;
  cc.data = data;
  cc.ranges = job_ranges(job);
  for (auto& sc : make_shard_configs(job)) cc.shards.push_back(sys->spawn(shard, std::move(sc)));
  const auto topo = plan_topology(job);
  cc.fronts = make_fronts(*sys, job, topo, cc.shards, log);
  auto train = std::shared_ptr<const dataset>(data, &data->train);
  for (int w = 0; w < job.workers; ++w)
    cc.workers.push_back(
        sys->spawn<caf::detached>(worker, make_worker_config(job, topo, train, w)));
  auto result = run_coordinator(*sys, std::move(cc));
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.samples, 8000);
  // Replay the history: clocks from pushes, the live set from leaves; every answered pull must
  // be within the bound of the slowest live worker at the time it was answered.
  std::vector<std::int64_t> clock(4, 0);
  std::vector<bool> live(4, true);
  std::int64_t answers = 0, max_lead = 0, pushes = 0;
  std::lock_guard<std::mutex> guard{log->mtx};
  for (auto& e : log->events) {
    auto w = static_cast<std::size_t>(e.worker);
    if (e.kind == barrier_event::push) {
      clock[w] = std::max(clock[w], e.step + 1);
      live[w] = true;
      pushes += 1;
    } else if (e.kind == barrier_event::leave) {
      live[w] = false;
    } else if (e.kind == barrier_event::answer && e.worker >= 0 && live[w]) {
      std::int64_t slow = INT64_MAX;
      for (std::size_t i = 0; i < 4; ++i)
        if (live[i]) slow = std::min(slow, clock[i]);
      EXPECT_LE(e.step, slow + job.ssp_bound) << "worker " << e.worker << " answered step "
                                              << e.step << " while the slowest was at " << slow;
      max_lead = std::max(max_lead, e.step - slow);
      answers += 1;
    }
  }
  EXPECT_EQ(pushes, 4 * 2 * ((1000 + 15) / 16));
  EXPECT_GE(answers, pushes);
  RecordProperty("max_lead", static_cast<int>(max_lead));
}

}  // namespace
}  // namespace actrain
