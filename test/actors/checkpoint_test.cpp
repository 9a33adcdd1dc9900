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
                  std::shared_ptr<const checkpoint> resume = nullptr, engine_hooks hooks = {}) {
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  return run_job(sys, job, std::move(data), std::move(hooks), std::move(resume));
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
  job.staleness.average = 0;  // the job yields its live weights, which checkpoints hold
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
  // report are in the shards and are trained once more, at most 10 + window (2) per worker. At
  // least every batch of the job's rows reaches each shard; not always as many updates as the
  // full run's: a worker that finishes first takes a share of a slower one's rows, which adds a
  // short batch when the rows do not split evenly, in either run (the full one saw 501 in CI).
  ASSERT_EQ(resumed.shards.size(), full.shards.size());
  const auto batches = static_cast<std::int64_t>(full.samples / job.batch);
  for (std::size_t s = 0; s < full.shards.size(); ++s) {
    EXPECT_GE(resumed.shards[s].version, batches) << s;
    EXPECT_LE(resumed.shards[s].version, full.shards[s].version + 2 * 12) << s;
  }
  // The same job from a cut: as close to least squares as the uninterrupted run.
  EXPECT_LT(resumed.test.loss, full.test.loss * 1.5 + 1e-4)
      << "full " << full.test.loss << " resumed " << resumed.test.loss;
}

// A cluster checkpoints after a worker joined (a slot beyond [job] workers), then its
// coordinator is restarted with --resume and the same [job] workers: the joined slot comes back
// empty and what it had left at the cut goes to the others, as a lost worker's rows do. Here the
// slot is the third worker of a 3-worker run, resumed as a 2-worker job (the checkpoint is given
// that job's fingerprint: a slot beyond [job] workers is what a joined worker leaves in it).
TEST_F(checkpoint_jobs, a_checkpoint_with_joined_workers_resumes_with_their_rows_spread) {
  auto job = test::small_linear_job(3);
  job.name = "resume-joined";
  job.checkpoint.dir = (dir_ / "full").string();
  job.checkpoint.every_steps = 100;
  job.checkpoint.keep = 100;
  auto data = data_for(job);
  auto full = run(job, data);
  ASSERT_TRUE(full.ok) << full.error;
  checkpoint_store store(job.checkpoint.dir, 100);
  std::shared_ptr<checkpoint> mid;
  for (auto& f : store.files()) {  // newest first: take the earliest cut where worker 2 trained
    auto c = load_checkpoint(f);
    if (c.samples > 0 && c.samples < full.samples && c.workers.size() == 3 &&
        c.workers[2].alive && c.workers[2].step > c.workers[2].start_step)
      mid = std::make_shared<checkpoint>(std::move(c));
  }
  ASSERT_NE(mid, nullptr) << "no mid-run cut where worker 2 had trained";
  auto two = job;
  two.workers = 2;
  two.checkpoint.dir = (dir_ / "resumed").string();
  mid->job = job_fingerprint(two);
  std::vector<std::string> events;
  engine_hooks hooks;
  hooks.on_event = [&events](const std::string& e) { events.push_back(e); };
  auto resumed = run(two, data, mid, hooks);  // run_job returns after its last event
  ASSERT_TRUE(resumed.ok) << resumed.error;
  std::string spread;
  for (auto& e : events)
    if (e.find("worker 2 lost at step " + std::to_string(mid->workers[2].step) +
               " (actrain.node_down: it joined the job before checkpoint " +
               std::to_string(mid->sequence)) == 0)
      spread = e;
  EXPECT_TRUE(spread.find("go to workers 1, 0") != std::string::npos ||
              spread.find("go to workers 0, 1") != std::string::npos)
      << "no event spreading worker 2's rows over workers 0 and 1: '" << spread << "'";
  // Workers 0 and 1 replay to the cut and train the rest of their rows; worker 2's rows are
  // trained from what it had done at the cut (whole batches), rounded up to whole epochs.
  auto& w2 = mid->workers[2];
  std::int64_t rows2 = 0, assigned2 = 0;
  for (auto& r : w2.work) {
    rows2 += r.end - r.begin;
    assigned2 += (r.end - r.begin) * r.epochs;
  }
  auto done2 = std::min(assigned2, (w2.step - w2.start_step) * std::int64_t{job.batch});
  EXPECT_GE(resumed.samples, full.samples - done2);
  EXPECT_LE(resumed.samples, full.samples - done2 + rows2);
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
