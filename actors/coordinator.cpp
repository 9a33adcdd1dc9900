#include "actors/coordinator.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace actrain {

using self_ptr = coordinator_self;

namespace {
constexpr auto request_timeout = coordinator_request_timeout;
}  // namespace

void tell_fronts_leave(self_ptr self, std::size_t w, bool lost) {
  for (auto& f : self->state.cfg.fronts)
    if (f) self->send(f, leave_atom::value, static_cast<std::int32_t>(w), lost);
}

namespace {

/// The job's training is over: workers waiting to be revived are told to stop, and its time is
/// taken.
void start_finishing(self_ptr self) {
  auto& st = self->state;
  for (auto w : st.revive) self->send(st.workers[w].handle, stop_atom::value);
  st.revive.clear();
  st.finishing = true;
  st.train_seconds = st.elapsed();
}

/// Every worker was lost. When a ps node goes, the workers' failures (their requests to its
/// shards) can come in before the shard's own down message, and the job would fail for its
/// workers rather than for its shard: the shards are asked first (1 s each, all at once). A shard
/// that is gone names the failure (as its down message does when it comes first); when all
/// answer, the workers' loss does.
void fail_without_workers(self_ptr self) {
  auto& st = self->state;
  st.asking_shards = true;
  // One count per shard, and one for the call after the requests (a job without shards).
  auto left = std::make_shared<std::size_t>(st.cfg.shards.size() + 1);
  auto gone = std::make_shared<std::string>();
  auto answered = [self, left, gone] {
    auto& st = self->state;
    if (--*left > 0 || st.finishing) return;
    if (!gone->empty()) return fail_job(self, *gone);
    start_finishing(self);
    st.result.error = describe_error(
        make_error(errc::no_worker, "every worker was lost; the last: " + st.last_loss_reason));
    finish(self);
  };
  for (std::size_t s = 0; s < st.cfg.shards.size(); ++s)
    self->request(st.cfg.shards[s], std::chrono::seconds(1), stats_atom::value)
        .then([answered](const shard_stats&) { answered(); },
              [answered, gone, s](caf::error& e) {
                if (gone->empty())
                  *gone = e == caf::sec::request_receiver_down
                              ? "shard " + std::to_string(s) + " went down"
                              : "shard " + std::to_string(s) +
                                    " did not answer once every worker was lost: " +
                                    describe_error(e);
                answered();
              });
  answered();
}

}  // namespace

void maybe_done(self_ptr self) {
  auto& st = self->state;
  if (st.finishing || st.asking_shards) return;
  bool any_alive = false;
  for (auto& w : st.workers) {
    if (!w.alive) continue;
    any_alive = true;
    if (!w.finished) return;
  }
  if (!any_alive) return fail_without_workers(self);
  start_finishing(self);
  st.evaluating = false;  // a periodic evaluation in flight is superseded by the final one
  evaluate_now(self, true);
}

namespace {
void complete_job(self_ptr self);
}  // namespace

/// The job is over: a last checkpoint (when the job takes them), then complete_job.
void finish(self_ptr self) {
  auto& st = self->state;
  if (st.writer && st.cfg.job.checkpoint.at_end && st.result.error.empty()) {
    st.pending.reset();  // the last checkpoint covers it
    take_checkpoint(self, -1, [self] { complete_job(self); });
    return;
  }
  complete_job(self);
}

