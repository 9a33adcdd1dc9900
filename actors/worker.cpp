#include "actors/worker.hpp"

#include <algorithm>
#include <utility>
#include <thread>

#include <actrain/optim.hpp>
#include "actors/compression.hpp"
#include "tensor/device.hpp"

namespace actrain {

namespace {

using self_ptr = worker_impl::stateful_pointer<worker_state>;

void try_compute(self_ptr self);

void report(self_ptr self, bool finished) {
  auto& st = self->state;
  st.pending.worker = st.cfg.id;
  st.pending.step = st.step;
  st.pending.finished = finished;
  if (st.reports_to) caf::anon_send(st.reports_to, progress_atom::value, st.pending);
  st.pending = progress_report{};
}

/// One shard's weights for `step` arrived (from a pull or a push_pull).
void on_slice(self_ptr self, std::size_t s, std::int64_t step, weights& w) {
  auto& st = self->state;
  st.answers += 1;
  if (st.stopped || step != st.fetch_step || st.have_slice[s]) return;
  auto expect = static_cast<std::size_t>(st.ranges[s].end - st.ranges[s].begin);
  // Weights from another node are checked here; a handle on this node is a shard that validated
  // every push it applied, or a shard_proxy that checks what it received (the scan of an 814 KB
  // MLP slice was 2% of a worker's time).
  bool remote = st.shards[s].node() != self->node();
  st.pending.bytes_received += static_cast<std::int64_t>(w.values.size() * sizeof(float));
  if (w.values.size() != expect) {
    self->quit(make_error(errc::bad_length,
                          "worker " + std::to_string(st.cfg.id) + ": shard " + std::to_string(s) +
                              " sent " + std::to_string(w.values.size()) +
                              " weights, its range holds " + std::to_string(expect)));
    return;
  }
  if (remote && !w.values.all_finite()) {
    self->quit(make_error(errc::non_finite, "worker " + std::to_string(st.cfg.id) + ": shard " +
                                                std::to_string(s) +
                                                " sent weights holding NaN or infinity"));
    return;
  }
  st.slices[s] = std::move(w.values);
  st.slice_versions[s] = w.version;
  st.have_slice[s] = 1;
  if (++st.fetched == st.shards.size()) {
    st.ready = true;
    try_compute(self);
  }
}

/// Starts collecting the weights for `step`.
void expect_slices(worker_state& st, std::int64_t step) {
  st.fetch_step = step;
  st.fetched = 0;
  st.ready = false;
  std::fill(st.have_slice.begin(), st.have_slice.end(), 0);
}

/// A request to shard `s` failed. Without replicas the worker fails with it. With replicas, a
/// shard that cannot be reached (its node went down: CAF's own errors) is waited for: the
/// coordinator moves it to its replica (moved_atom) and the worker resends; the watchdog still
/// ends a wait that nothing answers.
void on_shard_error(self_ptr self, std::size_t s, std::uint32_t generation, caf::error& err) {
  auto& st = self->state;
  if (st.replicated && generation != st.generation[s]) return;  // an earlier handle's answer
  if (!st.replicated || err.category() == errc_category()) self->quit(err);
}

/// Asks shard `s` for its slice of `step`.
void pull_slice(self_ptr self, std::size_t s, std::int64_t step) {
  auto& st = self->state;
  auto gen = st.generation[s];
  self->request(st.shards[s], caf::infinite, pull_atom::value, pull_request{st.cfg.id, step})
      .then(
          [self, s, step, gen](weights& w) {
            if (gen == self->state.generation[s]) on_slice(self, s, step, w);
          },
          [self, s, gen](caf::error& err) { on_shard_error(self, s, gen, err); });
}

/// Asks every shard for the weights to compute `step` with.
void fetch(self_ptr self, std::int64_t step) {
  auto& st = self->state;
  expect_slices(st, step);
  for (std::size_t s = 0; s < st.shards.size(); ++s) pull_slice(self, s, step);
}

/// The gate answered a worker's ask for a slot: granted, or not (an anonymous ask, or the gate is
/// gone because its process shuts down): then the worker goes on ungated. Either way it pulls.
void on_slot(self_ptr self, bool granted) {
  auto& st = self->state;
  st.asking_slot = false;
  if (granted)
    st.holding_slot = true;
  else
    st.cfg.gate = nullptr;
  if (!st.stopped) fetch(self, st.step);
}

/// With a compute gate (worker_config::gate): the weights of `st.step` are pulled once the worker
/// holds a slot, so no other step than the slot holders' lands between its pull and its push.
/// Without one: fetch.
void pull_next(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.gate || st.holding_slot) {
    fetch(self, st.step);
    return;
  }
  if (st.asking_slot) return;
  st.asking_slot = true;
  st.ready = false;  // weights fetched before the slot are not used
  self->request(st.cfg.gate, caf::infinite, slot_atom::value)
      .then([self](bool granted) { on_slot(self, granted); },
            [self](caf::error&) { on_slot(self, false); });
}

/// Leaves the compute slot this worker holds (none: nothing).
void leave_slot(self_ptr self) {
  auto& st = self->state;
  st.turn_step = 0;
  if (!st.holding_slot) return;
  st.holding_slot = false;
  self->send(st.cfg.gate, leave_atom::value, slot_atom::value);
}

/// Shard s answered the oldest push in flight to it.
void acknowledged(worker_state& st, std::size_t s) {
  st.in_flight[s] -= 1;
  if (st.replicated && !st.unacked[s].empty()) st.unacked[s].pop_front();
}

void on_ack(self_ptr self, std::size_t s, const push_ack& ack) {
  auto& st = self->state;
  st.answers += 1;
  acknowledged(st, s);
  st.pending.max_staleness = std::max(st.pending.max_staleness, ack.staleness);
  try_compute(self);
}

/// Sends one push (or push_pull, whose answer is also the weights of step `next`) to shard `s`.
void send_push(self_ptr self, std::size_t s, bool push_pull, gradient g, std::int64_t next) {
  auto& st = self->state;
  auto gen = st.generation[s];
  if (st.replicated) st.unacked[s].emplace_back(push_pull, g);
  if (push_pull) {
    // One request per shard and step: the answer is both the ack and the next step's weights.
    self->request(st.shards[s], caf::infinite, push_pull_atom::value, std::move(g))
        .then(
            [self, s, next, gen](weights& w) {
              if (gen != self->state.generation[s]) return;
              acknowledged(self->state, s);
              on_slice(self, s, next, w);
            },
            [self, s, gen](caf::error& err) { on_shard_error(self, s, gen, err); });
    return;
  }
  self->request(st.shards[s], caf::infinite, push_atom::value, std::move(g))
      .then(
          [self, s, gen](push_ack& ack) {
            if (gen == self->state.generation[s]) on_ack(self, s, ack);
          },
          [self, s, gen](caf::error& err) { on_shard_error(self, s, gen, err); });
}

/// Shard `s` moved to its replica at `h`: what was not acknowledged goes there again (a push the
/// replica has already is acknowledged without being applied twice), and a slice still missing
/// is asked for there.
void on_moved(self_ptr self, std::int32_t index, shard_actor h) {
  auto& st = self->state;
  if (index < 0 || static_cast<std::size_t>(index) >= st.shards.size() || !h || st.stopped) return;
  auto s = static_cast<std::size_t>(index);
  st.shards[s] = std::move(h);
  st.generation[s] += 1;
  st.answers += 1;  // the watchdog counts this as an answer: the wait starts over
  auto resend = std::move(st.unacked[s]);
  st.unacked[s].clear();
  st.in_flight[s] = 0;
  for (auto& [push_pull, g] : resend) {
    st.in_flight[s] += 1;
    auto next = g.step + 1;  // a push_pull's answer is the weights of the step after its own
    send_push(self, s, push_pull, std::move(g), next);
  }
  if (st.fetch_step >= 0 && !st.ready && !st.have_slice[s]) pull_slice(self, s, st.fetch_step);
}

/// The rows of the next mini-batch into x/y; 0 when all assigned work is done. A resumed worker
/// first reads the batches it trained before the checkpoint and skips them: its seeded readers
/// then stand where they stood at the cut.
int next_batch(worker_state& st) {
  while (!st.work.empty()) {
    auto& w = st.work.front();
    int rows = w.reader->next(st.x, st.y);
    w.in_epoch = rows > 0;
    if (rows > 0 && st.skip > 0) {
      st.skip -= 1;
      st.pending.replayed += rows;
      continue;
    }
    if (rows > 0) return rows;
    if (--w.epochs_left <= 0) st.work.pop_front();
  }
  return 0;
}

void straggle(worker_state& st) {
  double d = st.cfg.delay_s;
  if (st.cfg.delay_jitter_s > 0)
    d += std::uniform_real_distribution<double>(0, st.cfg.delay_jitter_s)(st.rng);
  if (d > 0) std::this_thread::sleep_for(std::chrono::duration<double>(d));
}

/// Time standing in for forward/backward (simulated compute). Sleeping, not spinning: it stands
/// for a device (a GPU) computing while the worker's thread waits, so coordination overhead can be
/// measured for many more workers than this machine has cores.
void simulate_compute(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

void compute_and_push(self_ptr self) {
  auto& st = self->state;
  auto t0 = self->clock().now();
  int rows = next_batch(st);
  if (rows == 0) {
    // All assigned work is done; the fetched weights stay ready in case more work arrives. A
    // resumed worker still replaying has not got its whole list yet (it comes in several
    // assignments, and the weights may arrive first): it waits for the rest.
    leave_slot(self);
    if (st.skip > 0) return;
    if (!st.finished_reported) report(self, true);
    st.finished_reported = true;
    return;
  }
  // The parameters this step uses: with one shard its weights tensor is the whole vector and is
  // read in place; with several, the slices are assembled into one contiguous vector.
  tensor whole;
  const float* params = st.params.data();
  if (st.shards.size() == 1) {
    whole = std::move(st.slices[0]);
    params = whole.data();
  } else {
    for (std::size_t s = 0; s < st.shards.size(); ++s) {
      std::copy(st.slices[s].data(), st.slices[s].data() + st.slices[s].size(),
                st.params.begin() + st.ranges[s].begin);
      st.slices[s] = tensor();
    }
  }
  st.base_versions = st.slice_versions;
  st.ready = false;
  auto this_step = st.step++;
  // Overlap: the next pull travels while this step computes (push_pull: it rides on the push).
  if (st.cfg.prefetch && !st.cfg.push_pull) fetch(self, st.step);
  loss_sum ls;
  if (st.cfg.simulated_compute_s > 0) {
    simulate_compute(st.cfg.simulated_compute_s);
    std::fill(st.grad.begin(), st.grad.end(), 1e-6f);
  } else if (st.dev->is_host()) {
    ls = st.net->forward_backward(params, batch_view{rows, st.x.data(), st.y.data()},
                                  st.grad.data());
  } else {
    auto& b = *st.dev;
    b.upload(st.dev_params.data(), params, st.params.size());
    b.upload(st.dev_x.data(), st.x.data(), static_cast<std::size_t>(rows) * st.cfg.model.input_dim);
    b.upload(st.dev_y.data(), st.y.data(), static_cast<std::size_t>(rows));
    const batch_view bv{rows, st.dev_x.data(), st.dev_y.data()};
    auto step = [&] { return st.net->forward_backward(st.dev_params.data(), bv, st.dev_grad.data()); };
    // A recordable model's step is recorded once per batch size and replayed: one launch.
    recorded_work* recorded = nullptr;
    if (st.net->recordable()) {
      auto& slot = st.recorded_steps[rows];
      if (!slot) slot = b.record([&] { step(); });
      recorded = slot.get();
    }
    if (recorded) {
      recorded->replay();
      ls = b.take_loss();
    } else {
      ls = step();
    }
    b.download(st.grad.data(), st.dev_grad.data(), st.grad.size());
  }
  if (st.cfg.clip_norm > 0) clip_by_norm(span<float>(st.grad), st.cfg.clip_norm);
  // A straggler's delay stands for a slower device of its own: it holds no compute slot.
  if (st.cfg.delay_s > 0 || st.cfg.delay_jitter_s > 0) leave_slot(self);
  straggle(st);
  // In turn, the next step's weights come with the push while the turn lasts; its last push is
  // a plain one, and the worker pulls afresh when its next turn comes.
  bool push_pull = st.cfg.push_pull;
  if (st.cfg.gate) push_pull = st.holding_slot && ++st.turn_step < st.cfg.turn_steps;
  // Uncompressed, the gradient vector becomes one immutable tensor and each shard gets a view of
  // its range: no copy here, and none on a local send; the next step computes into a fresh
  // vector. Compressed, each slice is encoded from the vector, which stays the worker's.
  tensor full;
  bool plain = st.enc.kind() == "none";
  if (plain) {
    full = tensor(std::move(st.grad));
    st.sent_grads.keep(full);
    st.grad = st.sent_grads.take(full.size());  // the model overwrites every value
  }
  if (push_pull) expect_slices(st, st.step);
  for (std::size_t s = 0; s < st.shards.size(); ++s) {
    auto b = static_cast<std::size_t>(st.ranges[s].begin);
    auto n = static_cast<std::size_t>(st.ranges[s].end - st.ranges[s].begin);
    gradient g{st.cfg.id, this_step, st.base_versions[s], rows, {}};
    if (plain)
      g.values = full.slice(b, n);
    else
      st.enc.encode(g, st.grad.data(), b, n);
    st.pending.bytes_pushed += payload_bytes(g);
    st.pending.bytes_sent += payload_bytes(g);
    st.in_flight[s] += 1;
    st.max_in_flight_seen = std::max(st.max_in_flight_seen, st.in_flight[s]);
    send_push(self, s, push_pull, std::move(g), st.step);
  }
  // After the pushes: the next slot holder's pull reaches each shard behind them, so with one
  // slot no gradient is stale. Leaving also starts the next turn's count.
  if (!push_pull) leave_slot(self);
  st.pending.samples += rows;
  st.pending.loss_sum += ls.loss;
  st.pending.busy_seconds += std::chrono::duration<double>(self->clock().now() - t0).count();
  if (st.step % st.cfg.report_every == 0) report(self, false);
  if (!st.cfg.prefetch && !push_pull) pull_next(self);
}

/// Computes the next step when its weights are in and every shard has room for one more push.
void try_compute(self_ptr self) {
  auto& st = self->state;
  if (st.stopped || !st.ready) return;
  if (st.cfg.gate && !st.holding_slot) {
    // Weights pulled before the worker ran out of work and left its slot: pull again in turn.
    pull_next(self);
    return;
  }
  for (auto n : st.in_flight)
    if (n >= st.cfg.window) return;
  compute_and_push(self);
}

/// Rows [begin, end) walked `epochs` times, read from the start. The reader's seed depends only
/// on the worker and `begin`: a resumed checkpoint that replays the same entries reads the same.
work_item open_work(worker_state& st, std::int64_t begin, std::int64_t end, std::int64_t epochs) {
  work_item w;
  w.reader = st.source->open(
      begin, end, st.cfg.batch,
      st.cfg.seed + static_cast<std::uint64_t>(st.cfg.id) + static_cast<std::uint64_t>(begin),
      st.cfg.shuffle);
  w.begin = begin;
  w.end = end;
  w.epochs = epochs;
  w.epochs_left = epochs;
  return w;
}

void add_work(self_ptr self, const worker_assignment& a) {
  auto& st = self->state;
  st.finished_reported = false;
  st.skip += std::max<std::int64_t>(0, a.skip);
  if (a.reports_to) st.reports_to = a.reports_to;
  if (!st.source) st.source = st.cfg.source ? st.cfg.source : in_memory(st.cfg.train);
  for (auto& r : a.rows) st.work.push_back(open_work(st, r.begin, r.end, a.epochs));
}

/// Adds `w` to `list`, to the entry of the same rows when there is one (a range walked epoch by
/// epoch has one entry per epoch: its epochs not started are counted together).
void add_epochs(std::vector<saved_work>& list, const saved_work& w) {
  for (auto& x : list)
    if (x.begin == w.begin && x.end == w.end) {
      x.epochs += w.epochs;
      return;
    }
  list.push_back(w);
}

/// Gives up the last 1/share of the samples of the epochs not started yet (released_work; share 1
/// gives up nothing). A range part-way through an epoch finishes that epoch as it is. Either way
/// the epochs not started are rewritten one epoch per entry, every range within each epoch (epoch
/// after epoch, not range after range), with fresh readers, as a resumed replay of the
/// coordinator's list would walk them: to the end of the run every range is visited evenly, so
/// the last part of the run does not train only the rows handed over last.
released_work release(worker_state& st, std::int32_t share) {
  released_work out;
  if (st.stopped || st.skip > 0 || share < 1) return out;
  out.replaced = static_cast<std::int32_t>(st.work.size());
  std::deque<work_item> next;
  std::vector<saved_work> future_parts;
  for (auto& w : st.work) {
    auto future = w.epochs_left - (w.in_epoch ? 1 : 0);
    auto walked = w.epochs - future;
    if (walked > 0) {
      out.kept.push_back({w.begin, w.end, walked});
      if (w.in_epoch) {  // its reader finishes the epoch under way
        w.epochs = walked;
        w.epochs_left = 1;
        next.push_back(std::move(w));
      }
    }
    if (future > 0) add_epochs(future_parts, {w.begin, w.end, future});
  }
  // The last 1/share of the samples not started, taken from the end of the list: whole ranges,
  // and at most one cut (the last rows of a range, for all its epochs). Cutting every range
  // instead would halve them at each join, down to ranges of a few rows, each a short batch.
  if (share >= 2) {
    std::int64_t samples = 0;
    for (auto& f : future_parts) samples += (f.end - f.begin) * f.epochs;
    auto give = samples / share;
    while (give > 0 && !future_parts.empty()) {
      auto& f = future_parts.back();
      auto n = f.end - f.begin;
      if (n * f.epochs <= give) {
        out.given.insert(out.given.begin(), f);
        give -= n * f.epochs;
        future_parts.pop_back();
        continue;
      }
      auto rows = give / f.epochs;
      if (rows >= 1) {
        out.given.insert(out.given.begin(), {f.end - rows, f.end, f.epochs});
        f.end -= rows;
      }
      break;
    }
  }
  for (std::int64_t epoch = 0;; ++epoch) {
    bool any = false;
    for (auto& f : future_parts) {
      if (f.epochs <= epoch) continue;
      any = true;
      next.push_back(open_work(st, f.begin, f.end, 1));
      out.kept.push_back({f.begin, f.end, 1});
    }
    if (!any) break;
  }
  st.work = std::move(next);
  return out;
}

/// Sends `watchdog` to the worker every `period` for as long as the worker lives. A separate,
/// scheduled actor holding only the worker's address: a delayed message to the worker itself
/// would keep two strong references to it in the clock until the clock fires or shuts down, and
/// a detached actor that is never destroyed blocks its actor system's destructor.
caf::behavior watchdog_ticker(caf::event_based_actor* self, caf::actor_addr worker,
                              caf::timespan period) {
  // The ticker stops when the worker does, whatever the reason. The worker may be gone before
  // the ticker first runs (it failed or was stopped at once): then there is nothing to monitor,
  // and a ticker that re-armed itself regardless would keep its actor system from shutting down.
  auto w = caf::actor_cast<caf::actor>(worker);
  if (!w) {
    self->quit();
    return {};
  }
  self->monitor(w);
  self->set_down_handler([self](const caf::down_msg&) { self->quit(); });
  self->delayed_send(self, period, watchdog_atom::value);
  return {
      [=](watchdog_atom) {
        auto target = caf::actor_cast<caf::actor>(worker);
        if (!target) {
          self->quit();
          return;
        }
        self->send(target, watchdog_atom::value);
        self->delayed_send(self, period, watchdog_atom::value);
      },
  };
}

void arm_watchdog(self_ptr self) {
  self->home_system().spawn(watchdog_ticker, self->address(),
                            caf::timespan{self->state.cfg.timeout});
}

/// Fails the worker when it waits for shards and none answered since the previous tick.
void on_watchdog(self_ptr self) {
  auto& st = self->state;
  if (st.stopped) return;
  bool waiting = (st.fetch_step >= 0 && !st.ready && !st.asking_slot) ||
                 std::any_of(st.in_flight.begin(), st.in_flight.end(), [](int n) { return n > 0; });
  if (waiting && st.answers == st.answers_at_tick) {
    self->quit(make_error(errc::timeout, "worker " + std::to_string(st.cfg.id) +
                                             ": no shard answered for " +
                                             std::to_string(st.cfg.timeout.count()) + " ms"));
    return;
  }
  st.answers_at_tick = st.answers;
}

}  // namespace

caf::error compute_error(const std::string& who, std::exception_ptr& eptr) {
  try {
    std::rethrow_exception(eptr);
  } catch (const std::exception& e) {
    return make_error(errc::compute_failed, who + e.what());
  } catch (...) {
    return make_error(errc::compute_failed, who + "an exception that is not a std::exception");
  }
}

worker_impl::behavior_type worker(worker_impl::stateful_pointer<worker_state> self,
                                  worker_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.rng.seed(st.cfg.seed * 7919 + static_cast<std::uint64_t>(st.cfg.id));
  // A model, data source or device that throws ends the worker with the exception's text as
  // its exit reason (CAF's default only prints "unhandled exception" and exits with no cause).
  self->set_exception_handler([self](std::exception_ptr& eptr) -> caf::error {
    return compute_error("worker " + std::to_string(self->state.cfg.id) + ": ", eptr);
  });
  return {
      [self](watchdog_atom) { on_watchdog(self); },
      [self](assign_atom, const worker_assignment& a) {
        auto& st = self->state;
        if (st.shards.empty()) {
          // First assignment: build the replica.
          st.shards = a.shards;
          st.ranges = a.ranges;
          st.step = a.start_step;
          st.dev = make_backend(st.cfg.device);
          st.net = make_model(st.cfg.model, *st.dev, st.cfg.batch);
          auto n = st.net->num_params();
          st.params.assign(n, 0.f);
          st.grad.assign(n, 0.f);
          st.enc = gradient_encoder(st.cfg.compression, st.cfg.topk_fraction, n);
          st.x.reserve(static_cast<std::size_t>(st.cfg.batch) * st.cfg.model.input_dim);
          if (!st.dev->is_host()) {
            st.dev_params = st.dev->allocate(n);
            st.dev_grad = st.dev->allocate(n);
            st.dev_x =
                st.dev->allocate(static_cast<std::size_t>(st.cfg.batch) * st.cfg.model.input_dim);
            st.dev_y = st.dev->allocate(static_cast<std::size_t>(st.cfg.batch));
          }
          st.slices.assign(st.shards.size(), tensor());
          st.slice_versions.assign(st.shards.size(), 0);
          st.base_versions.assign(st.shards.size(), 0);
          st.in_flight.assign(st.shards.size(), 0);
          st.replicated = a.replicated;
          st.generation.assign(st.shards.size(), 0);
          st.unacked.assign(st.shards.size(), {});
          st.have_slice.assign(st.shards.size(), 0);
          arm_watchdog(self);
        }
        add_work(self, a);
        if (st.fetch_step < st.step)
          pull_next(self);
        else
          try_compute(self);
      },
      [self](stop_atom) {
        self->state.stopped = true;
        self->quit();
      },
      [self](release_atom, std::int32_t share) { return release(self->state, share); },
      [self](moved_atom, std::int32_t s, shard_actor h) { on_moved(self, s, std::move(h)); },
  };
}

}  // namespace actrain
