#include "actors/shard.hpp"

#include <algorithm>

#include "actors/compression.hpp"

namespace actrain {

namespace {

void record_staleness(shard_stats& s, std::int64_t staleness) {
  if (s.staleness_histogram.empty()) return;
  auto last = static_cast<std::int64_t>(s.staleness_histogram.size()) - 1;
  s.staleness_histogram[static_cast<std::size_t>(std::min(staleness, last))] += 1;
}

weights current(shard_state& st) {
  if (st.snapshot.size() != st.values.size()) {
    auto buf = st.old_snapshots.take(st.values.size());
    std::copy(st.values.begin(), st.values.end(), buf.begin());
    st.snapshot = tensor(std::move(buf));
    st.rule.handed_out(st.version, st.snapshot);
  }
  return {st.index, st.version, st.snapshot};
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

caf::expected<push_ack> apply_push(shard_state& st, gradient& g) {
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
  auto grad = st.rule.compensate(st.values, g.values.values(), g.base_version, staleness);
  if (st.buffer > 1) {
    if (!buffer_push(st, grad, factor)) return push_ack{st.version, staleness, true};
    grad = span<const float>(st.sum.data(), st.sum.size());
    factor = 1.f;
  }
  factor *= st.rule.step_factor();
  if (auto mu = st.opt->momentum(); mu > 0.f) st.opt->set_momentum(st.rule.momentum_for(mu));
  // The schedule counts pushes taken: a buffered update stands for `buffer` of them.
  auto lr = scheduled_lr(st.optim, st.opt->steps() * st.buffer) * factor;
  st.opt->step(span<float>(st.values), grad, lr);
  st.version += 1;
  st.old_snapshots.keep(std::move(st.snapshot));
  st.snapshot = tensor();
  return push_ack{st.version, staleness, true};
}

shard_actor::behavior_type shard(shard_actor::stateful_pointer<shard_state> self,
                                 shard_config cfg) {
  auto& st = self->state;
  st.index = cfg.index;
  st.values = std::move(cfg.init);
  st.optim = cfg.optim;
  st.staleness = cfg.staleness;
  st.opt = make_optimizer(cfg.optim, st.values.size());
  st.rule = staleness_rule(cfg.staleness, st.values.size());
  st.rule.hold(cfg.held_steps);
  st.buffer = std::max(1, cfg.buffer);
  // Kept weights hold snapshots: a pool as deep as the history recycles them once dropped.
  if (cfg.staleness.delay_compensation > 0.f)
    st.old_snapshots = tensor_pool(static_cast<std::size_t>(cfg.staleness.history) + 4);
  st.stats.shard = cfg.index;
  st.stats.staleness_histogram.assign(cfg.histogram_bins, 0);
  return {
      [self](pull_atom, const pull_request&) -> weights {
        self->state.stats.pulls += 1;
        return current(self->state);
      },
      [self](push_atom, gradient& g) -> caf::result<push_ack> {
        auto ack = apply_push(self->state, g);
        if (!ack) return std::move(ack.error());
        return *ack;
      },
      [self](push_pull_atom, gradient& g) -> caf::result<weights> {
        auto ack = apply_push(self->state, g);
        if (!ack) return std::move(ack.error());
        self->state.stats.pulls += 1;
        return current(self->state);
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
        return {st.index, st.version, -1, st.values, os.steps, os.slots};
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
        st.values = c.values;
        st.version = c.version;
        st.rule.forget_weights();
        st.old_snapshots.keep(std::move(st.snapshot));
        st.snapshot = tensor();
        return st.version;
      },
      // Only a barrier waits for workers; a shard has nothing to forget.
      [](leave_atom, std::int32_t) {},
  };
}

}  // namespace actrain