namespace {

/// Collects shard stats, fills the result, replies to run, and stops every actor of the job.
void complete_job(self_ptr self) {
  auto& st = self->state;
  auto left = std::make_shared<std::size_t>(st.cfg.fronts.size());
  auto complete = [self] {
    auto& st = self->state;
    auto& r = st.result;
    r.ok = r.error.empty();
    r.seconds = st.train_seconds;
    r.samples = st.samples;
    r.samples_per_s = st.train_seconds > 0 ? st.samples / st.train_seconds : 0;
    if (r.ok) {
      for (auto& w : st.workers)
        if (w.alive) self->send(w.handle, stop_atom::value);
      for (auto& f : st.cfg.fronts) self->send_exit(f, caf::exit_reason::user_shutdown);
      for (auto& s : st.cfg.shards) self->send_exit(s, caf::exit_reason::user_shutdown);
      for (auto& s : st.cfg.replicas) self->send_exit(s, caf::exit_reason::user_shutdown);
    } else {
      // Every worker was lost: the nodes left learn why the job failed.
      auto reason = make_error(errc::job_failed, r.error);
      for (auto& f : st.cfg.fronts) self->send_exit(f, reason);
      for (auto& s : st.cfg.shards) self->send_exit(s, reason);
      for (auto& s : st.cfg.replicas) self->send_exit(s, reason);
    }
    if (!st.cfg.replicas.empty() && r.ok) {
      // What a failover must not change: every step a worker pushed went to every shard once.
      std::string versions;
      for (auto& ss : r.shards)
        versions += (versions.empty() ? "" : ", ") + std::to_string(ss.version);
      st.event("replicated shards end at versions [" + versions + "] for " +
               std::to_string(st.updates) + " steps pushed (" +
               std::to_string(st.failovers) + " failover" + (st.failovers == 1 ? "" : "s") + ")");
    }
    if (auto* hub = st.cfg.hooks.hub) {
      st.front_stats = r.shards;
      publish_snapshot(st, *hub, true);
    }
    if (st.done.pending()) st.done.deliver(r);
    self->quit();
  };
  // The fronts answer for their shards: a barrier adds what only it counts (late slices).
  for (std::size_t s = 0; s < st.cfg.fronts.size(); ++s) {
    self->request(st.cfg.fronts[s], request_timeout, stats_atom::value)
        .then(
            [self, left, complete](shard_stats& ss) {
              auto& r = self->state.result;
              if (r.staleness_histogram.size() < ss.staleness_histogram.size())
                r.staleness_histogram.resize(ss.staleness_histogram.size(), 0);
              for (std::size_t i = 0; i < ss.staleness_histogram.size(); ++i)
                r.staleness_histogram[i] += ss.staleness_histogram[i];
              r.shards.push_back(std::move(ss));
              if (--*left == 0) complete();
            },
            [left, complete](caf::error&) {
              if (--*left == 0) complete();
            });
  }
}

}  // namespace

void fail_job(self_ptr self, std::string why, errc code) {
  auto& st = self->state;
  st.result.error = std::move(why);
  st.finishing = true;
  st.train_seconds = st.elapsed();
  if (st.done.pending()) st.done.deliver(st.result);
  // Every actor of the job learns why it ends: the nodes of a cluster say so and exit non-zero.
  auto reason = make_error(code, st.result.error);
  for (auto& w : st.workers)
    if (w.alive) self->send_exit(w.handle, reason);
  for (auto w : st.revive) self->send_exit(st.workers[w].handle, reason);
  st.revive.clear();
  for (auto& f : st.cfg.fronts) self->send_exit(f, reason);
  for (auto& s : st.cfg.shards) self->send_exit(s, reason);
  for (auto& s : st.cfg.replicas) self->send_exit(s, reason);
  self->quit();
}

namespace {

std::string short_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

/// A worker that failed on its own computation would fail the same way with its rows anywhere
/// else: a non-finite gradient (the model diverged) or an exception of its model or device.
/// Returns the job's failure for such a reason, or "" for a loss the job survives (a killed
/// worker, a lost node or connection, a watchdog timeout).
std::string fatal_worker_failure(std::size_t i, const caf::error& reason, float lr) {
  if (!reason || reason.category() != errc_category()) return {};
  auto who = "worker " + std::to_string(i) + ": " + describe_error(reason);
  switch (static_cast<errc>(reason.code())) {
    case errc::non_finite:
      return "training diverged: " + who + " (lr " + short_number(lr) +
             ": lower [optim] lr, clip gradients with [job] clip-norm, or scale the data)";
    case errc::compute_failed:
      return "a worker's computation failed: " + who;
    default:
      return {};
  }
}

/// Shard s's primary went down and its replica lives: the replica is the shard from now on. Every
/// worker learns its handle and resends what the primary did not acknowledge (the replica
/// answers a push it has without applying it twice); the job goes on without a replica for s.
void promote_replica(self_ptr self, std::size_t s, const caf::error& reason) {
  auto& st = self->state;
  shard_actor now = st.cfg.replicas[s];
  st.cfg.replicas[s] = nullptr;
  auto lost_node = s < st.cfg.shard_nodes.size() ? st.cfg.shard_nodes[s] : "local";
  auto new_node = s < st.cfg.replica_nodes.size() ? st.cfg.replica_nodes[s] : "local";
  st.cfg.shards[s] = now;
  st.cfg.fronts[s] = now;
  if (s < st.cfg.shard_nodes.size()) st.cfg.shard_nodes[s] = new_node;
  st.failovers += 1;
  auto index = static_cast<std::int32_t>(s);
  for (auto& w : st.workers)
    if (w.alive) self->send(w.handle, moved_atom::value, index, now);
  auto since = st.now();
  auto what = "shard " + std::to_string(s) + " lost on node '" + lost_node + "' (" +
              describe_error(reason) + "): its replica on '" + new_node + "'";
  // Recovery time: from the loss seen here to the replica answering as the shard.
  self->request(now, request_timeout, stats_atom::value)
      .then(
          [self, what, since](shard_stats& ss) {
            auto ms = std::chrono::duration<double, std::milli>(self->state.now() - since).count();
            std::ostringstream line;
            line.precision(3);
            line << what << " took over at version " << ss.version << " in " << ms
                 << " ms; the job goes on";
            self->state.event(line.str());
          },
          [self, what](caf::error& err) {
            if (!self->state.finishing)
              fail_job(self, what + " did not answer: " + describe_error(err));
          });
}

}  // namespace

