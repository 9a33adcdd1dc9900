// The coordinator's membership: handing out rows, spreading a lost worker's rows over the
// others, and taking in a worker that joins the running job (actors/coordinator.hpp).
#include "actors/coordinator.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace actrain {

using self_ptr = coordinator_self;

void assign(self_ptr self, std::size_t w, std::vector<shard_range_t> rows, std::int64_t epochs,
            std::int64_t skip) {
  auto& st = self->state;
  auto& track = st.workers[w];
  if (track.work.empty()) track.first_step = track.step;
  for (auto& r : rows) track.work.push_back({r.begin, r.end, epochs});
  worker_assignment a;
  a.skip = skip;
  a.worker = static_cast<std::int32_t>(w);
  a.shards = st.cfg.fronts;
  a.ranges = st.cfg.ranges;
  a.rows = rows;
  a.epochs = epochs;
  a.start_step = track.step;
  a.reports_to = caf::actor_cast<caf::actor>(self);
  a.replicated = !st.cfg.replicas.empty();
  for (auto& r : rows) track.assigned_samples += (r.end - r.begin) * epochs;
  for (auto& r : rows)  // each range once: a range walked epoch by epoch comes once per epoch
    if (std::none_of(track.rows.begin(), track.rows.end(),
                     [&](const shard_range_t& x) { return x.begin == r.begin && x.end == r.end; }))
      track.rows.push_back(r);
  track.finished = false;
  self->send(track.handle, assign_atom::value, std::move(a));
}

void reassign(self_ptr self, std::size_t lost, const caf::error& reason) {
  auto& st = self->state;
  auto& t = st.workers[lost];
  t.alive = false;
  st.last_loss_reason = "worker " + std::to_string(lost) + ": " + describe_error(reason);
  tell_fronts_leave(self, lost, true);
  st.result.workers_lost += 1;
  // Its rows as few ranges as they are: overlapping and adjacent ones merged, in row order.
  auto moved = t.rows;
  std::sort(moved.begin(), moved.end(),
            [](const shard_range_t& a, const shard_range_t& b) { return a.begin < b.begin; });
  std::vector<shard_range_t> merged;
  for (auto& r : moved) {
    if (!merged.empty() && r.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, r.end);
    else
      merged.push_back(r);
  }
  std::int64_t rows = 0;
  for (auto& r : merged) rows += r.end - r.begin;
  auto left = t.assigned_samples - t.done_samples;
  std::ostringstream line;
  line << "worker " << lost << " lost at step " << t.step << " (" << describe_error(reason) << ")";
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (st.workers[i].alive) live.push_back(i);
  auto to_do = [&st](std::size_t i) {
    return st.workers[i].assigned_samples - st.workers[i].done_samples;
  };
  std::stable_sort(live.begin(), live.end(),
                   [&](std::size_t a, std::size_t b) { return to_do(a) < to_do(b); });
  if (left > 0 && rows > 0 && !live.empty()) {
    auto epochs = (left + rows - 1) / rows;
    // The ranges one after another, cut into as many runs of about the same rows as there are
    // live workers: each gets whole ranges and at most two pieces, so losses after losses do not
    // cut the rows into ever smaller ranges (each a short batch per epoch).
    std::vector<std::vector<shard_range_t>> parts(live.size());
    auto k = static_cast<std::int64_t>(live.size());
    std::int64_t offset = 0;  // where the current range starts in the run of all of them
    for (auto& r : merged) {
      for (std::int64_t i = 0; i < k; ++i) {
        auto lo = std::max(rows * i / k, offset), hi = std::min(rows * (i + 1) / k, offset + r.end - r.begin);
        if (lo < hi)
          parts[static_cast<std::size_t>(i)].push_back({r.begin + lo - offset, r.begin + hi - offset});
      }
      offset += r.end - r.begin;
    }
    line << "; its rows (" << rows << ", " << epochs << " epoch(s) left) go to worker";
    if (live.size() > 1) line << "s";
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (parts[i].empty()) continue;
      line << (i == 0 ? " " : ", ") << live[i];
      assign(self, live[i], parts[i], epochs);
      interleave(self, live[i]);
    }
  }
  self->state.event(line.str());
  maybe_done(self);
}

