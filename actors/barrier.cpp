#include "actors/barrier.hpp"

#include <algorithm>

#include <actrain/engine.hpp>
#include <actrain/job.hpp>
#include "actors/compression.hpp"
#include "actors/held_pulls.hpp"

namespace actrain {

namespace {

using self_ptr = shard_actor::stateful_pointer<barrier_state>;

bool tracked(const barrier_state& st, std::int32_t w) {
  return w >= 0 && static_cast<std::size_t>(w) < st.active.size();
}

/// Opens slots up to worker w's on its first message, when w is below max(N, capacity): until
/// then it was absent, as an inactive worker is (its pulls are answered, it closes no step).
void open_slot(barrier_state& st, std::int32_t w) {
  auto limit = std::max(st.cfg.workers, st.cfg.capacity);
  if (w < 0 || w >= limit || tracked(st, w)) return;
  auto n = static_cast<std::size_t>(w) + 1;
  st.clock.resize(n, st.clock_floor);
  st.active.resize(n, false);
  st.lost.resize(n, false);
  st.arrived.resize(n, false);
}

void log(barrier_state& st, barrier_event::kind_t k, std::int32_t w, std::int64_t step) {
  if (st.cfg.log) st.cfg.log->add({k, w, step});
}

/// K: how many slices close a sync step. Backup workers stay backups while workers leave, but
/// one live worker always suffices.
std::int32_t expected(const barrier_state& st) {
  auto live = static_cast<std::int32_t>(std::count(st.active.begin(), st.active.end(), true));
  return std::max(1, live - st.cfg.backup);
}

/// The slowest live worker's clock (ssp); no live worker: nothing to wait for.
std::int64_t slowest(const barrier_state& st) {
  std::int64_t m = INT64_MAX;
  for (std::size_t w = 0; w < st.active.size(); ++w)
    if (st.active[w]) m = std::min(m, st.clock[w]);
  return m;
}

bool answerable(const barrier_state& st, const pull_request& r) {
  // sync: an observer (the coordinator, worker -1) asking for step t gets the weights after
  // exactly t global steps: held until then, and the step's mean reaches the shard first.
  if (r.worker < 0 && r.step >= 0 && st.cfg.mode == "sync") return r.step <= st.done;
  if (!tracked(st, r.worker) || !st.active[static_cast<std::size_t>(r.worker)]) return true;
  if (st.cfg.mode == "ssp") {
    auto m = slowest(st);
    return m == INT64_MAX || r.step <= m + st.cfg.ssp_bound;
  }
  // sync: step t needs steps 0..t-1 applied, and a worker adds at most one slice per step.
  return r.step <= st.done && !st.arrived[static_cast<std::size_t>(r.worker)];
}

/// Forwards the pull to the shard now; the shard answers the promise. Anything this
/// barrier sent the shard before (the step's mean) is applied first: one sender's messages
/// arrive in order.
void answer(self_ptr self, const pull_request& r, caf::typed_response_promise<weights> p) {
  auto& st = self->state;
  st.pulls += 1;
  log(st, barrier_event::answer, r.worker, r.step);
  // The shard replies straight to the puller: one hop less than relaying through here.
  p.delegate(st.cfg.shard, pull_atom::value, r);
}

void release(self_ptr self) {
  auto& st = self->state;
  release_held(
      st.held, [&st](const pull_request& r) { return answerable(st, r); },
      [self](auto& h) { answer(self, h.req, h.promise); });
}

/// Answers `r` through `p` now, or holds it until it is answerable.
void pull_into(self_ptr self, const pull_request& r, caf::typed_response_promise<weights> p) {
  if (answerable(self->state, r))
    answer(self, r, p);
  else
    self->state.held.push_back({r, p});
}

caf::result<weights> on_pull(self_ptr self, const pull_request& r) {
  open_slot(self->state, r.worker);
  auto p = self->make_response_promise<weights>();
  pull_into(self, r, p);
  return p;
}

/// Asks the shard for its state and answers `p` with it, stamped with the global step. Sent after
/// every push this barrier made, so the shard saves exactly the steps applied so far.
void save_shard(self_ptr self, caf::typed_response_promise<shard_checkpoint> p) {
  auto& st = self->state;
  auto step = st.cfg.mode == "sync" ? st.done : -1;
  self->request(st.cfg.shard, st.cfg.timeout, checkpoint_atom::value, std::int64_t{-1})
      .then(
          [p, step](shard_checkpoint& c) mutable {
            c.step = step;
            p.deliver(std::move(c));
          },
          [p](caf::error& e) mutable { p.deliver(std::move(e)); });
}

/// sync: pushes the row-weighted mean of the open step to the shard and opens the next step.
void close_step(self_ptr self) {
  auto& st = self->state;
  gradient g;
  g.worker = -1;
  g.step = st.done;
  g.base_version = std::max<std::int64_t>(0, st.open_version);
  g.rows = static_cast<std::int32_t>(std::min<std::int64_t>(st.sum.rows(), INT32_MAX));
  g.values = tensor(st.sum.take());
  // No timeout: the shard is on this node and monitored (its end fails the front), and a timeout
  // would wake CAF's clock thread twice every step (set, then cancelled by the answer).
  self->request(st.cfg.shard, caf::infinite, push_atom::value, std::move(g))
      .then([](push_ack&) {}, [self](caf::error& e) { end_front(self, std::move(e)); });
  log(st, barrier_event::apply, -1, st.done);
  st.done += 1;
  if (st.open_version >= 0) st.open_version += 1;
  std::fill(st.arrived.begin(), st.arrived.end(), false);
  st.arrivals = 0;
  // A checkpoint waiting for this step is one cut: saved before any later step reaches the shard.
  auto& ckpts = st.held_checkpoints;
  for (auto it = ckpts.begin(); it != ckpts.end();) {
    if (it->step == st.done) {
      save_shard(self, it->promise);
      it = ckpts.erase(it);
    } else {
      ++it;
    }
  }
  release(self);
}

/// Closes the open step once K live workers sent their slice. A departed worker's slice is in the
/// sum but does not stand in for a live one's (a worker that finished and left must not close a
/// step another is still computing); with no live worker left, any slice closes it.
void maybe_close(self_ptr self) {
  auto& st = self->state;
  if (st.arrivals == 0) return;
  std::int32_t departed = 0, live = 0;
  for (std::size_t w = 0; w < st.active.size(); ++w) {
    if (st.active[w]) ++live;
    if (st.arrived[w] && !st.active[w]) ++departed;
  }
  if (live == 0 || st.arrivals - departed >= expected(st)) close_step(self);
}

/// A slice's length and values, checked before it touches the sum.
caf::error check(barrier_state& st, gradient& g) {
  // A compressed slice is expanded to the length this barrier was configured with; without one
  // (a barrier spawned without cfg.slice) a compressed push cannot be checked and is refused.
  if (auto err = expand_gradient(g, st.sum.size(), "barrier " + std::to_string(st.cfg.shard.id())))
    return err;
  st.sum.expect_size(g.values.size());
  if (g.values.size() != st.sum.size())
    return make_error(errc::bad_length, "barrier " + std::to_string(st.cfg.shard.id()) +
                                            ": worker " + std::to_string(g.worker) + " pushed " +
                                            std::to_string(g.values.size()) + " values, expected " +
                                            std::to_string(st.sum.size()));
  if (!g.values.all_finite())
    return make_error(errc::non_finite, "barrier: gradient from worker " +
                                            std::to_string(g.worker) + " holds NaN or infinity");
  return {};
}

caf::expected<push_ack> sync_push(self_ptr self, gradient& g) {
  auto& st = self->state;
  if (auto err = check(st, g)) return err;
  open_slot(st, g.worker);
  auto staleness =
      st.open_version >= 0 ? std::max<std::int64_t>(0, st.open_version - g.base_version) : 0;
  bool late = st.open_version >= 0 && g.base_version < st.open_version;
  auto w = tracked(st, g.worker) ? static_cast<std::size_t>(g.worker) : st.arrived.size();
  if (w < st.arrived.size()) {
    if (!st.lost[w]) st.active[w] = true;
    st.clock[w] = std::max(st.clock[w], g.step + 1);
    // A second slice of one worker in one step counts like a late one.
    if (st.arrived[w]) late = true;
  }
  log(st, late ? barrier_event::late : barrier_event::push, g.worker, g.step);
  if (late && st.cfg.late_policy != "fold") {
    st.dropped_late += 1;
    return push_ack{std::max<std::int64_t>(0, st.open_version), staleness, false};
  }
  st.sum.add(g.values.values(), g.rows);
  push_ack ack{std::max<std::int64_t>(0, st.open_version), staleness, true};
  if (late) {
    st.folded += 1;  // folded into the open step without counting as one of its K arrivals
    return ack;
  }
  if (w < st.arrived.size()) st.arrived[w] = true;
  if (st.arrivals == 0) st.open_since = st.sys_clock->now();
  st.arrivals += 1;
  maybe_close(self);
  return ack;
}

/// ssp: the worker's clock moves, the push goes to the shard as it is, and pulls that waited for
/// this worker are released (after the push, so they see it).
void ssp_push(self_ptr self, const gradient& g) {
  auto& st = self->state;
  open_slot(st, g.worker);
  if (tracked(st, g.worker)) {
    auto w = static_cast<std::size_t>(g.worker);
    if (!st.lost[w]) st.active[w] = true;
    st.clock[w] = std::max(st.clock[w], g.step + 1);
  }
  log(st, barrier_event::push, g.worker, g.step);
}

/// sync: what the open step waits for (the coordinator's stall diagnosis): its step, how long
/// since its first slice arrived, and the live workers whose slice has not. Nothing while no
/// slice has arrived (workers are computing) and never in ssp mode.
void fill_waiting(const barrier_state& st, shard_stats& s) {
  s.waiting_step = -1;
  s.waiting_s = 0;
  s.waiting_for.clear();
  if (st.cfg.mode == "ssp" || st.arrivals == 0) return;
  s.waiting_step = st.done;
  s.waiting_s = std::chrono::duration<double>(st.sys_clock->now() - st.open_since).count();
  for (std::size_t w = 0; w < st.active.size(); ++w)
    if (st.active[w] && !st.arrived[w]) s.waiting_for.push_back(static_cast<std::int32_t>(w));
}

}  // namespace

barrier_state::~barrier_state() {
  answer_held_at_end(held, ended_by, "the barrier", [](const held_pull& h) {
    return "while pull of step " + std::to_string(h.req.step) + " by worker " +
           std::to_string(h.req.worker) + " waited";
  });
  answer_held_at_end(held_checkpoints, ended_by, "the barrier", [](const held_checkpoint& c) {
    return "before step " + std::to_string(c.step) + " (checkpoint)";
  });
}

shard_actor::behavior_type barrier(shard_actor::stateful_pointer<barrier_state> self,
                                   barrier_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.sys_clock = &self->clock();
  auto n = static_cast<std::size_t>(std::max(0, st.cfg.workers));
  st.clock.assign(n, 0);
  st.active.assign(n, true);
  st.lost.assign(n, false);
  st.arrived.assign(n, false);
  if (st.cfg.slice > 0) st.sum.expect_size(st.cfg.slice);
  // The shard's version when training starts tells late slices from current ones.
  self->request(st.cfg.shard, st.cfg.timeout, stats_atom::value)
      .then(
          [self](shard_stats& s) {
            auto& st = self->state;
            if (st.open_version < 0) st.open_version = s.version + st.done;
          },
          [self](caf::error& e) { end_front(self, std::move(e)); });
  self->monitor(st.cfg.shard);
  self->set_down_handler([self](caf::down_msg& dm) { end_front(self, std::move(dm.reason)); });
  self->set_exit_handler([self](caf::exit_msg& em) {
    if (em.reason) end_front(self, std::move(em.reason));
  });
  return {
      [self](pull_atom, const pull_request& r) -> caf::result<weights> { return on_pull(self, r); },
      [self](push_atom, gradient& g) -> caf::result<push_ack> {
        auto& st = self->state;
        if (st.cfg.mode == "ssp") {
          // Checked before the worker's clock moves: a refused push is no step.
          if (auto err = check(st, g)) return err;
          ssp_push(self, g);
          auto d = self->delegate(st.cfg.shard, push_atom::value, std::move(g));
          release(self);
          return d;
        }
        auto ack = sync_push(self, g);
        if (!ack) return std::move(ack.error());
        return *ack;
      },
      [self](push_pull_atom, gradient& g) -> caf::result<weights> {
        auto& st = self->state;
        pull_request next{g.worker, g.step + 1};
        if (st.cfg.mode == "ssp") {
          // The clock moves once the shard applied the push; its refusal goes to the worker.
          if (auto err = check(st, g)) return err;
          auto p = self->make_response_promise<weights>();
          auto pushed = g;
          self->request(st.cfg.shard, caf::infinite, push_atom::value, std::move(g))
              .then(
                  [self, p, next, pushed](push_ack&) mutable {
                    ssp_push(self, pushed);
                    release(self);
                    pull_into(self, next, p);
                  },
                  [p](caf::error& e) mutable { p.deliver(std::move(e)); });
          return p;
        } else {
          auto ack = sync_push(self, g);
          if (!ack) return std::move(ack.error());
        }
        return on_pull(self, next);
      },
      [self](stats_atom) -> caf::result<shard_stats> {
        auto& st = self->state;
        auto p = self->make_response_promise<shard_stats>();
        auto mailbox = static_cast<std::int64_t>(self->mailbox().size());
        self->request(st.cfg.shard, st.cfg.timeout, stats_atom::value)
            .then(
                [self, p, mailbox](shard_stats& s) mutable {
                  auto& st = self->state;
                  s.dropped_late += st.dropped_late;
                  s.pulls = st.pulls;
                  s.mailbox += mailbox;
                  fill_waiting(st, s);
                  p.deliver(std::move(s));
                },
                [p](caf::error& e) mutable { p.deliver(std::move(e)); });
        return p;
      },
      [self](checkpoint_atom, std::int64_t step) -> caf::result<shard_checkpoint> {
        auto& st = self->state;
        auto p = self->make_response_promise<shard_checkpoint>();
        if (st.cfg.mode != "sync" || step < 0 || step == st.done) {
          save_shard(self, p);
        } else if (step < st.done) {
          p.deliver(make_error(errc::bad_config,
                               "barrier: a checkpoint at step " + std::to_string(step) +
                                   " was asked for at step " + std::to_string(st.done)));
        } else {
          st.held_checkpoints.push_back({step, p});
        }
        return p;
      },
      [self](restore_atom, shard_checkpoint& c) -> caf::result<std::int64_t> {
        auto p = self->make_response_promise<std::int64_t>();
        auto step = c.step;
        self->request(self->state.cfg.shard, self->state.cfg.timeout, restore_atom::value,
                      std::move(c))
            .then(
                [self, p, step](std::int64_t v) mutable {
                  auto& st = self->state;
                  st.open_version = v;  // the open step now starts from the restored values
                  if (st.cfg.mode == "sync" && step >= 0) {
                    // Training goes on after the checkpoint's step: so do the step numbers.
                    st.done = step;
                    std::fill(st.clock.begin(), st.clock.end(), step);
                    st.clock_floor = step;
                  }
                  p.deliver(v);
                },
                [p](caf::error& e) mutable { p.deliver(std::move(e)); });
        return p;
      },
      [self](leave_atom, std::int32_t w, bool lost) {
        auto& st = self->state;
        if (lost) open_slot(st, w);  // a joiner lost before its first push stays out
        if (!tracked(st, w)) return;
        st.active[static_cast<std::size_t>(w)] = false;
        if (lost) st.lost[static_cast<std::size_t>(w)] = true;
        log(st, barrier_event::leave, w, st.clock[static_cast<std::size_t>(w)]);
        if (st.cfg.mode != "ssp") maybe_close(self);
        release(self);
      },
  };
}

barrier_config front_config(const job_spec& job, const topology& topo, std::size_t s,
                            shard_actor shard, std::int32_t capacity) {
  auto ranges = job_ranges(job);
  barrier_config c;
  c.shard = std::move(shard);
  if (s < ranges.size()) c.slice = static_cast<std::size_t>(ranges[s].end - ranges[s].begin);
  c.mode = job.mode;
  c.workers = topo.barrier_workers;
  c.backup = topo.barrier_backup;
  c.capacity = capacity;
  c.ssp_bound = job.ssp_bound;
  c.late_policy = job.late_policy;
  return c;
}

std::vector<shard_actor> make_fronts(caf::actor_system& sys, const job_spec& job,
                                     const topology& topo, const std::vector<shard_actor>& shards,
                                     std::shared_ptr<barrier_log> log, std::int32_t capacity) {
  if (!topo.barriers) return shards;
  std::vector<shard_actor> out;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    auto c = front_config(job, topo, s, shards[s], capacity);
    if (s == 0) c.log = log;
    out.push_back(sys.spawn(barrier, std::move(c)));
  }
  return out;
}

}  // namespace actrain