void member_down(self_ptr self, const caf::actor_addr& source, const caf::error& reason) {
  auto& st = self->state;
  for (auto it = st.revive.begin(); it != st.revive.end(); ++it)
    if (st.workers[*it].handle.address() == source) {
      st.revive.erase(it);  // lost again before it took its share: nothing of the job is its
      return;
    }
  for (std::size_t i = 0; i < st.workers.size(); ++i) {
    if (st.workers[i].alive && st.workers[i].handle.address() == source) {
      if (st.finishing) {
        st.workers[i].alive = false;
        return;
      }
      if (auto why = fatal_worker_failure(i, reason, st.cfg.job.optim.lr); !why.empty()) {
        st.workers[i].alive = false;
        st.result.workers_lost += 1;
        self->state.event("worker " + std::to_string(i) + " failed (" + describe_error(reason) +
                          "); the job fails: its rows would fail the same way on any worker");
        fail_job(self, std::move(why));
        return;
      }
      reassign(self, i, reason);
      return;
    }
  }
  for (std::size_t s = 0; s < st.cfg.replicas.size(); ++s) {
    if (!st.cfg.replicas[s] || st.cfg.replicas[s].address() != source) continue;
    st.cfg.replicas[s] = nullptr;
    // Its primary may not see it go (a route through this node): it stops waiting for it now.
    self->send(caf::actor_cast<replicated_shard_actor>(st.cfg.shards[s]), replica_atom::value,
               replica_sink_actor{});
    if (!st.finishing)
      st.event("the replica of shard " + std::to_string(s) + " went down (" +
               describe_error(reason) + "): shard " + std::to_string(s) + " goes on without one");
    return;
  }
  for (std::size_t s = 0; s < st.cfg.shards.size(); ++s) {
    if (st.cfg.shards[s].address() != source || st.finishing) continue;
    if (s < st.cfg.replicas.size() && st.cfg.replicas[s]) return promote_replica(self, s, reason);
    auto why = "shard " + std::to_string(s) + " went down";
    // Taken as lost for its node's silence: say so (a dropped connection says nothing new).
    if (reason.category() == errc_category() && static_cast<errc>(reason.code()) == errc::node_down)
      why += " (" + describe_error(reason) + ")";
    if (!st.cfg.shard_loss_recoverable) return fail_job(self, why);
    // The caller restarts the job from its last checkpoint: nothing is told to stop.
    st.result.error = why;
    st.result.shard_lost = static_cast<std::int32_t>(s);
    st.finishing = true;
    st.train_seconds = st.elapsed();
    if (st.done.pending()) st.done.deliver(st.result);
    self->quit();
    return;
  }
}

