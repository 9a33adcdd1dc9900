// The barrier with real workers: sync reproduces the reference trainer (1 worker: same batches;
// N workers: the reference with an N-times larger batch), a worker runs the same code against a
// barrier as against a shard, and ssp keeps every worker within s steps of the slowest in a run
// with a straggler.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include <gtest/gtest.h>

#include "actor_fixture.hpp"
#include "actors/barrier.hpp"
#include "actors/engine.hpp"

namespace actrain {
namespace {

// Workers cannot tell a barrier from a shard: both are spawned as the same typed handle.
static_assert(std::is_same_v<decltype(std::declval<caf::actor_system&>().spawn(
                                 barrier, std::declval<barrier_config>())),
                             shard_actor>);

/// An MLP job on the first `rows` Fashion-MNIST training rows.
job_spec fashion_job(std::int64_t rows, int batch) {
  job_spec job;
  job.model.kind = "mlp";
  job.model.hidden = {32};
  job.data.kind = "fashion_mnist";
  job.data.train_subset = rows;
  job.data.test_subset = 500;
  job.batch = batch;
  job.epochs = 1;
  job.eval_every = 100;
  job.optim.kind = "sgd";
  job.optim.lr = 0.1f;
  return job;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

/// Runs `job` on the deterministic scheduler without a coordinator: shards, fronts (barriers for
/// sync/ssp), and workers walking their rows; returns the parameters assembled from the shards.
std::vector<float> run_deterministic(const job_spec& job, std::shared_ptr<const dataset> train,
                                     bool shuffle, bool prefetch) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  std::vector<shard_actor> shards;
  for (auto& sc : make_shard_configs(job)) shards.push_back(ds.sys->spawn(shard, std::move(sc)));
  auto fronts = make_fronts(*ds.sys, job, shards);
  auto ranges = job_ranges(job);
  std::vector<worker_actor> workers;
  for (int w = 0; w < job.workers; ++w) {
    auto wc = make_worker_config(job, train, w);
    wc.shuffle = shuffle;
    wc.prefetch = prefetch;
    workers.push_back(ds.sys->spawn(worker, wc));
  }
  ds.run();
  for (int w = 0; w < job.workers; ++w) {
    worker_assignment a;
    a.worker = w;
    a.shards = fronts;
    a.ranges = ranges;
    auto r = shard_range(train->rows, job.workers, w);
    a.rows = {shard_range_t{r.first, r.second}};
    a.epochs = job.epochs;
    a.reports_to = caf::actor_cast<caf::actor>(self);
    self->send(workers[static_cast<std::size_t>(w)], assign_atom::value, a);
  }
  ds.run();
  std::vector<float> params(static_cast<std::size_t>(ranges.back().end));
  for (std::size_t s = 0; s < shards.size(); ++s) {
    self->send(shards[s], pull_atom::value, pull_request{-1, -1});
    ds.run();
    self->receive(
        [&](weights& w) {
          std::copy(w.values.data(), w.values.data() + w.values.size(),
                    params.begin() + ranges[s].begin);
        },
        [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  }
  for (auto& w : workers) self->send_exit(w, caf::exit_reason::user_shutdown);
  for (auto& f : fronts) self->send_exit(f, caf::exit_reason::user_shutdown);
  for (auto& s : shards) self->send_exit(s, caf::exit_reason::user_shutdown);
  ds.run();
  return params;
}

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
  // The order in which the reference walks the rows: its iterator over row indices.
  const auto rows = data->train.rows;
  dataset idx;
  idx.rows = rows;
  idx.features = 1;
  for (std::int64_t i = 0; i < rows; ++i) {
    idx.x.push_back(static_cast<float>(i));
    idx.y.push_back(0.f);
  }
  batch_iterator it(idx, n * batch, job.seed);
  std::vector<float> xb, yb, order;
  while (it.next(xb, yb) > 0) order.insert(order.end(), xb.begin(), xb.end());
  ASSERT_EQ(static_cast<std::int64_t>(order.size()), rows);
  // Lay the rows out so that worker i's step t (rows walked in order) is the i-th slice of the
  // reference's batch t.
  auto laid = std::make_shared<dataset>();
  laid->rows = rows;
  laid->features = data->train.features;
  laid->num_classes = data->train.num_classes;
  auto f = static_cast<std::size_t>(laid->features);
  laid->x.resize(static_cast<std::size_t>(rows) * f);
  laid->y.resize(static_cast<std::size_t>(rows));
  for (int w = 0; w < n; ++w)
    for (int t = 0; t < steps; ++t)
      for (int j = 0; j < batch; ++j) {
        auto dst = static_cast<std::size_t>(w * steps * batch + t * batch + j);
        auto src = static_cast<std::size_t>(
            order[static_cast<std::size_t>(t * n * batch + w * batch + j)]);
        std::copy(data->train.x.begin() + static_cast<std::ptrdiff_t>(src * f),
                  data->train.x.begin() + static_cast<std::ptrdiff_t>((src + 1) * f),
                  laid->x.begin() + static_cast<std::ptrdiff_t>(dst * f));
        laid->y[dst] = data->train.y[src];
      }
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
  job_spec job;
  job.model.kind = "linear";
  job.data.kind = "synthetic_linear";
  job.data.rows = 4000;
  job.data.test_rows = 200;
  job.data.features = 10;
  job.workers = 4;
  job.shards = 2;
  job.batch = 16;
  job.epochs = 2;
  job.eval_every = 100;
  job.mode = "ssp";
  job.ssp_bound = 2;
  job.stragglers = {3};
  job.straggler_delay_s = 0.002;
  job.optim.kind = "sgd";
  job.optim.lr = 0.02f;
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
  cc.fronts = make_fronts(*sys, job, cc.shards, log);
  auto train = std::shared_ptr<const dataset>(data, &data->train);
  for (int w = 0; w < job.workers; ++w)
    cc.workers.push_back(sys->spawn<caf::detached>(worker, make_worker_config(job, train, w)));
  cc.result = std::make_shared<engine_result>();
  auto result = cc.result;
  auto coord = sys->spawn(coordinator, std::move(cc));
  {
    caf::scoped_actor self{*sys};
    self->request(coord, caf::infinite, run_atom::value)
        .receive([](const std::string&) {},
                 [&](const caf::error& err) { ADD_FAILURE() << describe_error(err); });
    self->wait_for(coord);
  }
  ASSERT_TRUE(result->ok) << result->error;
  EXPECT_EQ(result->samples, 8000);
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
