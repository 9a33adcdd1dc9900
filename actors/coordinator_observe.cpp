// The coordinator's view of a run, published for observers (HTTP endpoint, console, metrics
// files). Plain functions over coordinator_state: no messages are sent here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "actors/coordinator.hpp"

namespace actrain {

namespace {

double since(const coordinator_state& st, caf::actor_clock::time_point t) {
  return std::chrono::duration<double>(st.now() - t).count();
}

std::string worker_name(std::size_t i) {
  return "worker-" + std::to_string(i);
}

/// Whether worker i waits at a barrier: some front holds a step open and i's slice for it has
/// arrived (i is not among those it waits for). In sync mode one straggler silences every
/// worker, so a blocked worker is not "silent": the barrier's line names who it waits for.
/// Returns the front's index, or -1.
int blocked_at(const coordinator_state& st, std::size_t i) {
  for (std::size_t f = 0; f < st.front_stats.size(); ++f) {
    auto& fs = st.front_stats[f];
    if (fs.waiting_step < 0) continue;
    auto& wf = fs.waiting_for;
    if (std::find(wf.begin(), wf.end(), static_cast<std::int32_t>(i)) == wf.end())
      return static_cast<int>(f);
  }
  return -1;
}

}  // namespace

void note_blocked_workers(coordinator_state& st) {
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (blocked_at(st, i) >= 0) st.workers[i].last_blocked = st.now();
}

std::vector<std::string> find_stalls(const coordinator_state& st, double threshold_s) {
  std::vector<std::string> out;
  if (st.finishing) return out;
  for (std::size_t s = 0; s < st.front_stats.size(); ++s) {
    auto& fs = st.front_stats[s];
    if (fs.waiting_step < 0 || fs.waiting_s < threshold_s) continue;
    std::ostringstream line;
    line.precision(2);
    line << std::fixed << st.cfg.job.mode << " step " << fs.waiting_step << " on shard-" << s
         << " waits " << fs.waiting_s << " s for";
    for (auto w : fs.waiting_for) line << " " << worker_name(static_cast<std::size_t>(w));
    out.push_back(line.str());
  }
  for (std::size_t i = 0; i < st.workers.size(); ++i) {
    auto& w = st.workers[i];
    if (!w.alive || w.finished || blocked_at(st, i) >= 0) continue;
    auto quiet = since(st, std::max(w.last_report, w.last_blocked));
    if (quiet < threshold_s) continue;
    std::ostringstream line;
    line.precision(2);
    line << std::fixed << worker_name(i) << " has reported no progress for " << quiet
         << " s (last step " << w.step << ")";
    out.push_back(line.str());
  }
  return out;
}

void publish_snapshot(const coordinator_state& st, observe::metrics_hub& hub, bool finished) {
  auto now = since(st, st.start);
  auto stalls = find_stalls(st, st.cfg.hooks.stall_after_s);
  hub.update([&](observe::run_snapshot& s) {
    auto& job = st.cfg.job;
    auto rows = std::max<std::int64_t>(train_rows(*st.cfg.data), 1);
    s.job = job.name;
    s.mode = job.mode;
    s.epoch = std::min<std::int64_t>(st.epoch, std::max(job.epochs - 1, 0));  // 0-based, current
    s.epochs = job.epochs;
    s.samples = st.samples;
    s.samples_per_epoch = rows;
    s.elapsed_s = now;
    s.samples_per_s = now > 0 ? st.samples / now : 0;
    s.eta_s = s.samples_per_s > 0
                  ? std::max<double>(0, st.target_samples - st.samples) / s.samples_per_s
                  : 0;
    s.finished = finished;
    if (st.loss_rows > 0)
      s.train_loss = st.loss_sum / st.loss_rows;
    else if (!st.result.history.empty())
      s.train_loss = st.result.history.back().train_loss;
    if (!st.result.history.empty()) {
      s.test_loss = st.result.history.back().test_loss;
      s.test_accuracy = st.result.history.back().test_accuracy;
      s.classes = st.result.history.back().classes;
    } else {  // not measured yet: null in /status, NaN in /metrics, "-" on the console
      s.test_loss = std::numeric_limits<double>::quiet_NaN();
      s.test_accuracy = std::numeric_limits<double>::quiet_NaN();
    }
    s.step = 0;
    s.workers.clear();
    for (std::size_t i = 0; i < st.workers.size(); ++i) {
      auto& w = st.workers[i];
      observe::worker_status ws;
      ws.name = worker_name(i);
      ws.node = i < st.cfg.worker_nodes.size() ? st.cfg.worker_nodes[i] : "local";
      ws.step = w.step;
      ws.samples = w.done_samples;
      ws.samples_per_s = w.rate;
      ws.busy = w.busy;
      ws.loss = w.last_loss;
      ws.last_staleness = w.last_staleness;
      ws.seconds_since_report = since(st, w.last_report);
      ws.state = !w.alive ? "lost" : w.finished ? "finished" : "computing";
      if (w.alive && !w.finished && ws.seconds_since_report >= st.cfg.hooks.stall_after_s) {
        auto f = blocked_at(st, i);
        ws.state = f >= 0 ? "waiting for shard-" + std::to_string(f) : "silent";
      }
      for (std::size_t f = 0; f < st.front_stats.size(); ++f) {
        auto& wf = st.front_stats[f].waiting_for;
        if (std::find(wf.begin(), wf.end(), static_cast<std::int32_t>(i)) != wf.end() &&
            st.front_stats[f].waiting_s >= st.cfg.hooks.stall_after_s)
          ws.state = "stalling shard-" + std::to_string(f);
      }
      s.step = std::max(s.step, w.step);
      s.workers.push_back(std::move(ws));
    }
    s.shards.clear();
    s.staleness_histogram.clear();
    s.dropped_late = 0;
    for (std::size_t f = 0; f < st.front_stats.size(); ++f) {
      auto& fs = st.front_stats[f];
      observe::shard_status ss;
      ss.name = "shard-" + std::to_string(f);
      ss.node = f < st.cfg.shard_nodes.size() ? st.cfg.shard_nodes[f] : "local";
      ss.version = fs.version;
      ss.pushes = fs.pushes;
      ss.pulls = fs.pulls;
      ss.rejected = fs.rejected;
      ss.dropped_stale = fs.dropped_stale;
      ss.dropped_late = fs.dropped_late;
      ss.mailbox_depth = fs.mailbox;
      ss.mean_staleness = fs.mean_staleness;
      ss.momentum = fs.momentum;
      ss.uncompensated = fs.uncompensated;
      s.dropped_late += fs.dropped_late;
      for (std::size_t k = 0; k < fs.staleness_histogram.size(); ++k)
        if (fs.staleness_histogram[k] > 0)
          s.staleness_histogram[static_cast<std::int64_t>(k)] += fs.staleness_histogram[k];
      s.shards.push_back(std::move(ss));
    }
    s.stalls = stalls;
  });
}

}  // namespace actrain
