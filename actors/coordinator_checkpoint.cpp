// The coordinator's checkpoints: asking the fronts for one cut, the progress saved with it, the
// writer that puts it on disk off the training path, and the checks a resume makes.
#include "actors/coordinator.hpp"

#include <sstream>

#include "actors/checkpointer.hpp"

namespace actrain {

namespace {

/// sync: how far ahead of the furthest reported worker a cut by time or by a stop is asked for.
/// Reports come every few steps, so a barrier may be a few steps past the furthest report: a
/// cut asked for too late is refused and asked for again this much later.
constexpr std::int64_t cut_margin = 64;

/// The coordinator's progress at a cut: `step` (sync) or now (-1), with the shards' states.
checkpoint progress_at(coordinator_state& st, std::int64_t step,
                       std::vector<shard_checkpoint> shards) {
  checkpoint c;
  c.job = st.fingerprint;
  c.sequence = st.next_sequence++;
  c.step = step;
  c.samples = st.samples;
  c.seconds = st.elapsed();
  c.next_eval_samples = st.next_eval_samples;
  if (step >= 0 && st.eval_steps > 0) c.last_eval_step = step / st.eval_steps * st.eval_steps;
  for (auto& p : st.result.history)
    if (step < 0 || p.step <= step) c.history.push_back(p);
  c.shards = std::move(shards);
  for (std::size_t i = 0; i < st.workers.size(); ++i) {
    auto& w = st.workers[i];
    saved_worker sw;
    sw.worker = static_cast<std::int32_t>(i);
    sw.start_step = w.first_step;
    // sync: every live worker has pushed exactly `step` slices at the cut (one that ran out of
    // rows earlier stops at its end when replaying); async: its last reported step.
    sw.step = step >= 0 ? step : w.step;
    sw.alive = w.alive;
    sw.work = w.work;
    c.workers.push_back(std::move(sw));
  }
  return c;
}

/// Hands `c` to the writer, unless it is still busy with the previous one (then this one is
/// skipped and counted: training never queues behind the disk). `then` runs once the file is
/// written or has failed (always for a final checkpoint, which is never skipped).
void write_checkpoint(coordinator_self self, checkpoint c, std::function<void()> then) {
  auto& st = self->state;
  if (st.writing && !then) {
    st.result.checkpoints_skipped += 1;
    return;
  }
  st.writing = true;
  st.seconds_at_checkpoint = c.seconds;
  auto seq = c.sequence;
  self->request(st.writer, caf::infinite, std::move(c))
      .then(
          [self, then](std::string& path, std::int64_t bytes, double seconds) {
            auto& st = self->state;
            st.writing = false;
            st.result.checkpoints += 1;
            st.result.last_checkpoint = path;
            st.result.checkpoint_bytes = bytes;
            st.result.checkpoint_write_s += seconds;
            std::ostringstream line;
            line.precision(3);
            line << "checkpoint written: " << path << " (" << bytes << " bytes, " << seconds
                 << " s)";
            self->state.event(line.str());
            if (then) then();
          },
          [self, then, seq](caf::error& err) {
            self->state.writing = false;
            self->state.event("checkpoint " + std::to_string(seq) +
                              " failed: " + describe_error(err));
            if (then) then();
          });
}

}  // namespace

std::int64_t sync_cut_ahead(const coordinator_state& st) {
  std::int64_t furthest = 0;
  for (auto& w : st.workers) furthest = std::max(furthest, w.step);
  return furthest + cut_margin;
}

/// sync: a gathered cut is written once every evaluation point up to its step is in the history
/// (a resumed run then continues with exactly the points after it).
void write_pending(coordinator_self self) {
  auto& st = self->state;
  if (!st.pending || st.finishing) return;
  auto step = st.pending->step;
  if (st.eval_steps > 0) {
    std::int64_t have = 0;
    for (auto& p : st.result.history)
      if (p.step <= step) have += 1;
    if (have < step / st.eval_steps) return;
    st.pending->history.clear();
    for (auto& p : st.result.history)
      if (p.step <= step) st.pending->history.push_back(p);
  }
  auto c = std::move(*st.pending);
  st.pending.reset();
  write_checkpoint(self, std::move(c), nullptr);
}

/// Asks every front for its shard's state: at global step `step` (sync: a barrier answers when it
/// gets there, so every shard is cut at the same step) or as it stands (-1). `then`, for the
/// final checkpoint, runs once it is written or has failed.
void take_checkpoint(coordinator_self self, std::int64_t step, std::function<void()> then) {
  auto& st = self->state;
  auto n = st.cfg.fronts.size();
  auto shards = std::make_shared<std::vector<shard_checkpoint>>(n);
  auto left = std::make_shared<std::size_t>(n);
  auto failed = std::make_shared<bool>(false);
  if (step >= 0)
    st.sync_cut = step;
  else
    st.gathering = true;
  // A cut ahead is held until the training gets there: no deadline but the job's end.
  auto timeout = step >= 0 ? caf::infinite : caf::duration{coordinator_request_timeout};
  for (std::size_t s = 0; s < n; ++s) {
    self->request(st.cfg.fronts[s], timeout, checkpoint_atom::value, step)
        .then(
            [self, s, step, shards, left, failed, then](shard_checkpoint& c) {
              (*shards)[s] = std::move(c);
              if (--*left > 0 || *failed) return;
              auto& st = self->state;
              if (step < 0) st.gathering = false;
              if (then) {
                write_checkpoint(self, progress_at(st, step, std::move(*shards)), then);
                return;
              }
              if (st.finishing) return;
              if (step < 0) {
                write_checkpoint(self, progress_at(st, step, std::move(*shards)), nullptr);
                return;
              }
              st.pending = progress_at(st, step, std::move(*shards));
              write_pending(self);
              if (st.cfg.job.checkpoint.every_steps > 0)
                take_checkpoint(self, step + st.cfg.job.checkpoint.every_steps);
              else
                st.sync_cut = -1;
            },
            [self, step, failed, then](caf::error& err) {
              if (*failed) return;
              *failed = true;
              auto& st = self->state;
              if (step < 0) st.gathering = false;
              if (then) {
                self->state.event("the last checkpoint failed: " + describe_error(err));
                then();
                return;
              }
              if (st.finishing) return;  // a cut the job never reached
              self->state.event("checkpoint failed: " + describe_error(err));
              // sync: the step went by before the barrier heard of it: ask for a later one.
              if (step >= 0) {
                auto every = st.cfg.job.checkpoint.every_steps;
                take_checkpoint(self, step + (every > 0 ? every : cut_margin));
              }
            });
  }
}

/// A checkpoint by time ([checkpoint] every-seconds of training since the last one). sync: a cut
/// a little ahead of the furthest worker, when no cut by steps is planned.
void maybe_checkpoint_by_time(coordinator_self self) {
  auto& st = self->state;
  auto every = st.cfg.job.checkpoint.every_seconds;
  if (!st.writer || every <= 0 || st.gathering || st.elapsed() - st.seconds_at_checkpoint < every)
    return;
  if (st.cfg.job.mode != "sync") {
    st.seconds_at_checkpoint = st.elapsed();
    take_checkpoint(self, -1);
    return;
  }
  if (st.sync_cut >= 0 || st.pending) return;
  st.seconds_at_checkpoint = st.elapsed();
  take_checkpoint(self, sync_cut_ahead(st));
}

/// Why `c` cannot continue this job ("" when it can).
std::string resume_mismatch(const coordinator_state& st, const checkpoint& c) {
  if (c.job != st.fingerprint)
    return "the checkpoint belongs to another job (" + c.job + "), not (" + st.fingerprint + ")";
  if (c.shards.size() != st.cfg.fronts.size())
    return "the checkpoint holds " + std::to_string(c.shards.size()) + " shards, the job has " +
           std::to_string(st.cfg.fronts.size());
  // More workers than the job's (some joined the running job): their slots are spread over the
  // others at the resume (spread_joined_slots). Fewer cannot be: the count is in the job.
  if (c.workers.size() < st.workers.size())
    return "the checkpoint holds " + std::to_string(c.workers.size()) + " workers, the job has " +
           std::to_string(st.workers.size());
  return {};
}

std::string open_checkpoints(coordinator_self self) {
  auto& st = self->state;
  auto& spec = st.cfg.job.checkpoint;
  if (spec.dir.empty()) return {};
  try {
    auto store = std::make_shared<checkpoint_store>(spec.dir, spec.keep);
    st.next_sequence = store->next_sequence();
    st.writer = self->home_system().spawn<caf::detached>(checkpoint_writer, std::move(store),
                                                         self->address());
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace actrain