namespace {

/// A joined worker's first step: the slowest live worker's (a sync barrier answers a step at or
/// before its own, an ssp barrier does not wait on a newcomer ahead of the others).
std::int64_t joining_step(const coordinator_state& st, std::size_t joiner) {
  std::int64_t step = -1;
  for (std::size_t i = 0; i < st.workers.size(); ++i) {
    auto& t = st.workers[i];
    if (i == joiner || !t.alive || t.finished) continue;
    step = step < 0 ? t.step : std::min(step, t.step);
  }
  return std::max<std::int64_t>(0, step);
}

/// Why a worker's release cannot be true of its list (`listed`: its entries when asked), or "".
std::string check_release(const coordinator_state& st, std::size_t listed, const released_work& r) {
  auto rows = train_rows(*st.cfg.data);
  if (r.replaced < 0 || static_cast<std::size_t>(r.replaced) > listed)
    return "replaces " + std::to_string(r.replaced) + " of its " + std::to_string(listed) +
           " assignments";
  for (auto* list : {&r.kept, &r.given})
    for (auto& w : *list)
      if (w.begin < 0 || w.begin >= w.end || w.end > rows || w.epochs < 1 ||
          w.epochs > st.cfg.job.epochs)
        return "names rows [" + std::to_string(w.begin) + ", " + std::to_string(w.end) + ") for " +
               std::to_string(w.epochs) + " epoch(s)";
  return {};
}

/// Each range of `work` once (a range walked epoch after epoch has one entry per epoch).
std::vector<shard_range_t> distinct_ranges(const std::vector<saved_work>& work) {
  std::vector<shard_range_t> out;
  for (auto& k : work)
    if (std::none_of(out.begin(), out.end(),
                     [&](const shard_range_t& x) { return x.begin == k.begin && x.end == k.end; }))
      out.push_back({k.begin, k.end});
  return out;
}

/// Worker `d`'s list takes the entries of its answer in place of the ones it replaced (the last
/// `replaced` of the `listed` it had when asked; entries added since stay after them).
void replace_listed(worker_track& t, std::size_t listed, const released_work& r) {
  auto first =
      t.work.begin() + static_cast<std::ptrdiff_t>(listed - static_cast<std::size_t>(r.replaced));
  first = t.work.erase(first, first + r.replaced);
  t.work.insert(first, r.kept.begin(), r.kept.end());
}

/// After an answer to a request that rewrote w's list: the next one, if rows came meanwhile.
void relisted(self_ptr self, std::size_t w) {
  auto& t = self->state.workers[w];
  t.relisting = false;
  if (t.interleave_wanted) {
    t.interleave_wanted = false;
    interleave(self, w);
  }
  maybe_revive(self);
}

/// Donor `d`'s list takes its released entries in place of the ones it replaced; the joiner
/// gets what it gave up. Returns the samples moved.
std::int64_t take_released(self_ptr self, std::size_t d, std::size_t listed, std::size_t joiner,
                           released_work& r) {
  auto& st = self->state;
  auto& t = st.workers[d];
  replace_listed(t, listed, r);
  std::int64_t moved = 0;
  for (auto& g : r.given) moved += (g.end - g.begin) * g.epochs;
  t.assigned_samples -= moved;
  // A later loss of this worker spreads what it still walks: each range once (its entries now
  // come one epoch each).
  t.rows = distinct_ranges(r.kept);
  // A joiner lost meanwhile: the donor walks its rows after all.
  auto to = st.workers[joiner].alive ? joiner : d;
  for (auto& g : r.given) assign(self, to, {shard_range_t{g.begin, g.end}}, g.epochs);
  return to == joiner ? moved : 0;
}

}  // namespace

