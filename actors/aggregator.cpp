#include "actors/aggregator.hpp"

#include <algorithm>
#include <limits>

#include <actrain/engine.hpp>
#include <actrain/job.hpp>
#include "actors/compression.hpp"
#include "actors/held_pulls.hpp"

namespace actrain {

namespace {

using self_ptr = shard_actor::stateful_pointer<aggregator_state>;

constexpr std::int64_t unseen = std::numeric_limits<std::int64_t>::min();

/// The member index of worker w, or -1 when w is not in this group.
std::int64_t member(const aggregator_state& st, std::int32_t w) {
  auto m = static_cast<std::int64_t>(w) - st.cfg.first_worker;
  return m >= 0 && m < st.cfg.members ? m : -1;
}

/// A member's pull for step s may go to the front once it has pushed every step before s and the
/// group's combined push of those steps has been acknowledged (so the front's answer includes it).
bool answerable(const aggregator_state& st, const pull_request& r) {
  auto m = member(st, r.worker);
  if (m < 0) return true;
  auto i = static_cast<std::size_t>(m);
  return !st.flushing && !st.arrived[i] && r.step <= st.last_step[i] + 1;
}

/// Forwards the pull as the group's pull; the front answers the worker directly.
void answer(self_ptr self, const pull_request& r, caf::typed_response_promise<weights> p) {
  auto& st = self->state;
  p.delegate(st.cfg.front, pull_atom::value, pull_request{st.cfg.group, st.step});
  (void)r;
}

void release(self_ptr self) {
  auto& st = self->state;
  release_held(
      st.held, [&st](const pull_request& r) { return answerable(st, r); },
      [self](auto& h) { answer(self, h.req, h.promise); });
}

caf::result<weights> on_pull(self_ptr self, const pull_request& r) {
  auto& st = self->state;
  auto m = member(st, r.worker);
  if (m >= 0 && st.last_step[static_cast<std::size_t>(m)] == unseen)
    st.last_step[static_cast<std::size_t>(m)] = r.step - 1;  // its first pull: nothing owed before
  auto p = self->make_response_promise<weights>();
  if (answerable(st, r))
    answer(self, r, p);
  else
    st.held.push_back({r, p});
  return p;
}

/// Pushes the open step's row-weighted mean to the front once; pulls wait for the ack.
void flush(self_ptr self) {
  auto& st = self->state;
  gradient g;
  g.worker = st.cfg.group;
  g.step = st.step;
  g.base_version = std::max<std::int64_t>(0, st.base_version);
  g.rows = static_cast<std::int32_t>(std::min<std::int64_t>(st.sum.rows(), INT32_MAX));
  g.values = tensor(st.sum.take());
  st.flushing = true;
  st.step += 1;
  st.base_version = -1;
  std::fill(st.arrived.begin(), st.arrived.end(), false);
  st.arrivals = 0;
  self->request(st.cfg.front, st.cfg.timeout, push_atom::value, std::move(g))
      .then(
          [self](push_ack& ack) {
            auto& st = self->state;
            st.version = ack.version;
            st.flushing = false;
            release(self);
          },
          [self](caf::error& e) { end_front(self, std::move(e)); });
}

void maybe_flush(self_ptr self) {
  auto& st = self->state;
  auto live = std::count(st.active.begin(), st.active.end(), true);
  if (st.arrivals > 0 && st.arrivals >= live) flush(self);
}

caf::expected<push_ack> on_push(self_ptr self, gradient& g) {
  auto& st = self->state;
  auto m = member(st, g.worker);
  if (m < 0)
    return make_error(errc::bad_config, "aggregator " + std::to_string(st.cfg.group) + ": worker " +
                                            std::to_string(g.worker) + " is not in this group");
  auto i = static_cast<std::size_t>(m);
  if (auto err = expand_gradient(g, st.sum.size(), "aggregator " + std::to_string(st.cfg.group)))
    return err;
  st.sum.expect_size(g.values.size());
  if (g.values.size() != st.sum.size())
    return make_error(errc::bad_length, "aggregator " + std::to_string(st.cfg.group) + ": worker " +
                                            std::to_string(g.worker) + " pushed " +
                                            std::to_string(g.values.size()) + " values, expected " +
                                            std::to_string(st.sum.size()));
  if (!g.values.all_finite())
    return make_error(errc::non_finite, "aggregator: gradient from worker " +
                                            std::to_string(g.worker) + " holds NaN or infinity");
  if (st.arrived[i])
    return make_error(errc::bad_message, "aggregator: worker " + std::to_string(g.worker) +
                                             " pushed twice in one step (its pull was not held)");
  st.sum.add(g.values.values(), g.rows);
  st.base_version =
      st.base_version < 0 ? g.base_version : std::min(st.base_version, g.base_version);
  if (!st.lost[i]) st.active[i] = true;
  st.arrived[i] = true;
  st.last_step[i] = std::max(st.last_step[i], g.step);
  st.arrivals += 1;
  st.slices += 1;
  push_ack ack{st.version, std::max<std::int64_t>(0, st.version - g.base_version), true};
  maybe_flush(self);
  return ack;
}

}  // namespace

aggregator_state::~aggregator_state() {
  answer_held_at_end(held, ended_by, "aggregator " + std::to_string(cfg.group),
                     [](const held_pull& h) {
                       return "while pull of step " + std::to_string(h.req.step) + " by worker " +
                              std::to_string(h.req.worker) + " waited";
                     });
}

shard_actor::behavior_type aggregator(shard_actor::stateful_pointer<aggregator_state> self,
                                      aggregator_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  auto n = static_cast<std::size_t>(std::max(0, st.cfg.members));
  st.active.assign(n, true);
  st.lost.assign(n, false);
  st.arrived.assign(n, false);
  st.last_step.assign(n, unseen);
  if (st.cfg.slice > 0) st.sum.expect_size(st.cfg.slice);
  self->monitor(st.cfg.front);
  self->set_down_handler([self](caf::down_msg& dm) { end_front(self, std::move(dm.reason)); });
  self->set_exit_handler([self](caf::exit_msg& em) {
    if (em.reason) end_front(self, std::move(em.reason));
  });
  return {
      [self](pull_atom, const pull_request& r) -> caf::result<weights> { return on_pull(self, r); },
      [self](push_atom, gradient& g) -> caf::result<push_ack> {
        auto ack = on_push(self, g);
        if (!ack) return std::move(ack.error());
        return *ack;
      },
      [self](push_pull_atom, gradient& g) -> caf::result<weights> {
        auto ack = on_push(self, g);
        if (!ack) return std::move(ack.error());
        return on_pull(self, pull_request{g.worker, g.step + 1});
      },
      [self](stats_atom) -> caf::result<shard_stats> {
        return self->delegate(self->state.cfg.front, stats_atom::value);
      },
      [self](checkpoint_atom, std::int64_t step) -> caf::result<shard_checkpoint> {
        return self->delegate(self->state.cfg.front, checkpoint_atom::value, step);
      },
      [self](restore_atom, shard_checkpoint& c) -> caf::result<std::int64_t> {
        return self->delegate(self->state.cfg.front, restore_atom::value, std::move(c));
      },
      [self](leave_atom, std::int32_t w, bool lost) {
        auto& st = self->state;
        auto m = member(st, w);
        if (m < 0) return;
        st.active[static_cast<std::size_t>(m)] = false;
        if (lost) st.lost[static_cast<std::size_t>(m)] = true;
        if (std::none_of(st.active.begin(), st.active.end(), [](bool a) { return a; })) {
          // The group is gone for good once every member is.
          bool all_lost = std::all_of(st.lost.begin(), st.lost.end(), [](bool l) { return l; });
          self->send(st.cfg.front, leave_atom::value, st.cfg.group, all_lost);
        } else if (!st.flushing) {
          maybe_flush(self);
        }
        release(self);
      },
  };
}

std::vector<shard_actor> make_aggregators(caf::actor_system& sys, const job_spec& job,
                                          const topology& topo,
                                          const std::vector<shard_actor>& fronts) {
  if (!topo.aggregators) return fronts;
  auto ranges = job_ranges(job);
  std::vector<shard_actor> out;
  for (std::size_t s = 0; s < fronts.size(); ++s) {
    auto& f = fronts[s];
    aggregator_config c;
    c.front = f;
    if (s < ranges.size()) c.slice = static_cast<std::size_t>(ranges[s].end - ranges[s].begin);
    c.group = 0;
    c.first_worker = 0;
    c.members = job.workers;
    out.push_back(sys.spawn(aggregator, std::move(c)));
  }
  return out;
}

}  // namespace actrain