namespace {

/// Starts training: plans sync evaluations and hands out the rows, from the beginning or, when
/// resuming, from the checkpoint's cut (each worker replays its readers past what it trained).
void begin_training(self_ptr self) {
  auto& st = self->state;
  auto rows = train_rows(*st.cfg.data);
  auto n = static_cast<int>(st.workers.size());
  auto* from = st.cfg.resume.get();
  st.start = st.now();
  if (from) {
    st.start -= std::chrono::duration_cast<caf::actor_clock::time_point::duration>(
        std::chrono::duration<double>(from->seconds));
    st.result.history = from->history;
    st.next_eval_samples = from->next_eval_samples;
    st.last_eval_step = from->last_eval_step;
    st.seconds_at_checkpoint = from->seconds;
  }
  for (auto& t : st.workers) {
    t.last_report = st.now();
    t.rate_since = t.last_report;
  }
  plan_sync_evaluations(self, rows, n);
  for (int i = 0; i < n; ++i) {
    auto w = static_cast<std::size_t>(i);
    if (!from) {
      auto r = shard_range(rows, n, i);
      assign(self, w, {shard_range_t{r.first, r.second}}, st.cfg.job.epochs);
      continue;
    }
    auto& saved = from->workers[w];
    auto& t = st.workers[w];
    if (!saved.alive || saved.work.empty()) {
      // Lost before the cut: its rows were handed to others, who replay them. The worker now in
      // its slot takes a share of what is left once they did (maybe_revive).
      t.alive = false;
      tell_fronts_leave(self, w, false);  // not for good: the slot's new worker comes back
      st.revive.push_back(w);
      continue;
    }
    t.step = saved.step;
    // Its list, in as few assignments as it takes: consecutive entries of as many epochs go
    // together (a list walked epoch by epoch is mostly one-epoch entries).
    for (std::size_t k = 0; k < saved.work.size();) {
      std::vector<shard_range_t> rows;
      auto epochs = saved.work[k].epochs;
      auto skip = k == 0 ? saved.step - saved.start_step : 0;
      for (; k < saved.work.size() && saved.work[k].epochs == epochs; ++k)
        rows.push_back({saved.work[k].begin, saved.work[k].end});
      assign(self, w, std::move(rows), epochs, skip);
    }
    t.first_step = saved.start_step;  // assign() took the cut's step for it
    t.replaying = saved.step > saved.start_step;
  }
  if (from) spread_joined_slots(self, *from);
  if (st.writer && st.cfg.job.mode == "sync" && st.cfg.job.checkpoint.every_steps > 0)
    take_checkpoint(self, (from ? std::max<std::int64_t>(0, from->step) : 0) +
                              st.cfg.job.checkpoint.every_steps);
  st.front_stats.assign(st.cfg.fronts.size(), shard_stats{});
  st.training = true;
  auto early = std::move(st.early_joins);
  for (auto& [index, h, node] : early) join_worker(self, index, std::move(h), node);
  if (st.cfg.hooks.hub && st.cfg.hooks.tick > std::chrono::milliseconds(250))
    st.cfg.hooks.tick = std::chrono::milliseconds(250);
  self->delayed_send(self, st.cfg.hooks.tick, tick_atom::value);
}

/// Starts the job: monitors every actor, restores the shards when resuming, then trains.
caf::result<engine_result> on_run(self_ptr self) {
  auto& st = self->state;
  st.done = self->make_response_promise<engine_result>();
  st.start = st.now();
  auto rows = train_rows(*st.cfg.data);
  st.target_samples = rows * st.cfg.job.epochs;
  st.next_eval_samples = static_cast<std::int64_t>(std::llround(st.cfg.job.eval_every * rows));
  st.fingerprint = job_fingerprint(st.cfg.job);
  st.workers.clear();
  for (auto& s : st.cfg.shards) self->monitor(s);
  // Each primary streams its updates to its replica from here on, starting from its state now
  // (or, when resuming, the restore below, which it passes on).
  for (std::size_t s = 0; s < st.cfg.replicas.size() && s < st.cfg.shards.size(); ++s) {
    if (!st.cfg.replicas[s]) continue;
    self->monitor(st.cfg.replicas[s]);
    self->send(caf::actor_cast<replicated_shard_actor>(st.cfg.shards[s]), replica_atom::value,
               caf::actor_cast<replica_sink_actor>(st.cfg.replicas[s]));
  }
  for (auto& h : st.cfg.workers) {
    worker_track t;
    t.handle = h;
    self->monitor(t.handle);
    st.workers.push_back(std::move(t));
  }
  watch_nodes(self);
  if (auto why = open_checkpoints(self); !why.empty()) {
    fail_job(self, why);
    return st.done;
  }
  auto from = st.cfg.resume;
  if (!from) {
    begin_training(self);
    return st.done;
  }
  if (auto why = resume_mismatch(st, *from); !why.empty()) {
    fail_job(self, "cannot resume: " + why);
    return st.done;
  }
  st.next_sequence = std::max(st.next_sequence, from->sequence + 1);
  // Every front restores its shard (a sync barrier also takes the cut's step), then training
  // goes on from the cut.
  auto left = std::make_shared<std::size_t>(st.cfg.fronts.size());
  for (std::size_t s = 0; s < st.cfg.fronts.size(); ++s) {
    self->request(st.cfg.fronts[s], request_timeout, restore_atom::value, from->shards[s])
        .then(
            [self, left](std::int64_t) {
              if (--*left == 0 && !self->state.finishing) begin_training(self);
            },
            [self, s](caf::error& err) {
              if (!self->state.finishing)
                fail_job(self,
                         "cannot resume: shard " + std::to_string(s) + ": " + describe_error(err));
            });
  }
  return st.done;
}

/// A worker's progress: counts, rates, evaluation by samples, the end of the job.
void on_progress(self_ptr self, const progress_report& r) {
  auto& st = self->state;
  // A report may come from another node: ignore what cannot be true rather than let it
  // corrupt the counts.
  if (r.worker < 0 || static_cast<std::size_t>(r.worker) >= st.workers.size() || r.samples < 0 ||
      !std::isfinite(r.loss_sum) || r.max_staleness < 0 || r.replayed < 0 ||
      !(r.busy_seconds >= 0) || !std::isfinite(r.busy_seconds) || r.bytes_pushed < 0 ||
      r.bytes_received < 0) {
    self->state.event("ignored an invalid progress report (worker " + std::to_string(r.worker) +
                      ", samples " + std::to_string(r.samples) + ")");
    return;
  }
  auto& w = st.workers[static_cast<std::size_t>(r.worker)];
  if (!w.alive) return;
  st.updates += std::max<std::int64_t>(0, r.step - w.step);
  st.result.bytes_pushed += r.bytes_pushed;
  st.result.bytes_received += r.bytes_received;
  w.step = std::max(w.step, r.step);
  // Replayed rows were trained before a resumed checkpoint's cut: counted, not timed.
  w.done_samples += r.samples + r.replayed;
  st.samples += r.replayed;
  auto now = st.now();
  // Rates over windows of at least 0.5 s: reports queued behind an evaluation arrive
  // together, and a rate over their near-zero spacing would be meaningless. A worker's
  // last report closes its window whatever its length (a job shorter than 0.5 s still
  // shows each worker's rate and busy fraction).
  w.rate_samples += r.samples;
  w.rate_busy_s += r.busy_seconds;
  auto dt = std::chrono::duration<double>(now - w.rate_since).count();
  if (dt >= 0.5 || (r.finished && dt > 0.01)) {
    w.rate = w.rate_samples / dt;
    // Busy: the worker's own clock over the coordinator's window; the two clocks tick
    // apart by a report's travel time at most, so clamp.
    w.busy = std::min(1.0, w.rate_busy_s / dt);
    w.rate_samples = 0;
    w.rate_busy_s = 0;
    w.rate_since = now;
  }
  if (r.samples > 0) w.last_loss = r.loss_sum / r.samples;
  w.last_staleness = r.max_staleness;
  w.last_report = now;
  if (w.replaying) {  // its first report since the resume: past its replay
    w.replaying = false;
    if (w.interleave_wanted) {
      w.interleave_wanted = false;
      interleave(self, static_cast<std::size_t>(r.worker));
    }
  }
  st.samples += r.samples;
  st.loss_sum += r.loss_sum;
  st.loss_rows += r.samples;
  auto rows = train_rows(*st.cfg.data);
  st.epoch = static_cast<int>(st.samples / std::max<std::int64_t>(rows, 1));
  if (r.finished && !w.finished) tell_fronts_leave(self, static_cast<std::size_t>(r.worker), false);
  if (r.finished) w.finished = true;
  if (r.finished) take_share_when_done(self, static_cast<std::size_t>(r.worker));
  if (!st.finishing && st.eval_steps == 0 && st.samples >= st.next_eval_samples &&
      st.samples < st.target_samples) {
    st.next_eval_samples += static_cast<std::int64_t>(std::llround(st.cfg.job.eval_every * rows));
    evaluate_now(self, false);
  }
  auto every = st.cfg.job.checkpoint.every_steps;
  if (st.writer && st.cfg.job.mode != "sync" && every > 0 && !st.finishing && !st.gathering &&
      st.updates - st.updates_at_checkpoint >= every) {
    st.updates_at_checkpoint = st.updates;
    take_checkpoint(self, -1);
  }
  maybe_revive(self);
  maybe_done(self);
}

/// Ends the job as stopped (a signal): with checkpoints on, one more first so that it can
/// resume. In sync mode the cut is asked for a little ahead of the furthest worker (every shard
/// at one step); the evaluations between the last one and the cut are not in its history.
void on_stop(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (st.finishing || st.stopping) return;
  st.stopping = true;
  self->state.event("stopping: " + why);
  auto stop = [self, why] {
    auto& st = self->state;
    auto line = "stopped: " + why;
    if (!st.result.last_checkpoint.empty())
      line += " (resume from checkpoint " + st.result.last_checkpoint + ")";
    st.result.stopped = true;
    fail_job(self, line, errc::job_stopped);
  };
  if (!st.writer) {
    stop();
    return;
  }
  take_checkpoint(self, st.cfg.job.mode == "sync" ? sync_cut_ahead(st) : -1, stop);
}

/// The periodic tick: front stats, the curve, the published snapshot, the console.
void on_tick(self_ptr self) {
  auto& st = self->state;
  if (st.finishing) return;
  maybe_checkpoint_by_time(self);
  if (auto* hub = st.cfg.hooks.hub) {
    // Refresh the fronts' counters (a barrier says what it waits for), then publish.
    for (std::size_t f = 0; f < st.cfg.fronts.size(); ++f)
      self->request(st.cfg.fronts[f], st.cfg.hooks.tick, stats_atom::value)
          .then(
              [self, f](shard_stats& ss) {
                self->state.front_stats[f] = std::move(ss);
                note_blocked_workers(self->state);
              },
              [](caf::error&) {});
    auto p = current_point(st);
    double dt = p.seconds - st.curve_seconds;
    hub->add_curve_point({p.seconds, p.samples, st.loss_rows > 0 ? p.train_loss : std::nan(""),
                          std::nan(""), std::nan(""),
                          dt > 0 ? (p.samples - st.curve_samples) / dt : 0});
    st.curve_seconds = p.seconds;
    st.curve_samples = p.samples;
    publish_snapshot(st, *hub, false);
  }
  if (st.cfg.hooks.on_tick) {
    auto p = current_point(st);
    double rate = p.seconds > 0 ? p.samples / p.seconds : 0;
    double eta = rate > 0 ? (st.target_samples - st.samples) / rate : 0;
    st.cfg.hooks.on_tick(p, eta);
  }
  self->delayed_send(self, st.cfg.hooks.tick, tick_atom::value);
}

}  // namespace