namespace {

/// Slot j, fresh (a slot may hold a resumed checkpoint's leftovers: spread_joined_slots), on
/// `node`; slots below it that no worker joined yet are not alive.
worker_track& open_slot(coordinator_state& st, std::size_t j, const std::string& node) {
  if (st.workers.size() <= j) {
    st.workers.resize(j + 1);
    for (auto& t : st.workers)
      if (!t.handle) t.alive = false;  // a slot whose worker has not joined yet
  }
  if (st.cfg.worker_nodes.size() <= j) st.cfg.worker_nodes.resize(j + 1, "local");
  st.cfg.worker_nodes[j] = node;
  watch_node(st, node);
  return st.workers[j] = worker_track{};
}

/// A worker still replays a resumed cut or has its list rewritten: it could release nothing yet.
bool lists_settling(const coordinator_state& st) {
  return std::any_of(st.workers.begin(), st.workers.end(), [](const worker_track& t) {
    return t.alive && !t.finished && (t.replaying || t.relisting);
  });
}

/// A worker done with its rows first takes shares of at least this many batches (gather_share).
constexpr std::int64_t share_min_batches = 32;

/// Asks every other live worker whose list is settled and that still walks rows for a share of
/// the epochs it has not started (release_atom with share donors + 1), which becomes worker j's
/// rows (take_released); `done(samples moved)` runs once every donor answered, at once when
/// there is none. With `min_batches`, only a worker with at least that many batches per share
/// still to walk is asked: a share is cut from the last rows of a range for all its epochs, and
/// shares of a few rows would be short batches walked again and again.
void gather_share(self_ptr self, std::size_t j, std::function<void(std::int64_t)> done,
                  std::int64_t min_batches = 0) {
  auto& st = self->state;
  std::vector<std::size_t> donors;
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (i != j && st.workers[i].alive && !st.workers[i].finished && !st.workers[i].relisting &&
        !st.workers[i].replaying)
      donors.push_back(i);
  if (min_batches > 0) {
    auto least = static_cast<std::int64_t>(donors.size() + 1) * min_batches * st.cfg.job.batch;
    donors.erase(std::remove_if(donors.begin(), donors.end(),
                                [&](std::size_t i) {
                                  auto& t = st.workers[i];
                                  return t.assigned_samples - t.done_samples < least;
                                }),
                 donors.end());
  }
  if (donors.empty()) {
    done(0);
    return;
  }
  auto share = static_cast<std::int32_t>(donors.size() + 1);
  auto left = std::make_shared<std::size_t>(donors.size());
  auto moved = std::make_shared<std::int64_t>(0);
  auto answered = [left, moved, done = std::move(done)] {
    if (--*left == 0) done(*moved);
  };
  for (auto d : donors) {
    auto listed = st.workers[d].work.size();
    st.workers[d].relisting = true;
    self->request(st.workers[d].handle, coordinator_request_timeout, release_atom::value, share)
        .then(
            [self, d, listed, j, moved, answered](released_work& r) {
              auto& st = self->state;
              if (auto why = check_release(st, listed, r); !why.empty())
                st.event("ignored worker " + std::to_string(d) + "'s release: it " + why);
              else if (st.workers[d].alive && !st.finishing)
                *moved += take_released(self, d, listed, j, r);
              relisted(self, d);
              answered();
            },
            [self, d, answered](caf::error&) {
              relisted(self, d);
              answered();
            });
  }
}

}  // namespace

void join_worker(self_ptr self, std::int32_t index, worker_actor h, const std::string& node) {
  auto& st = self->state;
  auto j = static_cast<std::size_t>(index);
  if (!h || index < static_cast<std::int32_t>(st.cfg.workers.size()) || index >= st.cfg.max_workers ||
      (j < st.workers.size() && st.workers[j].handle))
    return;  // not a slot a worker may join (the first ones are never replaced)
  if (st.finishing || st.stopping) {
    self->send(h, stop_atom::value);
    return;
  }
  if (!st.training) {
    st.early_joins.emplace_back(index, std::move(h), node);
    return;
  }
  // A worker replaying a resumed cut or having its list rewritten (right after a loss spread the
  // lost rows) could release nothing: the joiner would get no share and idle to the end. It
  // waits in its slot until they are done (maybe_revive), then takes its share.
  if (lists_settling(st)) {
    auto& t = open_slot(st, j, node);
    t.handle = h;
    t.alive = false;
    self->monitor(h);
    st.revive.push_back(j);
    st.event("worker " + std::to_string(index) + " ('" + node +
             "') joins once the others' lists are rewritten");
    return;
  }
  take_in(self, j, std::move(h), node, true);
}

