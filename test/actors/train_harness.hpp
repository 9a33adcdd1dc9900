#pragma once
// Real workers, shards and fronts on the deterministic scheduler, without a coordinator: what the
// barrier and aggregator training tests compare against the reference trainer.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include "actor_fixture.hpp"
#include "actors/aggregator.hpp"
#include "actors/barrier.hpp"
#include "actors/coordinator.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"

namespace actrain::testing {

/// An MLP job on the first `rows` Fashion-MNIST training rows.
inline job_spec fashion_job(std::int64_t rows, int batch) {
  job_spec job;
  job.model.kind = "mlp";
  job.model.hidden = {32};
  job.data.kind = "fashion_mnist";
  job.data.train_subset = rows;
  job.data.test_subset = 500;
  job.batch = batch;
  job.epochs = 1;
  job.eval_every = 100;
  job.optim.kind = "sgd";
  job.optim.lr = 0.1f;
  return job;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

/// The training rows laid out so that worker w's step t (rows walked in order, contiguous row
/// ranges per worker) is the w-th slice of the reference trainer's shuffled batch t of n * batch.
inline std::shared_ptr<dataset> lay_out(const job_spec& job, const dataset& train, int n, int batch,
                                        int steps) {
  const auto rows = train.rows;
  dataset idx;
  idx.rows = rows;
  idx.features = 1;
  for (std::int64_t i = 0; i < rows; ++i) {
    idx.x.push_back(static_cast<float>(i));
    idx.y.push_back(0.f);
  }
  batch_iterator it(idx, n * batch, job.seed);
  std::vector<float> xb, yb, order;
  while (it.next(xb, yb) > 0) order.insert(order.end(), xb.begin(), xb.end());
  auto laid = std::make_shared<dataset>();
  laid->rows = rows;
  laid->features = train.features;
  laid->num_classes = train.num_classes;
  auto f = static_cast<std::size_t>(laid->features);
  laid->x.resize(static_cast<std::size_t>(rows) * f);
  laid->y.resize(static_cast<std::size_t>(rows));
  for (int w = 0; w < n; ++w)
    for (int t = 0; t < steps; ++t)
      for (int j = 0; j < batch; ++j) {
        auto dst = static_cast<std::size_t>(w * steps * batch + t * batch + j);
        auto src = static_cast<std::size_t>(
            order[static_cast<std::size_t>(t * n * batch + w * batch + j)]);
        std::copy(train.x.begin() + static_cast<std::ptrdiff_t>(src * f),
                  train.x.begin() + static_cast<std::ptrdiff_t>((src + 1) * f),
                  laid->x.begin() + static_cast<std::ptrdiff_t>(dst * f));
        laid->y[dst] = train.y[src];
      }
  return laid;
}

/// Runs `job` on the deterministic scheduler without a coordinator: shards, fronts (barriers for
/// sync/ssp, then aggregators with local aggregation), and workers walking their rows; returns the
/// parameters assembled from the shards.
inline std::vector<float> run_deterministic(const job_spec& job,
                                            std::shared_ptr<const dataset> train, bool shuffle,
                                            bool prefetch) {
  // With job.local_aggregation an aggregator stands in front of each front, as in run_job.
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  std::vector<shard_actor> shards;
  for (auto& sc : make_shard_configs(job)) shards.push_back(ds.sys->spawn(shard, std::move(sc)));
  const auto topo = plan_topology(job);
  auto fronts = make_aggregators(*ds.sys, job, topo, make_fronts(*ds.sys, job, topo, shards));
  auto ranges = job_ranges(job);
  std::vector<worker_actor> workers;
  for (int w = 0; w < job.workers; ++w) {
    auto wc = make_worker_config(job, topo, train, w);
    wc.shuffle = shuffle;
    wc.prefetch = prefetch;
    workers.push_back(ds.sys->spawn(worker, wc));
  }
  ds.run();
  for (int w = 0; w < job.workers; ++w) {
    worker_assignment a;
    a.worker = w;
    a.shards = fronts;
    a.ranges = ranges;
    auto r = shard_range(train->rows, job.workers, w);
    a.rows = {shard_range_t{r.first, r.second}};
    a.epochs = job.epochs;
    a.reports_to = caf::actor_cast<caf::actor>(self);
    self->send(workers[static_cast<std::size_t>(w)], assign_atom::value, a);
  }
  ds.run();
  std::vector<float> params(static_cast<std::size_t>(ranges.back().end));
  for (std::size_t s = 0; s < shards.size(); ++s) {
    self->send(shards[s], pull_atom::value, pull_request{-1, -1});
    ds.run();
    self->receive(
        [&](weights& w) {
          std::copy(w.values.data(), w.values.data() + w.values.size(),
                    params.begin() + ranges[s].begin);
        },
        [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  }
  for (auto& w : workers) self->send_exit(w, caf::exit_reason::user_shutdown);
  for (auto& f : fronts) self->send_exit(f, caf::exit_reason::user_shutdown);
  for (auto& s : shards) self->send_exit(s, caf::exit_reason::user_shutdown);
  ds.run();
  return params;
}

}  // namespace actrain::testing
