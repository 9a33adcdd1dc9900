// Checkpoints of real jobs (real scheduler, detached workers, files on disk): a sync job resumed
// from a mid-run checkpoint ends exactly where the uninterrupted run ends; an async one trains
// every row once more from its cut; the last checkpoint holds the final parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <actrain/checkpoint.hpp>
#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "test/support/jobs.hpp"
#include "test/support/temp_dir.hpp"

namespace actrain {
namespace {

namespace fs = std::filesystem;
using checkpoint_jobs = test::temp_dir_test;

/// One job in an actor system of its own.
engine_result run(const job_spec& job, std::shared_ptr<const job_data> data,
                  std::shared_ptr<const checkpoint> resume = nullptr) {
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  return run_job(sys, job, std::move(data), {}, std::move(resume));
}

std::shared_ptr<job_data> data_for(job_spec& job) {
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  return data;
}

/// The checkpoint in `dir` whose cut is global step `step`.
std::shared_ptr<const checkpoint> at_step(const fs::path& dir, std::int64_t step) {
  checkpoint_store store(dir.string(), 100);
  for (auto& f : store.files()) {
    auto c = load_checkpoint(f);
    if (c.step == step) return std::make_shared<const checkpoint>(std::move(c));
  }
  return nullptr;
}

job_spec sync_momentum_job() {
  auto job = test::small_linear_job(2);
  job.name = "resume-sync";
  job.mode = "sync";
  job.optim.kind = "momentum";
  job.optim.lr = 0.01f;
  job.optim.momentum = 0.9f;
  job.eval_every = 0.5;  // evaluations at fixed global steps, before and after the cut
  job.checkpoint.every_steps = 50;
  job.checkpoint.keep = 100;
  return job;
}

TEST_F(checkpoint_jobs, a_resumed_sync_job_ends_where_the_uninterrupted_run_ends) {
  auto job = sync_momentum_job();
  job.checkpoint.dir = (dir_ / "full").string();
  auto data = data_for(job);
  auto full = run(job, data);
  ASSERT_TRUE(full.ok) << full.error;
  // 2 workers x 2000 rows / 16 = 125 global steps an epoch, 250 in all: cuts at 50..250 and the
  // last one at the end. A cut that comes due while the previous one is still being written is
  // skipped (on a loaded machine fsync can take longer than 50 steps), so the resume starts
  // from the first mid-run cut that was written, preferring the middle of the run.
  EXPECT_GE(full.checkpoints, 2);
  std::shared_ptr<const checkpoint> cut;
  for (std::int64_t step : {100, 150, 50, 200})
    if (!cut) cut = at_step(dir_ / "full", step);
  ASSERT_NE(cut, nullptr) << "no mid-run cut among steps 50..200";
  const auto step = cut->step;
  ASSERT_EQ(cut->shards.size(), 2u);
  EXPECT_EQ(cut->shards[0].step, step);
  EXPECT_EQ(cut->shards[1].step, step);
  EXPECT_EQ(cut->shards[0].opt_steps, step);  // one optimizer step per global step
  for (auto& p : cut->history) EXPECT_LE(p.step, step);

  job.checkpoint.dir = (dir_ / "resumed").string();
  auto resumed = run(job, data, cut);
  ASSERT_TRUE(resumed.ok) << resumed.error;
  ASSERT_EQ(resumed.params.size(), full.params.size());
  double worst = 0;
  for (std::size_t i = 0; i < full.params.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(resumed.params[i] - full.params[i])));
  EXPECT_LE(worst, 1e-5);
  EXPECT_EQ(resumed.samples, full.samples);  // every row once: replayed up to the cut, then trained
  // The same evaluation points, with the same test figures (the weights of exactly that step).
  ASSERT_EQ(resumed.history.size(), full.history.size());
  for (std::size_t i = 0; i < full.history.size(); ++i) {
    EXPECT_EQ(resumed.history[i].step, full.history[i].step) << i;
    EXPECT_NEAR(resumed.history[i].test_loss, full.history[i].test_loss, 1e-9) << i;
  }
  EXPECT_NEAR(resumed.test.loss, full.test.loss, 1e-9);
}

TEST_F(checkpoint_jobs, a_resumed_async_job_trains_every_row_and_converges) {
  auto job = test::small_linear_job(2);
  job.name = "resume-async";
  job.optim.kind = "adam";
  job.optim.lr = 0.01f;
  job.checkpoint.dir = (dir_ / "full").string();
  job.checkpoint.every_steps = 100;  // updates of all workers together: 500 in all
  job.checkpoint.keep = 100;
  auto data = data_for(job);
  auto full = run(job, data);
  ASSERT_TRUE(full.ok) << full.error;
  checkpoint_store store(job.checkpoint.dir, 100);
  auto files = store.files();
  ASSERT_GE(files.size(), 3u);
  // The last checkpoint is the end: its shards hold the final parameters, bit for bit.
  auto last = load_checkpoint(files.front());
  std::vector<float> saved;
  for (auto& s : last.shards) saved.insert(saved.end(), s.values.begin(), s.values.end());
  EXPECT_EQ(saved, full.params);
  EXPECT_EQ(full.last_checkpoint, files.front());

  auto mid = std::make_shared<const checkpoint>(load_checkpoint(files[files.size() / 2]));
  ASSERT_GT(mid->samples, 0);
  ASSERT_LT(mid->samples, full.samples);
  job.checkpoint.dir = (dir_ / "resumed").string();
  auto resumed = run(job, data, mid);
  ASSERT_TRUE(resumed.ok) << resumed.error;
  EXPECT_EQ(resumed.samples, full.samples);
  // Each worker's cut is its last report (every 10 steps): the updates it pushed after that
  // report are in the shards and are trained once more, at most 10 + window (2) per worker.
  ASSERT_EQ(resumed.shards.size(), full.shards.size());
  for (std::size_t s = 0; s < full.shards.size(); ++s) {
    EXPECT_GE(resumed.shards[s].version, full.shards[s].version) << s;
    EXPECT_LE(resumed.shards[s].version, full.shards[s].version + 2 * 12) << s;
  }
  // The same job from a cut: as close to least squares as the uninterrupted run.
  EXPECT_LT(resumed.test.loss, full.test.loss * 1.5 + 1e-4)
      << "full " << full.test.loss << " resumed " << resumed.test.loss;
}

TEST_F(checkpoint_jobs, another_jobs_checkpoint_is_refused) {
  auto job = sync_momentum_job();
  job.checkpoint.dir = (dir_ / "a").string();
  job.epochs = 1;
  auto data = data_for(job);
  auto a = run(job, data);
  ASSERT_TRUE(a.ok) << a.error;
  auto c = std::make_shared<const checkpoint>(load_checkpoint(a.last_checkpoint));
  job.optim.lr = 0.02f;
  auto b = run(job, data, c);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.error.find("cannot resume: the checkpoint belongs to another job"), std::string::npos)
      << b.error;
}

TEST_F(checkpoint_jobs, a_checkpoint_folder_that_cannot_be_made_fails_the_job_naming_it) {
  auto job = sync_momentum_job();
  auto blocker = dir_ / "file";
  std::ofstream(blocker) << "x";
  job.checkpoint.dir = (blocker / "ckpt").string();
  auto data = data_for(job);
  auto res = run(job, data);
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.error.find("file/ckpt: cannot create the checkpoint folder"), std::string::npos)
      << res.error;
}

}  // namespace
}  // namespace actrain
