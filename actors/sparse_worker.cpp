#include "actors/sparse_worker.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "actors/worker.hpp"
#include "tensor/codec.hpp"

namespace actrain {

namespace {

using self_ptr = sparse_worker_actor::stateful_pointer<sparse_worker_state>;

void try_compute(self_ptr self);

void report(self_ptr self, bool finished) {
  auto& st = self->state;
  st.pending.worker = st.cfg.id;
  st.pending.step = st.step;
  st.pending.finished = finished;
  if (st.assignment.reports_to)
    caf::anon_send(st.assignment.reports_to, progress_atom::value, st.pending);
  st.pending = progress_report{};
}

/// The next batch's rows into s (offsets, ids deduplicated into slots, labels); 0 at the end of
/// all assigned work.
int read_batch(sparse_worker_state& st, sparse_step& s) {
  const auto& d = *st.cfg.train;
  while (!st.work.empty()) {
    auto& w = st.work.front();
    if (w.pos >= w.order.size()) {
      if (--w.epochs_left <= 0) {
        st.work.erase(st.work.begin());
        continue;
      }
      w.pos = 0;
      if (st.cfg.shuffle) std::shuffle(w.order.begin(), w.order.end(), st.rng);
    }
    auto n = std::min<std::size_t>(static_cast<std::size_t>(st.cfg.batch), w.order.size() - w.pos);
    s.rows = static_cast<int>(n);
    s.offsets.assign(1, 0);
    s.slots.clear();
    s.values.clear();
    s.y.clear();
    s.unique.clear();
    st.dedup.clear();
    bool ones = d.values.empty();
    if (st.cfg.whole_table) {
      s.unique.resize(st.cfg.table.rows);
      std::iota(s.unique.begin(), s.unique.end(), std::uint64_t{0});
    }
    for (std::size_t i = 0; i < n; ++i) {
      auto r = w.order[w.pos + i];
      for (auto e = d.offsets[r]; e < d.offsets[r + 1]; ++e) {
        auto id = d.ids[e];
        std::uint32_t slot;
        if (st.cfg.whole_table) {
          slot = static_cast<std::uint32_t>(id);
        } else {
          auto [it, fresh] = st.dedup.try_emplace(id, static_cast<std::uint32_t>(s.unique.size()));
          if (fresh) s.unique.push_back(id);
          slot = it->second;
        }
        s.slots.push_back(slot);
        if (!ones) s.values.push_back(d.values[e]);
      }
      s.offsets.push_back(static_cast<std::int64_t>(s.slots.size()));
      s.y.push_back(d.y[r]);
    }
    w.pos += n;
    return s.rows;
  }
  return 0;
}

/// Sends the pulls for buffer b (rows of step `step`): one per table shard that owns some of the
/// batch's ids, and one for the dense parameters.
void fetch(self_ptr self, int b, std::int64_t step) {
  auto& st = self->state;
  auto& s = st.buf[b];
  s.step = step;
  auto shards = st.assignment.tables.size();
  auto dim = static_cast<std::size_t>(st.cfg.table.dim);
  s.by_shard.resize(shards);
  for (auto& v : s.by_shard) v.clear();
  for (std::uint32_t slot = 0; slot < s.unique.size(); ++slot)
    s.by_shard[table_shard_of(st.cfg.table, static_cast<int>(shards), s.unique[slot])].push_back(
        slot);
  s.gathered.resize(s.unique.size() * dim);
  s.base.resize(s.unique.size());
  s.pending = 1;
  for (std::size_t t = 0; t < shards; ++t)
    if (!s.by_shard[t].empty()) s.pending += 1;
  auto fail = [self](caf::error& err) { self->quit(err); };
  for (std::size_t t = 0; t < shards; ++t) {
    if (s.by_shard[t].empty()) continue;
    row_request r{st.cfg.id, step, {}};
    r.ids.reserve(s.by_shard[t].size());
    for (auto slot : s.by_shard[t]) r.ids.push_back(s.unique[slot]);
    st.pending.bytes_sent += static_cast<std::int64_t>(r.ids.size() * 8);
    self->request(st.assignment.tables[t], caf::infinite, pull_atom::value, std::move(r))
        .then(
            [self, b, t, step, dim](row_block& rb) {
              auto& st = self->state;
              auto& s = st.buf[b];
              if (s.step != step) return;
              auto& slots = s.by_shard[t];
              if (rb.values.size() != slots.size() * dim ||
                  rb.row_versions.size() != slots.size()) {
                self->quit(make_error(errc::bad_length,
                                      "sparse worker " + std::to_string(st.cfg.id) +
                                          ": table shard " + std::to_string(t) + " sent " +
                                          std::to_string(rb.values.size()) + " values for " +
                                          std::to_string(slots.size()) + " rows"));
                return;
              }
              st.pending.bytes_received +=
                  static_cast<std::int64_t>(rb.values.size() * 4 + rb.row_versions.size() * 8);
              for (std::size_t i = 0; i < slots.size(); ++i) {
                std::copy_n(&rb.values[i * dim], dim, &s.gathered[slots[i] * dim]);
                s.base[slots[i]] = rb.row_versions[i];
              }
              if (--s.pending == 0) try_compute(self);
            },
            fail);
  }
  self->request(st.assignment.dense, caf::infinite, pull_atom::value, pull_request{st.cfg.id, step})
      .then(
          [self, b, step](weights& w) {
            auto& st = self->state;
            auto& s = st.buf[b];
            if (s.step != step) return;
            if (w.values.size() != st.net->num_dense()) {
              self->quit(make_error(errc::bad_length, "sparse worker " + std::to_string(st.cfg.id) +
                                                          ": the dense shard sent " +
                                                          std::to_string(w.values.size()) +
                                                          " weights"));
              return;
            }
            s.dense.assign(w.values.data(), w.values.data() + w.values.size());
            st.pending.bytes_received += static_cast<std::int64_t>(w.values.size() * 4);
            s.dense_version = w.version;
            if (--s.pending == 0) try_compute(self);
          },
          fail);
}

/// Reads the batch of step `st.step` into the buffer not being computed and starts its pulls;
/// false when there is no more work.
bool start_next(self_ptr self) {
  auto& st = self->state;
  int b = st.fetching;
  if (read_batch(st, st.buf[b]) == 0) {
    st.buf[b].step = -1;
    st.out_of_work = true;
    return false;
  }
  fetch(self, b, st.step);
  return true;
}

void maybe_finish(self_ptr self) {
  auto& st = self->state;
  if (!st.out_of_work || st.finished_reported) return;
  if (std::any_of(st.in_flight.begin(), st.in_flight.end(), [](int n) { return n > 0; })) return;
  st.finished_reported = true;
  report(self, true);
}

void on_ack(self_ptr self, std::size_t shard, const push_ack& ack) {
  auto& st = self->state;
  st.in_flight[shard] -= 1;
  st.pending.max_staleness = std::max(st.pending.max_staleness, ack.staleness);
  try_compute(self);
  maybe_finish(self);
}

/// Marks the rows of step s to send (all of them, or topk's selection) and keeps topk's
/// residuals: a row's gradient plus what it had not sent yet either goes out whole or waits.
void select_rows(sparse_worker_state& st, const sparse_step& s) {
  st.send.assign(s.unique.size(), 1);
  if (st.cfg.compression != "topk") return;
  auto dim = static_cast<std::size_t>(st.cfg.table.dim);
  std::vector<float> norms(s.unique.size());
  for (std::size_t slot = 0; slot < s.unique.size(); ++slot) {
    float* g = &st.row_grad[slot * dim];
    auto it = st.residual.find(s.unique[slot]);
    if (it != st.residual.end())
      for (std::size_t c = 0; c < dim; ++c) g[c] += it->second.g[c];
    double n2 = 0;
    for (std::size_t c = 0; c < dim; ++c) n2 += static_cast<double>(g[c]) * g[c];
    norms[slot] = static_cast<float>(n2);
  }
  auto k = static_cast<std::size_t>(
      std::ceil(st.cfg.topk_fraction * static_cast<double>(s.unique.size())));
  std::fill(st.send.begin(), st.send.end(), 0);
  for (auto slot : top_k(norms, std::max<std::size_t>(1, k))) st.send[slot] = 1;
  for (std::size_t slot = 0; slot < s.unique.size(); ++slot) {
    auto id = s.unique[slot];
    if (st.send[slot]) {
      st.residual.erase(id);
    } else {
      auto& r = st.residual[id];
      r.g.assign(&st.row_grad[slot * dim], &st.row_grad[slot * dim] + dim);
      r.base = s.base[slot];
    }
  }
}

/// topk: once the assigned rows are done, every gradient still held back goes out (one push per
/// shard that owns some), so nothing a worker computed is lost at the end.
void flush_residual(self_ptr self) {
  auto& st = self->state;
  if (st.residual.empty()) return;
  auto shards = st.assignment.tables.size();
  std::vector<row_gradient> out(shards);
  for (auto& [id, r] : st.residual) {
    auto& g =
        out[static_cast<std::size_t>(table_shard_of(st.cfg.table, static_cast<int>(shards), id))];
    g.ids.push_back(id);
    g.base_versions.push_back(r.base);
    g.values.insert(g.values.end(), r.g.begin(), r.g.end());
  }
  st.residual.clear();
  for (std::size_t t = 0; t < shards; ++t) {
    auto& g = out[t];
    if (g.ids.empty()) continue;
    g.worker = st.cfg.id;
    g.step = st.step;
    g.rows = st.cfg.batch;  // a sync barrier weighs it as one more step of this worker
    auto bytes = static_cast<std::int64_t>(g.ids.size() * 16 + g.values.size() * 4);
    st.pending.bytes_sent += bytes;
    st.pending.bytes_pushed += bytes;
    st.in_flight[t] += 1;
    self->request(st.assignment.tables[t], caf::infinite, push_atom::value, std::move(g))
        .then([self, t](push_ack& ack) { on_ack(self, t, ack); },
              [self](caf::error& err) { self->quit(err); });
  }
}

void compute_and_push(self_ptr self, int b) {
  auto& st = self->state;
  auto t0 = self->clock().now();
  auto& s = st.buf[b];
  auto this_step = s.step;
  if (st.cfg.fail_after_steps >= 0 && this_step >= st.cfg.fail_after_steps) {
    self->quit(make_error(errc::compute_failed, "sparse worker " + std::to_string(st.cfg.id) +
                                                    ": injected fault at step " +
                                                    std::to_string(this_step)));
    return;
  }
  st.step = this_step + 1;
  // The other buffer reads and pulls the next batch while this one computes.
  st.fetching = 1 - b;
  if (st.cfg.prefetch) start_next(self);
  auto dim = static_cast<std::size_t>(st.cfg.table.dim);
  st.row_grad.resize(s.unique.size() * dim);
  st.dense_grad.resize(st.net->num_dense());
  sparse_batch_view v{s.rows,         s.offsets.data(),
                      s.slots.data(), s.values.empty() ? nullptr : s.values.data(),
                      s.y.data(),     s.unique.size()};
  auto ls = st.net->forward_backward(s.dense.data(), s.gathered.data(), v, st.dense_grad.data(),
                                     st.row_grad.data());
  select_rows(st, s);
  auto shards = st.assignment.tables.size();
  for (std::size_t t = 0; t < shards; ++t) {
    auto& slots = s.by_shard[t];
    if (slots.empty()) continue;
    row_gradient g;
    g.worker = st.cfg.id;
    g.step = this_step;
    g.rows = s.rows;
    g.ids.reserve(slots.size());
    g.base_versions.reserve(slots.size());
    g.values.reserve(slots.size() * dim);
    for (auto slot : slots) {
      if (!st.send[slot]) continue;
      g.ids.push_back(s.unique[slot]);
      g.base_versions.push_back(s.base[slot]);
      g.values.insert(g.values.end(), &st.row_grad[slot * dim], &st.row_grad[slot * dim] + dim);
    }
    if (st.cfg.compression == "fp16") {
      g.half_values.resize(g.values.size());
      encode_half(g.values.data(), g.values.size(), g.half_values.data());
      g.values.clear();
    }
    // Sent even when empty (topk may select no row of this shard): a barrier counts arrivals.
    auto bytes = static_cast<std::int64_t>(g.ids.size() * 16 + g.values.size() * 4 +
                                           g.half_values.size() * 2);
    st.pending.bytes_sent += bytes;
    st.pending.bytes_pushed += bytes;
    st.in_flight[t] += 1;
    self->request(st.assignment.tables[t], caf::infinite, push_atom::value, std::move(g))
        .then([self, t](push_ack& ack) { on_ack(self, t, ack); },
              [self](caf::error& err) { self->quit(err); });
  }
  gradient dg{st.cfg.id, this_step, s.dense_version, s.rows, tensor(st.dense_grad)};
  st.pending.bytes_sent += static_cast<std::int64_t>(st.dense_grad.size() * 4);
  st.pending.bytes_pushed += static_cast<std::int64_t>(st.dense_grad.size() * 4);
  st.in_flight[shards] += 1;
  self->request(st.assignment.dense, caf::infinite, push_atom::value, std::move(dg))
      .then([self, shards](push_ack& ack) { on_ack(self, shards, ack); },
            [self](caf::error& err) { self->quit(err); });
  s.step = -1;
  st.pending.samples += s.rows;
  st.pending.loss_sum += ls.loss;
  st.pending.busy_seconds += std::chrono::duration<double>(self->clock().now() - t0).count();
  if (st.step % st.cfg.report_every == 0) report(self, false);
  if (!st.cfg.prefetch) start_next(self);
  if (st.out_of_work) flush_residual(self);
}

void try_compute(self_ptr self) {
  auto& st = self->state;
  auto& s = st.buf[st.fetching];
  if (!s.ready()) return;
  for (auto n : st.in_flight)
    if (n >= st.cfg.window) return;
  compute_and_push(self, st.fetching);
}

}  // namespace

sparse_worker_actor::behavior_type sparse_worker(
    sparse_worker_actor::stateful_pointer<sparse_worker_state> self, sparse_worker_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.rng.seed(st.cfg.seed * 7919 + static_cast<std::uint64_t>(st.cfg.id));
  self->set_exception_handler([self](std::exception_ptr& eptr) -> caf::error {
    return compute_error("sparse worker " + std::to_string(self->state.cfg.id) + ": ", eptr);
  });
  return {
      [self](assign_atom, sparse_assignment& a) {
        auto& st = self->state;
        // A second assignment adds rows (a lost worker's) to the same shards.
        bool first = !st.net;
        if (first) {
          st.assignment = a;
          st.net = make_sparse_model(st.cfg.model);
          st.in_flight.assign(st.assignment.tables.size() + 1, 0);
        }
        for (auto& r : a.rows) {
          sparse_worker_state::range_walk w;
          w.epochs_left = a.epochs;
          w.order.resize(static_cast<std::size_t>(r.end - r.begin));
          std::iota(w.order.begin(), w.order.end(), r.begin);
          if (st.cfg.shuffle) std::shuffle(w.order.begin(), w.order.end(), st.rng);
          if (!w.order.empty()) st.work.push_back(std::move(w));
        }
        if (!first && !st.out_of_work) return;  // still walking earlier rows: these follow
        st.out_of_work = false;
        st.finished_reported = false;
        if (!start_next(self)) maybe_finish(self);
      },
      [self](stop_atom) { self->quit(); },
  };
}

}  // namespace actrain