void take_in(self_ptr self, std::size_t j, worker_actor h, const std::string& node, bool monitor) {
  auto& st = self->state;
  auto index = static_cast<std::int32_t>(j);
  auto& t = open_slot(st, j, node);
  t.handle = h;
  t.step = joining_step(st, j);
  t.last_report = st.now();
  t.rate_since = t.last_report;
  if (monitor) self->monitor(h);
  gather_share(self, j, [self, j, index, node](std::int64_t moved) {
    auto& st = self->state;
    std::ostringstream line;
    line << "worker " << index << " ('" << node << "') joined at step " << st.workers[j].step
         << " and takes " << moved << " samples of the others' work";
    st.event(line.str());
    if (st.workers[j].alive && st.workers[j].work.empty()) assign(self, j, {}, 0);
    if (st.workers[j].alive && st.workers[j].work.size() > 1) interleave(self, j);
  });
}

void take_share_when_done(self_ptr self, std::size_t j) {
  auto& st = self->state;
  auto& t = st.workers[j];
  if (st.cfg.job.mode != "async" || st.cfg.job.local_aggregation || st.finishing || st.stopping ||
      !t.alive || !t.finished || t.taking_share)
    return;
  t.taking_share = true;
  gather_share(self, j, [self, j](std::int64_t moved) {
    auto& st = self->state;
    auto& t = st.workers[j];
    t.taking_share = false;
    if (moved > 0) {
      st.event("worker " + std::to_string(j) + " walked its rows first and takes " +
               std::to_string(moved) + " samples of the others' epochs not started");
      if (t.alive && t.work.size() > 1) interleave(self, j);
    }
    maybe_done(self);
  }, share_min_batches);
}

void interleave(self_ptr self, std::size_t w) {
  auto& st = self->state;
  auto& t = st.workers[w];
  if (!t.alive || !t.handle || st.finishing) return;
  if (t.relisting || t.replaying) {  // after that answer, or after its replay (on_progress)
    t.interleave_wanted = true;
    return;
  }
  t.relisting = true;
  auto listed = t.work.size();
  self->request(t.handle, coordinator_request_timeout, release_atom::value, std::int32_t{1})
      .then(
          [self, w, listed](released_work& r) {
            auto& st = self->state;
            if (auto why = check_release(st, listed, r); !why.empty() || !r.given.empty())
              st.event("ignored worker " + std::to_string(w) + "'s rewritten list: it " +
                       (why.empty() ? std::string{"gives rows away"} : why));
            else if (st.workers[w].alive && !st.finishing)
              replace_listed(st.workers[w], listed, r);
            relisted(self, w);
          },
          [self, w](caf::error&) { relisted(self, w); });
}

void maybe_revive(self_ptr self) {
  auto& st = self->state;
  if (st.revive.empty() || st.finishing || st.stopping || lists_settling(st)) return;
  auto slots = std::move(st.revive);
  st.revive.clear();
  for (auto w : slots) {
    auto h = st.workers[w].handle;
    auto node = w < st.cfg.worker_nodes.size() ? st.cfg.worker_nodes[w] : std::string{"local"};
    take_in(self, w, std::move(h), node, false);
  }
}

