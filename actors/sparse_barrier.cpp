#include "actors/sparse_barrier.hpp"

#include <algorithm>

#include "actors/held_pulls.hpp"
#include "actors/sparse_shard.hpp"

namespace actrain {

namespace {

using self_ptr = sparse_shard_actor::stateful_pointer<sparse_barrier_state>;

void release(self_ptr self) {
  auto& st = self->state;
  auto held = std::move(st.held);
  st.held.clear();
  for (auto& h : held) {
    if (h.req.step > st.applied) {
      st.held.push_back(std::move(h));
      continue;
    }
    h.promise.delegate(st.cfg.shard, pull_atom::value, std::move(h.req));
  }
}

/// Applies the oldest step once every worker still in the job pushed it. A departed worker's rows
/// are in the sum, but its arrival does not stand in for a live worker's; with no live worker
/// left, any arrival closes the step.
void try_apply(self_ptr self) {
  auto& st = self->state;
  if (st.applying || st.steps.empty()) return;
  auto it = st.steps.begin();
  if (it->first != st.applied) return;  // steps complete in order
  auto& arrived = it->second.arrived;
  for (std::int32_t w = 0; w < st.cfg.workers; ++w)
    if (!st.departed.count(w) && !arrived.count(w)) return;
  auto& sum = it->second;
  row_gradient g;
  g.worker = -1;
  g.step = it->first;
  g.rows = static_cast<std::int32_t>(sum.rows);
  float inv = sum.rows > 0 ? 1.f / static_cast<float>(sum.rows) : 0.f;
  for (auto& v : sum.values) v *= inv;
  g.ids = std::move(sum.ids);
  g.base_versions = std::move(sum.base);
  g.values = std::move(sum.values);
  st.steps.erase(it);
  st.closed = g.step + 1;
  st.applying = true;
  self->request(st.cfg.shard, caf::infinite, push_atom::value, std::move(g))
      .then(
          [self](push_ack&) {
            auto& st = self->state;
            st.applying = false;
            st.applied += 1;
            release(self);
            try_apply(self);
          },
          [self](caf::error& err) { end_front(self, std::move(err)); });
}

}  // namespace

sparse_barrier_state::~sparse_barrier_state() {
  answer_held_at_end(held, ended_by, "the sparse barrier", [](const held_pull& h) {
    return "while pull of step " + std::to_string(h.req.step) + " by worker " +
           std::to_string(h.req.worker) + " waited";
  });
}

sparse_shard_actor::behavior_type sparse_barrier(
    sparse_shard_actor::stateful_pointer<sparse_barrier_state> self, sparse_barrier_config cfg) {
  self->state.cfg = std::move(cfg);
  self->set_exit_handler([self](caf::exit_msg& em) {
    if (em.reason) end_front(self, std::move(em.reason));
  });
  return {
      [self](pull_atom, row_request& r) -> caf::result<row_block> {
        auto& st = self->state;
        if (r.step <= st.applied)
          return self->delegate(st.cfg.shard, pull_atom::value, std::move(r));
        auto p = self->make_response_promise<row_block>();
        st.held.push_back({std::move(r), p});
        return p;
      },
      [self](push_atom, row_gradient& g) -> caf::result<push_ack> {
        auto& st = self->state;
        auto dim = static_cast<std::size_t>(st.cfg.dim);
        if (auto err = take_row_values(g, st.cfg.dim)) return err;
        if (g.step < st.closed || g.values.size() != g.ids.size() * dim ||
            g.base_versions.size() != g.ids.size())
          return push_ack{st.applied, 0, false};  // late, or malformed: the shard never sees it
        // A worker that left and was given rows again (a lost worker's) is back in the job.
        st.departed.erase(g.worker);
        auto& sum = st.steps[g.step];
        if (!sum.arrived.insert(g.worker).second) return push_ack{st.applied, 0, false};
        sum.rows += g.rows;
        auto w = static_cast<float>(g.rows);
        for (std::size_t i = 0; i < g.ids.size(); ++i) {
          auto [it, fresh] =
              sum.index.try_emplace(g.ids[i], static_cast<std::uint32_t>(sum.ids.size()));
          if (fresh) {
            sum.ids.push_back(g.ids[i]);
            sum.base.push_back(g.base_versions[i]);
            sum.values.resize(sum.values.size() + dim, 0.f);
          }
          float* dst = &sum.values[static_cast<std::size_t>(it->second) * dim];
          for (std::size_t c = 0; c < dim; ++c) dst[c] += w * g.values[i * dim + c];
        }
        try_apply(self);
        return push_ack{st.applied, 0, true};
      },
      [self](stats_atom) -> caf::result<table_stats> {
        return self->delegate(self->state.cfg.shard, stats_atom::value);
      },
      [self](leave_atom, std::int32_t worker) {
        self->state.departed.insert(worker);
        try_apply(self);
      },
  };
}

}  // namespace actrain
