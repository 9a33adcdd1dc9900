#include <actrain/sparse_engine.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <sys/resource.h>

#include <actrain/data.hpp>
#include <actrain/engine.hpp>
#include "actors/barrier.hpp"
#include "actors/shard.hpp"
#include "actors/sparse_barrier.hpp"
#include "actors/sparse_shard.hpp"
#include "actors/sparse_worker.hpp"

namespace actrain {

void validate(const sparse_job& j) {
  validate(j.model);
  validate(j.table);
  validate(j.optim);
  if (j.mode != "async" && j.mode != "sync")
    throw std::invalid_argument("job.mode: a sparse job is \"async\" or \"sync\", got \"" + j.mode +
                                "\"");
  if (j.workers < 1 || j.workers > 4096)
    throw std::invalid_argument("job.workers: must be 1..4096");
  if (j.shards < 1 || j.shards > 4096) throw std::invalid_argument("job.shards: must be 1..4096");
  if (j.batch < 1) throw std::invalid_argument("job.batch: must be >= 1");
  if (j.epochs < 1) throw std::invalid_argument("job.epochs: must be >= 1");
  if (j.window < 1) throw std::invalid_argument("job.window: must be >= 1");
  if (j.table.dim != sparse_model_dim(j.model))
    throw std::invalid_argument("table.dim: " + std::to_string(j.table.dim) + ", but " +
                                describe(j.model) + " needs " +
                                std::to_string(sparse_model_dim(j.model)));
  if (j.compression != "none" && j.compression != "fp16" && j.compression != "topk")
    throw std::invalid_argument("job.compression: none, fp16 or topk, got \"" + j.compression +
                                "\"");
  if (j.compression == "topk" && !(j.topk_fraction > 0 && j.topk_fraction <= 1))
    throw std::invalid_argument("job.topk-fraction: must be in (0, 1]");
  if (j.whole_table && j.table.rows > (std::uint64_t{1} << 24))
    throw std::invalid_argument("job.whole-table: the table has " + std::to_string(j.table.rows) +
                                " rows; pulling it whole each step is for tables of <= 2^24");
}

namespace {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

/// The dense parameters' rule: Adagrad for the adaptive row rules, SGD for SGD.
optim_spec dense_rule(const row_optim_spec& o) {
  optim_spec d;
  d.kind = o.kind == "sgd" ? "sgd" : "adagrad";
  d.lr = o.lr;
  return d;
}

void check_data(const sparse_job& j, const sparse_dataset& d, const char* which) {
  for (auto id : d.ids)
    if (id >= j.table.rows)
      throw std::invalid_argument(std::string(which) + " data: id " + std::to_string(id) +
                                  " >= table.rows " + std::to_string(j.table.rows));
  if (d.y.size() != static_cast<std::size_t>(d.rows) ||
      d.offsets.size() != static_cast<std::size_t>(d.rows) + 1)
    throw std::invalid_argument(std::string(which) + " data: offsets or labels do not match rows");
}

observe::table_status table_status_of(const table_stats& t) {
  observe::table_status x;
  x.name = "table-" + std::to_string(t.shard);
  x.node = "local";
  x.rows_held = t.rows_held;
  x.evicted = t.evicted;
  x.memory_bytes = t.memory_bytes;
  x.pulls = t.pulls;
  x.pushes = t.pushes;
  x.rows_pulled = t.rows_pulled;
  x.rows_pushed = t.rows_pushed;
  x.rejected = t.rejected;
  x.bytes_in = t.bytes_in;
  x.bytes_out = t.bytes_out;
  x.mean_staleness = t.mean_staleness;
  x.hot_ids = t.hot_ids;
  x.hot_counts = t.hot_counts;
  return x;
}

/// Every table shard's stats (a failed request leaves its entry out).
std::vector<table_stats> gather_stats(caf::scoped_actor& self,
                                      const std::vector<sparse_shard_actor>& tables) {
  std::vector<table_stats> out;
  for (auto& t : tables)
    self->request(t, std::chrono::seconds(10), stats_atom::value)
        .receive([&](table_stats& s) { out.push_back(std::move(s)); }, [](caf::error&) {});
  return out;
}

}  // namespace

std::vector<float> predict_sparse(caf::actor_system& sys, const sparse_job& job,
                                  const std::vector<sparse_shard_actor>& tables,
                                  const shard_actor& dense, const sparse_dataset& test) {
  caf::scoped_actor self{sys};
  auto fail = [](const caf::error& err) {
    throw std::runtime_error("evaluation: " + describe_error(err));
  };
  std::vector<float> dense_params;
  self->request(dense, std::chrono::seconds(60), pull_atom::value, pull_request{-1, -1})
      .receive(
          [&](weights& w) {
            dense_params.assign(w.values.data(), w.values.data() + w.values.size());
          },
          fail);
  // Every distinct test id, gathered from its shard in requests of at most 1M rows.
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of;
  std::vector<std::uint64_t> unique;
  std::vector<std::uint32_t> slots(test.ids.size());
  for (std::size_t e = 0; e < test.ids.size(); ++e) {
    auto [it, fresh] = slot_of.try_emplace(test.ids[e], static_cast<std::uint32_t>(unique.size()));
    if (fresh) unique.push_back(test.ids[e]);
    slots[e] = it->second;
  }
  auto dim = static_cast<std::size_t>(job.table.dim);
  std::vector<float> rows(unique.size() * dim);
  std::vector<std::vector<std::uint32_t>> by_shard(tables.size());
  for (std::uint32_t s = 0; s < unique.size(); ++s)
    by_shard[table_shard_of(job.table, static_cast<int>(tables.size()), unique[s])].push_back(s);
  constexpr std::size_t per_request = 1 << 20;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    for (std::size_t b = 0; b < by_shard[t].size(); b += per_request) {
      auto e = std::min(by_shard[t].size(), b + per_request);
      row_request r{-1, -1, {}};
      for (auto i = b; i < e; ++i) r.ids.push_back(unique[by_shard[t][i]]);
      self->request(tables[t], std::chrono::seconds(60), pull_atom::value, std::move(r))
          .receive(
              [&](row_block& rb) {
                for (auto i = b; i < e; ++i)
                  std::copy_n(&rb.values[(i - b) * dim], dim, &rows[by_shard[t][i] * dim]);
              },
              fail);
    }
  }
  auto net = make_sparse_model(job.model);
  std::vector<float> logits(static_cast<std::size_t>(test.rows));
  sparse_batch_view v{static_cast<int>(test.rows),
                      test.offsets.data(),
                      slots.data(),
                      test.values.empty() ? nullptr : test.values.data(),
                      test.y.data(),
                      unique.size()};
  net->predict(dense_params.data(), rows.data(), v, logits.data());
  return logits;
}

