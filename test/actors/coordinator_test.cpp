// The coordinator against a misbehaving peer: progress reports that cannot be true (from a buggy
// or hostile node) are ignored, each named in an event, and the job's counts stay exact.
#include <cmath>
#include <limits>
#include <mutex>

#include <gtest/gtest.h>

#include "actors/barrier.hpp"
#include "actors/coordinator.hpp"
#include "actors/engine.hpp"
#include "actors/system.hpp"

namespace actrain {
namespace {

TEST(coordinator_test, impossible_progress_reports_are_ignored_and_named) {
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  job_spec job;
  job.model.kind = "linear";
  job.data.kind = "synthetic_linear";
  job.data.rows = 4000;
  job.data.test_rows = 200;
  job.data.features = 10;
  job.workers = 2;
  job.shards = 2;
  job.batch = 16;
  job.epochs = 2;
  job.eval_every = 100;
  job.simulated_compute_s = 0.0005;  // ~125 ms: ticks of 5 ms come while workers report
  job.optim.kind = "sgd";
  job.optim.lr = 0.02f;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);

  std::vector<progress_report> bad(6);
  bad[0].samples = -5;
  bad[1].loss_sum = std::numeric_limits<double>::quiet_NaN();
  bad[2].max_staleness = -1;
  bad[3].busy_seconds = std::numeric_limits<double>::quiet_NaN();
  bad[4].busy_seconds = -1;
  bad[5].worker = 7;  // the job has 2 workers
  for (auto& r : bad) r.step = 1;

  coordinator_config cc;
  cc.job = job;
  cc.data = data;
  cc.ranges = job_ranges(job);
  for (auto& sc : make_shard_configs(job)) cc.shards.push_back(sys.spawn(shard, std::move(sc)));
  cc.fronts = make_fronts(sys, job, cc.shards);
  auto train = std::shared_ptr<const dataset>(data, &data->train);
  for (int w = 0; w < job.workers; ++w)
    cc.workers.push_back(sys.spawn<caf::detached>(worker, make_worker_config(job, train, w)));
  std::mutex mtx;
  std::vector<std::string> events;
  auto coord_handle = std::make_shared<coordinator_actor>();
  bool sent = false;  // touched on the coordinator's thread only
  cc.hooks.tick = std::chrono::milliseconds(5);
  cc.hooks.on_event = [&](const std::string& e) {
    std::lock_guard<std::mutex> guard{mtx};
    events.push_back(e);
  };
  cc.hooks.on_tick = [&, coord_handle](const progress_point&, double) {
    if (sent) return;
    sent = true;
    for (auto& r : bad) caf::anon_send(*coord_handle, progress_atom::value, r);
  };
  cc.result = std::make_shared<engine_result>();
  auto result = cc.result;
  *coord_handle = sys.spawn(coordinator, std::move(cc));
  {
    caf::scoped_actor self{sys};
    self->request(*coord_handle, caf::infinite, run_atom::value)
        .receive([](const std::string&) {},
                 [&](const caf::error& err) { ADD_FAILURE() << describe_error(err); });
    self->wait_for(*coord_handle);
  }
  ASSERT_TRUE(result->ok) << result->error;
  EXPECT_TRUE(sent) << "the job ended before the first tick";
  EXPECT_EQ(result->samples, 2 * 4000);  // none of the bad reports' samples counted
  std::lock_guard<std::mutex> guard{mtx};
  int ignored = 0;
  for (auto& e : events)
    if (e.find("ignored an invalid progress report") != std::string::npos) ++ignored;
  EXPECT_EQ(ignored, 6);
  EXPECT_TRUE(std::isfinite(result->history.back().train_loss));
}

}  // namespace
}  // namespace actrain