coordinator_state::~coordinator_state() {
  if (!done.pending()) return;
  if (ended_by && ended_by.category() == errc_category()) {
    done.deliver(ended_by);
    return;
  }
  done.deliver(
      make_error(errc::stopped, "the coordinator ended before the job did" +
                                    (ended_by ? ": " + describe_error(ended_by) : std::string())));
}

coordinator_impl::behavior_type coordinator(
    coordinator_impl::stateful_pointer<coordinator_state> self, coordinator_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.sys_clock = &self->clock();
  st.eval_backend = make_cpu_backend();
  st.diverged_above = diverged_loss_bound(st.cfg.job.model, st.cfg.data->test);
  self->set_down_handler([self](caf::down_msg& dm) { member_down(self, dm.source, dm.reason); });
  self->set_exit_handler([self](caf::exit_msg& em) {
    if (!em.reason) return;
    self->state.ended_by = em.reason;
    self->quit(std::move(em.reason));
  });
  return {
      [self](run_atom) { return on_run(self); },
      [self](progress_atom, const progress_report& r) { on_progress(self, r); },
      [self](tick_atom) { on_tick(self); },
      [self](stop_atom, const std::string& why) { on_stop(self, why); },
      [self](join_worker_atom, std::int32_t index, worker_actor h, const std::string& node) {
        join_worker(self, index, std::move(h), node);
      },
      [self](heartbeat_atom, const std::string& node) { heard_from(self, node); },
      [self](heartbeat_atom) { check_nodes(self); },
  };
}

}  // namespace actrain