void prepare_sparse_job(sparse_job& job, std::int64_t train_rows, std::uint64_t id_space) {
  if (job.table.rows == 0) job.table.rows = id_space;
  job.table.dim = sparse_model_dim(job.model);
  validate(job);
  if (train_rows < job.workers)
    throw std::invalid_argument("job.workers: " + std::to_string(job.workers) + " workers for " +
                                std::to_string(train_rows) + " training rows");
}

shard_actor spawn_dense_shard(caf::actor_system& sys, const sparse_job& job) {
  auto net = make_sparse_model(job.model);
  shard_config dc;
  dc.index = 0;
  dc.init.resize(net->num_dense());
  net->init_dense(dc.init.data(), job.seed);
  dc.optim = dense_rule(job.optim);
  return spawn_shard(sys, std::move(dc));
}

sparse_shard_actor spawn_sparse_shard(caf::actor_system& sys, const sparse_job& job,
                                      std::int32_t index) {
  sparse_shard_config c;
  c.index = index;
  c.shards = job.shards;
  c.table = job.table;
  c.optim = job.optim;
  return sys.spawn(sparse_shard, std::move(c));
}

sparse_worker_actor spawn_sparse_worker(caf::actor_system& sys, const sparse_job& job,
                                        std::shared_ptr<const sparse_dataset> train,
                                        std::int32_t id, bool detached) {
  sparse_worker_config wc;
  wc.id = id;
  wc.model = job.model;
  wc.table = job.table;
  wc.train = std::move(train);
  wc.batch = job.batch;
  wc.seed = job.seed;
  wc.window = job.window;
  wc.whole_table = job.whole_table;
  wc.compression = job.compression;
  wc.topk_fraction = job.topk_fraction;
  if (id == job.fail_worker) wc.fail_after_steps = job.fail_after_steps;
  if (!detached) return sys.spawn(sparse_worker, std::move(wc));
  return sys.spawn<caf::detached>(sparse_worker, std::move(wc));
}

