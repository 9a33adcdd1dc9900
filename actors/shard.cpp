#include "actors/shard.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "actors/compression.hpp"
#include "tensor/vector_clones.hpp"

namespace actrain {

namespace {

void record_staleness(shard_stats& s, std::int64_t staleness) {
  if (s.staleness_histogram.empty()) return;
  auto last = static_cast<std::int64_t>(s.staleness_histogram.size()) - 1;
  s.staleness_histogram[static_cast<std::size_t>(std::min(staleness, last))] += 1;
}

/// avg += take * (w - avg), element-wise: one pass of the weight average.
ACTRAIN_AVX2_CLONES
void blend(float* __restrict avg, const float* __restrict w, std::size_t n, float take) {
  for (std::size_t i = 0; i < n; ++i) avg[i] += take * (w[i] - avg[i]);
}

weights current(shard_state& st) {
  st.rule.handed_out(st.version, st.values);
  return {st.index, st.version, st.values};
}

/// The next version: the optimizer writes it into a recycled buffer, and the one it replaces
/// waits in the pool until no answer or kept weight reads it.
void step_values(shard_state& st, span<const float> grad, float lr) {
  settle_average(st);
  auto next = st.old_values.take(st.values.size());
  st.opt->step_into(st.values.values(), grad, lr, span<float>(next));
  st.old_values.keep(std::move(st.values));
  st.values = tensor(std::move(next));
}

// Adds `grad` (times `factor`) to the buffer. True once the buffer is full: `sum` then holds the
// mean of the buffered gradients, and the buffer starts over.
bool buffer_push(shard_state& st, span<const float> grad, float factor) {
  // The factor is taken per push: a sqrt or inverse step scales each gradient by its own age.
  if (st.buffered == 0) st.sum.assign(grad.size(), 0.f);
  float* __restrict sum = st.sum.data();
  for (std::size_t i = 0; i < grad.size(); ++i) sum[i] += factor * grad[i];
  st.buffered += 1;
  if (st.buffered < st.buffer) return false;
  const float inv = 1.f / static_cast<float>(st.buffered);
  for (auto& v : st.sum) v *= inv;
  st.buffered = 0;
  return true;
}

}  // namespace

void restart_average(shard_state& st) {
  st.averaged = 0;
  st.unfolded = false;
  if (st.average_span > 0) st.average = st.values.to_vector();
}

void settle_average(shard_state& st) {
  if (!st.unfolded) return;
  st.unfolded = false;
  fold_average(st);
}

void fold_average(shard_state& st) {
  if (st.average_span <= 0) return;
  if (st.average.size() != st.values.size()) st.average = st.values.to_vector();
  st.averaged += 1;
  const double k = static_cast<double>(st.averaged);
  const double span = static_cast<double>(st.average_span);
  const auto keep = static_cast<float>(std::min(1.0 - 1.0 / span, (1.0 + k) / (10.0 + k)));
  const float take = 1.f - keep;
  blend(st.average.data(), st.values.data(), st.values.size(), take);
}

caf::expected<push_ack> apply_push(shard_state& st, gradient& g, applied_update* out) {
  if (auto err = expand_gradient(g, st.values.size(), "shard " + std::to_string(st.index))) {
    st.stats.rejected += 1;
    return err;
  }
  if (g.values.size() != st.values.size()) {
    st.stats.rejected += 1;
    return make_error(errc::bad_length, "shard " + std::to_string(st.index) + " expects " +
                                            std::to_string(st.values.size()) +
                                            " gradient values, got " +
                                            std::to_string(g.values.size()) + " from worker " +
                                            std::to_string(g.worker));
  }
  if (!g.values.all_finite()) {
    st.stats.rejected += 1;
    return make_error(errc::non_finite, "shard " + std::to_string(st.index) +
                                            ": gradient from worker " + std::to_string(g.worker) +
                                            " holds NaN or infinity");
  }
  if (auto it = st.applied_steps.find(g.worker);
      it != st.applied_steps.end() && g.step <= it->second)
    return push_ack{st.version, 0, true};  // resent after a failover: this shard has it
  // A base version from the future can only come from a confused peer: treat it as fresh.
  auto staleness = std::max<std::int64_t>(0, st.version - g.base_version);
  st.stats.pushes += 1;
  record_staleness(st.stats, staleness);
  auto factor = st.staleness.factor(staleness);
  if (factor <= 0.f) {
    st.stats.dropped_stale += 1;
    return push_ack{st.version, staleness, false};
  }
  st.rule.observe(staleness);
  auto grad = st.rule.compensate(st.values.values(), g.values.values(), g.base_version, staleness);
  if (st.buffer > 1) {
    if (!buffer_push(st, grad, factor)) return push_ack{st.version, staleness, true};
    grad = span<const float>(st.sum.data(), st.sum.size());
    factor = 1.f;
  }
  factor *= st.rule.step_factor();
  if (auto mu = st.opt->momentum(); mu > 0.f) st.opt->set_momentum(st.rule.momentum_for(mu));
  // The schedule counts pushes taken: a buffered update stands for `buffer` of them.
  auto lr = scheduled_lr(st.optim, st.opt->steps() * st.buffer) * factor;
  step_values(st, grad, lr);
  st.version += 1;
  st.unfolded = true;
  if (st.replica) st.applied_steps[g.worker] = g.step;
  if (out) {
    auto& u = out->update;
    out->applied = true;
    u.shard = st.index;
    u.version = st.version;
    u.lr = lr;
    u.momentum = st.opt->momentum() > 0.f ? st.rule.momentum_for(st.opt->momentum()) : -1.f;
    u.staleness = staleness;
    u.worker = g.worker;
    u.step = g.step;
    // The pushed tensor itself when the rule left it as it came (no copy on this node); else
    // what the rule made of it.
    u.grad = grad.data() == g.values.data() && grad.size() == g.values.size()
                 ? g.values
                 : tensor(std::vector<float>(grad.begin(), grad.end()));
  }
  return push_ack{st.version, staleness, true};
}

caf::expected<std::int64_t> apply_replicated(shard_state& st, const replica_update& u) {
  auto who = "replica of shard " + std::to_string(st.index);
  if (u.version != st.version + 1)
    return make_error(errc::bad_message, who + " at version " + std::to_string(st.version) +
                                             " got the update to version " +
                                             std::to_string(u.version));
  if (u.grad.size() != st.values.size())
    return make_error(errc::bad_length, who + " owns " + std::to_string(st.values.size()) +
                                            " values, the update holds " +
                                            std::to_string(u.grad.size()));
  if (!u.grad.all_finite() || !std::isfinite(u.lr))
    return make_error(errc::non_finite, who + ": the update holds NaN or infinity");
  st.rule.observe(u.staleness);
  if (u.momentum >= 0.f && st.opt->momentum() > 0.f) st.opt->set_momentum(u.momentum);
  step_values(st, u.grad.values(), u.lr);
  st.version = u.version;
  fold_average(st);
  auto& last = st.applied_steps[u.worker];
  last = std::max(last, u.step);
  st.replicated += 1;
  return st.version;
}

namespace {

using shard_ptr = replicated_shard_actor::stateful_pointer<shard_state>;

/// Answers every push waiting for the replica up to `version`, in order.
void release_waiting(shard_state& st, std::int64_t version) {
  while (!st.waiting.empty() && st.waiting.front().version <= version) {
    auto deliver = std::move(st.waiting.front().deliver);
    st.waiting.pop_front();
    deliver();
  }
}

/// The replica is gone (its node went down, or it refused an update): this shard goes on alone,
/// and what waited for the replica is answered.
void drop_replica(shard_state& st) {
  st.replica = nullptr;
  release_waiting(st, std::numeric_limits<std::int64_t>::max());
}

/// Answers a push once the replica has the update it applied (at once without a replica, or
/// when nothing is in flight to it and the push changed nothing). Answers leave in order. The
/// pass over the weight average comes after an answer that leaves at once (its requester waits),
/// and is left to the next step when another request waits already.
template <class Answer>
caf::result<Answer> answer_after_replica(shard_ptr self, applied_update& upd,
                                         std::function<Answer()> make) {
  auto& st = self->state;
  auto rp = self->make_response_promise<Answer>();
  if (!st.replica || (!upd.applied && st.waiting.empty())) {
    rp.deliver(make());
    if (self->mailbox().empty()) settle_average(st);
    return rp;
  }
  st.waiting.push_back({st.version, [rp, make]() mutable { rp.deliver(make()); }});
  if (upd.applied)
    self->request(st.replica, caf::infinite, replicate_atom::value, std::move(upd.update))
        .then([self](std::int64_t v) { release_waiting(self->state, v); },
              [self](caf::error&) { drop_replica(self->state); });
  settle_average(st);
  return rp;
}

}  // namespace

replicated_shard_actor::behavior_type shard(shard_ptr self, shard_config cfg) {
  auto& st = self->state;
  st.index = cfg.index;
  st.values = tensor(std::move(cfg.init));
  st.optim = cfg.optim;
  st.staleness = cfg.staleness;
  st.opt = make_optimizer(cfg.optim, st.values.size());
  st.rule = staleness_rule(cfg.staleness, st.values.size());
  st.rule.hold(cfg.held_steps);
  st.buffer = std::max(1, cfg.buffer);
  st.average_span = std::max<std::int64_t>(0, cfg.average);
  restart_average(st);
  // Kept weights hold earlier versions: a pool as deep as the history recycles them once dropped.
  if (cfg.staleness.delay_compensation > 0.f)
    st.old_values = tensor_pool(static_cast<std::size_t>(cfg.staleness.history) + 4);
  st.stats.shard = cfg.index;
  st.stats.staleness_histogram.assign(cfg.histogram_bins, 0);
  self->set_down_handler([self](const caf::down_msg& dm) {
    if (self->state.replica && dm.source == self->state.replica.address())
      drop_replica(self->state);
  });
  return {
      [self](pull_atom, const pull_request& r) -> weights {
        auto& st = self->state;
        st.stats.pulls += 1;
        // The coordinator (evaluations, the job's result) reads the average; workers train on
        // the live weights.
        if (r.worker == -1 && st.average_span > 0 && st.average.size() == st.values.size()) {
          settle_average(st);
          return {st.index, st.version, tensor(std::vector<float>(st.average))};
        }
        return current(st);
      },
      [self](push_atom, gradient& g) -> caf::result<push_ack> {
        applied_update upd;
        auto ack = apply_push(self->state, g, self->state.replica ? &upd : nullptr);
        if (!ack) return std::move(ack.error());
        return answer_after_replica<push_ack>(self, upd, [a = *ack] { return a; });
      },
      [self](push_pull_atom, gradient& g) -> caf::result<weights> {
        applied_update upd;
        auto ack = apply_push(self->state, g, self->state.replica ? &upd : nullptr);
        if (!ack) return std::move(ack.error());
        self->state.stats.pulls += 1;
        // The weights as they stand when the answer leaves: this update and maybe later ones.
        return answer_after_replica<weights>(self, upd, [self] { return current(self->state); });
      },
      // Replica side: the primary's updates, in order.
      [self](replicate_atom, const replica_update& u) -> caf::result<std::int64_t> {
        auto v = apply_replicated(self->state, u);
        if (!v) {
          // No longer a faithful copy: it goes, so nobody promotes it (the primary goes on
          // alone; the coordinator forgets the replica when it sees it down).
          self->quit(v.error());
          return std::move(v.error());
        }
        return *v;
      },
      // Primary side: from now on every applied update goes to `r` first. The replica starts
      // from this shard's state as it stands (sent ahead of every update).
      // An empty handle: the replica is gone (the coordinator saw its node go), go on alone.
      [self](replica_atom, replica_sink_actor r) {
        auto& st = self->state;
        if (st.replica) drop_replica(st);
        if (!r) return;
        st.replica = std::move(r);
        self->monitor(st.replica);
        auto os = st.opt->state();
        self->request(st.replica, caf::infinite, restore_atom::value,
                      shard_checkpoint{st.index, st.version, -1, st.values.to_vector(), os.steps,
                                       os.slots})
            .then([](std::int64_t) {}, [self](caf::error&) { drop_replica(self->state); });
      },
      [self](stats_atom) -> shard_stats {
        auto s = self->state.stats;
        s.version = self->state.version;
        s.mailbox = static_cast<std::int64_t>(self->mailbox().size());
        auto& st = self->state;
        s.mean_staleness = st.rule.mean_staleness();
        s.momentum = st.rule.momentum_for(st.opt->momentum());
        s.uncompensated = st.rule.uncompensated();
        return s;
      },
      // A shard saves itself as it stands: a barrier in front of it picks the moment (a step).
      [self](checkpoint_atom, std::int64_t) -> shard_checkpoint {
        auto& st = self->state;
        auto os = st.opt->state();
        return {st.index, st.version, -1, st.values.to_vector(), os.steps, os.slots};
      },
      [self](restore_atom, const shard_checkpoint& c) -> caf::result<std::int64_t> {
        auto& st = self->state;
        if (c.values.size() != st.values.size())
          return make_error(errc::bad_length, "restore: shard " + std::to_string(st.index) +
                                                  " owns " + std::to_string(st.values.size()) +
                                                  " values, checkpoint has " +
                                                  std::to_string(c.values.size()));
        try {
          st.opt->restore({c.opt_steps, c.opt_slots});
        } catch (const std::exception& e) {
          return make_error(errc::bad_length, std::string("restore: ") + e.what());
        }
        st.old_values.keep(std::move(st.values));
        st.values = tensor(c.values);
        st.version = c.version;
        restart_average(st);
        st.rule.forget_weights();
        st.applied_steps.clear();  // a resumed job's workers start over from the cut
        if (st.replica)  // the replica follows: it restores the same state, ahead of any update
          self->request(st.replica, caf::infinite, restore_atom::value, c)
              .then([](std::int64_t) {}, [self](caf::error&) { drop_replica(self->state); });
        return st.version;
      },
      // Only a barrier waits for workers; a shard has nothing to forget.
      [](leave_atom, std::int32_t, bool) {},
  };
}

}  // namespace actrain