void spread_joined_slots(self_ptr self, const checkpoint& from) {
  auto& st = self->state;
  auto first = st.workers.size();
  if (from.workers.size() <= first) return;
  st.workers.resize(from.workers.size());
  for (auto w = first; w < st.workers.size(); ++w) st.workers[w].alive = false;
  if (st.cfg.worker_nodes.size() < st.workers.size())
    st.cfg.worker_nodes.resize(st.workers.size(), "joined before the checkpoint");
  for (auto w = first; w < st.workers.size(); ++w) {
    auto& saved = from.workers[w];
    auto& t = st.workers[w];
    if (!saved.alive || saved.work.empty()) continue;
    t.alive = true;
    t.step = saved.step;
    t.first_step = saved.start_step;
    t.work = saved.work;
    t.rows = distinct_ranges(saved.work);
    for (auto& r : saved.work) t.assigned_samples += (r.end - r.begin) * r.epochs;
    // Its batches since its first step, full ones: a range's last short batch per epoch may be
    // counted whole (a few rows not trained again), as a lost worker's last report may be late.
    t.done_samples = std::min(t.assigned_samples,
                              std::max<std::int64_t>(0, saved.step - saved.start_step) *
                                  static_cast<std::int64_t>(st.cfg.job.batch));
    reassign(self, w,
             make_error(errc::node_down, "it joined the job before checkpoint " +
                                             std::to_string(from.sequence) +
                                             " and the job resumes with [job] workers = " +
                                             std::to_string(first)));
  }
}

// -- liveness of nodes ---------------------------------------------------------------------------

void watch_node(coordinator_state& st, const std::string& node) {
  if (st.cfg.node_timeout.count() <= 0 || node.empty() || node == "local" ||
      node == "unregistered" || st.lost_nodes.count(node))
    return;
  st.node_seen[node] = st.now();
}

void watch_nodes(self_ptr self) {
  auto& st = self->state;
  if (st.cfg.node_timeout.count() <= 0) return;
  for (auto& n : st.cfg.watched_nodes) watch_node(st, n);
  self->delayed_send(self, st.cfg.node_check, heartbeat_atom::value);
}

void heard_from(self_ptr self, const std::string& node) {
  auto& st = self->state;
  if (auto it = st.node_seen.find(node); it != st.node_seen.end()) it->second = st.now();
}

namespace {

/// Node `name` sent no heartbeat for `silent`: every worker, shard and replica on it is taken as
/// down (as if its connection had dropped) and told to exit, should it ever hear again.
void node_lost(self_ptr self, const std::string& name, caf::timespan silent) {
  auto& st = self->state;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(silent).count();
  auto why = "node '" + name + "' sent no heartbeat for " + std::to_string(ms) +
             " ms ([cluster] node-timeout " + std::to_string(st.cfg.node_timeout.count()) + " ms)";
  st.lost_nodes.insert(name);
  std::vector<caf::actor> gone;
  auto on_it = [&](const std::vector<std::string>& nodes, std::size_t i) {
    return i < nodes.size() && nodes[i] == name;
  };
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (st.workers[i].alive && st.workers[i].handle && on_it(st.cfg.worker_nodes, i))
      gone.push_back(caf::actor_cast<caf::actor>(st.workers[i].handle));
  for (std::size_t s = 0; s < st.cfg.shards.size(); ++s)
    if (on_it(st.cfg.shard_nodes, s)) gone.push_back(caf::actor_cast<caf::actor>(st.cfg.shards[s]));
  for (std::size_t s = 0; s < st.cfg.replicas.size(); ++s)
    if (st.cfg.replicas[s] && on_it(st.cfg.replica_nodes, s))
      gone.push_back(caf::actor_cast<caf::actor>(st.cfg.replicas[s]));
  st.event(why + ": its " + std::to_string(gone.size()) + " actor(s) are taken as lost");
  auto reason = make_error(errc::node_down, why);
  for (auto& a : gone) {
    member_down(self, a.address(), reason);
    self->send_exit(a, reason);
  }
}

}  // namespace

void check_nodes(self_ptr self) {
  auto& st = self->state;
  if (st.finishing) return;
  auto now = st.now();
  std::vector<std::pair<std::string, caf::timespan>> silent;
  for (auto& [node, seen] : st.node_seen)
    if (now - seen >= st.cfg.node_timeout) silent.emplace_back(node, now - seen);
  for (auto& [node, for_how_long] : silent) {
    st.node_seen.erase(node);
    if (!st.finishing) node_lost(self, node, for_how_long);
  }
  if (!st.finishing) self->delayed_send(self, st.cfg.node_check, heartbeat_atom::value);
}

}  // namespace actrain