sparse_result run_sparse_job(caf::actor_system& sys, sparse_job job,
                             std::shared_ptr<const sparse_dataset> train,
                             const sparse_dataset& test) {
  prepare_sparse_job(job, train->rows, std::max(train->id_space, test.id_space));
  check_data(job, *train, "training");
  check_data(job, test, "test");
  auto dense = spawn_dense_shard(sys, job);
  std::vector<sparse_shard_actor> tables;
  for (int s = 0; s < job.shards; ++s) tables.push_back(spawn_sparse_shard(sys, job, s));
  std::vector<sparse_worker_actor> workers;
  for (int w = 0; w < job.workers; ++w) workers.push_back(spawn_sparse_worker(sys, job, train, w));
  return drive_sparse_job(sys, job, train->rows, dense, tables, workers, test);
}

sparse_result drive_sparse_job(caf::actor_system& sys, const sparse_job& job,
                               std::int64_t train_rows, const shard_actor& dense,
                               const std::vector<sparse_shard_actor>& tables,
                               const std::vector<sparse_worker_actor>& workers,
                               const sparse_dataset& test) {
  sparse_result out;
  caf::scoped_actor self{sys};
  shard_actor dense_front = dense;
  std::vector<sparse_shard_actor> fronts = tables;
  bool sync = job.mode == "sync";
  if (sync) {
    barrier_config bc;
    bc.shard = dense;
    bc.mode = "sync";
    bc.workers = job.workers;
    bc.slice = make_sparse_model(job.model)->num_dense();
    dense_front = sys.spawn(barrier, std::move(bc));
    for (auto& t : fronts)
      t = sys.spawn(sparse_barrier, sparse_barrier_config{t, job.workers, job.table.dim});
  }
  for (auto& w : workers) self->monitor(w);
  for (auto& t : tables) self->monitor(t);
  self->monitor(dense);
  auto start = std::chrono::steady_clock::now();
  auto cpu_start = process_cpu_seconds();
  for (int w = 0; w < job.workers; ++w) {
    auto r = shard_range(train_rows, job.workers, w);
    sparse_assignment a;
    a.worker = w;
    a.dense = dense_front;
    a.tables = fronts;
    a.rows = {shard_range_t{r.first, r.second}};
    a.epochs = job.epochs;
    a.reports_to = caf::actor_cast<caf::actor>(self);
    self->send(workers[static_cast<std::size_t>(w)], assign_atom::value, std::move(a));
  }
  double loss_sum = 0;
  std::string failure;
  struct worker_progress {
    bool alive = true;
    bool done = false;
    std::int64_t step = 0;
    std::int64_t samples = 0;  ///< trained from its first assignment
    shard_range_t rows;
  };
  std::vector<worker_progress> progress(static_cast<std::size_t>(job.workers));
  for (int w = 0; w < job.workers; ++w) {
    auto r = shard_range(train_rows, job.workers, w);
    progress[static_cast<std::size_t>(w)].rows = {r.first, r.second};
  }
  auto running = [&] {
    return std::any_of(progress.begin(), progress.end(),
                       [](const worker_progress& p) { return p.alive && !p.done; });
  };
  auto leave = [&](std::int32_t w, bool lost) {
    if (!sync) return;
    caf::anon_send(dense_front, leave_atom::value, w, lost);
    for (auto& f : fronts) caf::anon_send(f, leave_atom::value, w);
  };
  /// A lost worker's rows go to a survivor, for the epochs it had not completed (the rows of its
  /// epoch in progress are trained again from the start of that epoch).
  auto reassign = [&](std::size_t lost, const std::string& why) {
    auto& p = progress[lost];
    p.alive = false;
    out.workers_lost += 1;
    leave(static_cast<std::int32_t>(lost), true);
    auto range_rows = std::max<std::int64_t>(1, p.rows.end - p.rows.begin);
    auto epochs_left = job.epochs - p.samples / range_rows;
    // Prefer a survivor still training: a sync barrier no longer waits for one that left.
    std::size_t to = progress.size();
    for (std::size_t w = 0; w < progress.size() && to == progress.size(); ++w)
      if (progress[w].alive && !progress[w].done) to = w;
    for (std::size_t w = 0; w < progress.size() && to == progress.size(); ++w)
      if (progress[w].alive) to = w;
    if (to == progress.size()) {
      failure = "every worker was lost; the last: " + why;
      return;
    }
    if (job.on_event)
      job.on_event(why + "; its rows [" + std::to_string(p.rows.begin) + ", " +
                   std::to_string(p.rows.end) + ") go to worker " + std::to_string(to) + " for " +
                   std::to_string(std::max<std::int64_t>(0, epochs_left)) + " epoch(s)");
    if (epochs_left <= 0) return;
    sparse_assignment a;
    a.worker = static_cast<std::int32_t>(to);
    a.dense = dense_front;
    a.tables = fronts;
    a.rows = {p.rows};
    a.epochs = epochs_left;
    a.reports_to = caf::actor_cast<caf::actor>(self);
    progress[to].done = false;
    self->send(workers[to], assign_atom::value, std::move(a));
  };
  int reporting = 0;  // workers that reported samples
  auto last_report = std::chrono::steady_clock::now();
  auto next_tick = last_report + job.tick;
  auto wait = job.hub ? std::min<caf::timespan>(job.tick, job.stall_timeout) : job.stall_timeout;
  std::int64_t tick_samples = 0;
  double tick_loss = 0;
  auto tick_start = std::chrono::steady_clock::now();
  double recent_loss = 0;
  /// The run's state into job.hub: counts from the reports, the tables' stats asked for now.
  auto publish = [&](bool finished) {
    auto now = std::chrono::steady_clock::now();
    auto elapsed = std::chrono::duration<double>(now - start).count();
    auto span = std::chrono::duration<double>(now - tick_start).count();
    if (tick_samples > 0) recent_loss = tick_loss / static_cast<double>(tick_samples);
    double rate = span > 0 ? tick_samples / span : 0;
    tick_samples = 0;
    tick_loss = 0;
    tick_start = now;
    auto stats = gather_stats(self, tables);
    std::int64_t steps = 0;
    for (auto& p : progress) steps += p.step;
    job.hub->update([&](observe::run_snapshot& snap) {
      snap.job = describe(job.model);
      snap.mode = job.mode;
      snap.epochs = job.epochs;
      snap.samples = out.samples;
      snap.samples_per_epoch = train_rows;
      snap.epoch = train_rows > 0 ? out.samples / train_rows : 0;
      snap.step = steps;
      snap.elapsed_s = elapsed;
      snap.samples_per_s = rate;
      snap.train_loss = recent_loss;
      snap.finished = finished;
      auto total = static_cast<double>(train_rows * job.epochs);
      snap.eta_s = out.samples > 0 ? elapsed * (total - static_cast<double>(out.samples)) /
                                         static_cast<double>(out.samples)
                                   : 0;
      if (snap.eta_s < 0) snap.eta_s = 0;
      snap.workers.clear();
      for (std::size_t w = 0; w < progress.size(); ++w) {
        observe::worker_status ws;
        ws.name = "worker-" + std::to_string(w);
        ws.node = "local";
        ws.step = progress[w].step;
        ws.samples = progress[w].samples;
        ws.state = !progress[w].alive ? "lost" : progress[w].done ? "finished" : "computing";
        snap.workers.push_back(ws);
      }
      snap.tables.clear();
      std::int64_t rows_pulled = 0;
      for (auto& t : stats) {
        snap.tables.push_back(table_status_of(t));
        rows_pulled += t.rows_pulled;
      }
      if (steps > 0) {
        snap.rows_per_step = static_cast<double>(rows_pulled) / static_cast<double>(steps);
        snap.bytes_per_push = static_cast<double>(out.bytes_pushed) / static_cast<double>(steps);
      }
    });
    job.hub->add_curve_point({elapsed, out.samples, recent_loss, std::nan(""), std::nan(""), rate});
  };
  while (running() && failure.empty()) {
    self->receive(
        [&](progress_atom, const progress_report& r) {
          if (r.worker < 0 || r.worker >= job.workers) return;
          auto& p = progress[static_cast<std::size_t>(r.worker)];
          if (!p.alive) return;
          out.samples += r.samples;
          loss_sum += r.loss_sum;
          out.bytes_sent += r.bytes_sent;
          out.bytes_received += r.bytes_received;
          out.bytes_pushed += r.bytes_pushed;
          if (p.samples == 0 && r.samples > 0 && ++reporting == job.workers && job.on_event)
            job.on_event("training: every worker has reported progress");
          p.step = r.step;
          p.samples += r.samples;
          tick_samples += r.samples;
          tick_loss += r.loss_sum;
          last_report = std::chrono::steady_clock::now();
          if (r.finished && !p.done) {
            p.done = true;
            leave(r.worker, false);
          }
        },
        [&](caf::down_msg& d) {
          auto why = d.reason ? describe_error(d.reason) : std::string("it stopped");
          for (std::size_t w = 0; w < workers.size(); ++w)
            if (d.source == workers[w].address()) {
              if (progress[w].alive) reassign(w, "worker " + std::to_string(w) + " lost: " + why);
              return;
            }
          failure = "a shard went down: " + why;
        },
        caf::after(wait) >> [] {});
    auto now = std::chrono::steady_clock::now();
    if (now - last_report > job.stall_timeout) {
      failure = "no worker reported for " + std::to_string(job.stall_timeout.count()) + " ms (";
      for (std::size_t w = 0; w < progress.size(); ++w)
        failure += (w ? ", worker " : "worker ") + std::to_string(w) + ": step " +
                   std::to_string(progress[w].step) +
                   (!progress[w].alive ? " lost"
                    : progress[w].done ? " finished"
                                       : " training");
      failure += ")";
    }
    if (job.hub && now >= next_tick) {
      next_tick = now + job.tick;
      publish(false);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.cpu_seconds = process_cpu_seconds() - cpu_start;
  auto stop_all = [&] {
    for (auto& w : workers) self->send_exit(w, caf::exit_reason::user_shutdown);
    for (auto& f : fronts) self->send_exit(f, caf::exit_reason::user_shutdown);
    if (sync) self->send_exit(dense_front, caf::exit_reason::user_shutdown);
    for (auto& t : tables) self->send_exit(t, caf::exit_reason::user_shutdown);
    self->send_exit(dense, caf::exit_reason::user_shutdown);
  };
  if (!failure.empty()) {
    out.error = failure;
    stop_all();
    return out;
  }
  out.samples_per_s = out.seconds > 0 ? out.samples / out.seconds : 0;
  out.train_loss = out.samples > 0 ? loss_sum / out.samples : 0;
  std::int64_t rows_pulled = 0;
  for (auto& t : tables) {
    self->request(t, std::chrono::seconds(60), stats_atom::value)
        .receive([&](table_stats& s) { out.tables.push_back(std::move(s)); },
                 [&](caf::error& err) { failure = describe_error(err); });
  }
  for (auto& s : out.tables) {
    rows_pulled += s.rows_pulled;
    out.rows_held += s.rows_held;
    out.memory_bytes += s.memory_bytes;
  }
  for (auto& p : progress) out.steps += p.step;
  if (out.steps > 0) {
    out.rows_per_step = static_cast<double>(rows_pulled) / static_cast<double>(out.steps);
    auto steps = static_cast<double>(out.steps);
    out.bytes_per_step = static_cast<double>(out.bytes_sent + out.bytes_received) / steps;
    out.bytes_sent_per_step = static_cast<double>(out.bytes_sent) / steps;
    out.bytes_pushed_per_step = static_cast<double>(out.bytes_pushed) / steps;
  }
  if (test.rows > 0 && failure.empty()) {
    try {
      auto logits = predict_sparse(sys, job, tables, dense, test);
      out.test_auc = roc_auc(logits, test.y);
      out.test_log_loss = log_loss_from_logits(logits, test.y);
      std::int64_t right = 0;
      for (std::size_t r = 0; r < logits.size(); ++r)
        right += (logits[r] > 0) == (test.y[r] > 0.5f);
      out.test_accuracy = static_cast<double>(right) / static_cast<double>(logits.size());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (job.hub && failure.empty()) {
    publish(true);
    job.hub->update([&](observe::run_snapshot& snap) {
      snap.test_loss = out.test_log_loss;
      snap.test_accuracy = out.test_accuracy;
      snap.samples_per_s = out.samples_per_s;
      snap.train_loss = out.train_loss;
    });
  }
  stop_all();
  out.ok = failure.empty();
  out.error = failure;
  return out;
}

}  // namespace actrain
