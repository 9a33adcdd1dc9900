// The simulated-node harness's test fixture: 1 coordinator, 2 ps and 3 worker nodes, each its own
// actor system and middleman on 127.0.0.1 (sim_cluster_training_test, sim_cluster_ps_test,
// sim_cluster_worker_test).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <thread>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <gtest/gtest.h>

#include <caf/io/basp/header.hpp>

#include <actrain/system.hpp>
#include <actrain/testing/sim_cluster.hpp>
#include "cluster_jobs.hpp"
#include "data/readers.hpp"

namespace actrain {
namespace sim_test {

using namespace std::chrono_literals;

struct sim_cluster_test : ::testing::Test {
  sim_cluster_config make(job_spec job) { return test::sim_config(std::move(job)); }
  static double train_mse(const sim_cluster_config& c, const engine_result& r) {
    auto cpu = make_cpu_backend();
    return evaluate(c.job.model, r.params, c.data->train, *cpu).loss;
  }
  /// What heartbeats alone put on a link in each direction from `since` to now: one BASP header
  /// per interval (and one at each end), however long a loaded machine makes the job last.
  static std::uint64_t heartbeat_bytes(const sim_cluster_config& c,
                                       std::chrono::steady_clock::time_point since) {
    auto elapsed = std::chrono::steady_clock::now() - since;
    auto beats = elapsed / c.cluster.heartbeat + 2;
    // actrain's own heartbeats (a request and its answer per beacon period): 256 bytes each
    // way is generous for an atom in a BASP message.
    auto node_beats = c.cluster.node_timeout.count() > 0
                          ? elapsed / std::max(c.cluster.heartbeat, c.cluster.node_timeout / 10) + 2
                          : 0;
    return static_cast<std::uint64_t>(beats) * caf::io::basp::header_size +
           static_cast<std::uint64_t>(node_beats) * 256;
  }
  /// What the registrar's typed interface adds to the handshake every node receives: its
  /// message signatures as strings, each with a 32-bit length (BASP's server handshake).
  static std::uint64_t registrar_interface_bytes() {
    caf::actor_system_config cfg;
    prepare_config(cfg);
    caf::actor_system sys{cfg};
    std::uint64_t n = 0;
    for (const auto& sig : sys.message_types<registrar_actor>()) n += sig.size() + 4;
    return n;
  }
  static bool has_event(const std::vector<std::string>& events, const std::string& part) {
    for (auto& e : events)
      if (e.find(part) != std::string::npos) return true;
    return false;
  }
  static engine_result run_single_process(const sim_cluster_config& c) {
    caf::actor_system_config cfg;
    prepare_config(cfg);
    caf::actor_system sys{cfg};
    return run_job(sys, c.job, c.data);
  }
  /// The sync job `c` across nodes (`across`) against the same job in one process (`local`):
  /// every final parameter, the final progress point (its train loss is the mean over every
  /// step of the run) and each shard's count of applied global steps agree to 1e-5.
  static void expect_same_sync_run(const sim_cluster_config& c, const engine_result& across,
                                   const engine_result& local) {
    ASSERT_TRUE(across.ok) << across.error;
    ASSERT_TRUE(local.ok) << local.error;
    EXPECT_EQ(across.samples, local.samples);
    ASSERT_EQ(across.params.size(), local.params.size());
    double worst = 0;
    for (std::size_t i = 0; i < local.params.size(); ++i)
      worst = std::max(worst, std::abs(double(across.params[i]) - local.params[i]) /
                                  std::max(1.0, std::abs(double(local.params[i]))));
    EXPECT_LT(worst, 1e-5) << "largest parameter difference";
    ASSERT_FALSE(across.history.empty());
    ASSERT_FALSE(local.history.empty());
    auto& a = across.history.back();
    auto& l = local.history.back();
    EXPECT_EQ(a.samples, l.samples);
    EXPECT_EQ(a.step, l.step);
    EXPECT_NEAR(a.train_loss, l.train_loss, 1e-5 * l.train_loss);
    EXPECT_NEAR(a.test_loss, l.test_loss, 1e-5 * l.test_loss);
    EXPECT_NEAR(across.test.loss, local.test.loss, 1e-5 * local.test.loss);
    // The barriers' stats crossed to the coordinator: one per shard, each barrier applied one
    // optimizer step per global step and dropped nothing.
    ASSERT_EQ(across.shards.size(), 2u);
    ASSERT_EQ(local.shards.size(), 2u);
    auto by_index = [](std::vector<shard_stats> v) {
      std::sort(v.begin(), v.end(), [](auto& x, auto& y) { return x.shard < y.shard; });
      return v;
    };
    auto as = by_index(across.shards), ls = by_index(local.shards);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(as[i].shard, static_cast<std::int32_t>(i));
      EXPECT_GT(as[i].version, 0);
      EXPECT_EQ(as[i].version, ls[i].version) << "global steps applied by shard " << i;
      EXPECT_EQ(as[i].dropped_late, 0);
      EXPECT_GT(as[i].pulls, 0);  // counted by the barrier, not the shard
    }
    // And it trained: near the closed form (a few percent above it after 1 epoch).
    auto best = least_squares_mse(c.data->train);
    EXPECT_LT((train_mse(c, across) - best) / best, 0.05);
  }
  /// A sync job of `epochs` epochs of a schedule fitted to `schedule_epochs`.
  sim_cluster_config sync_job(int epochs, int schedule_epochs) {
    auto c = make(test::linear_job(3, schedule_epochs));
    c.job.mode = "sync";
    c.job.epochs = epochs;
    return c;
  }
};

/// Starts `c` and returns once the coordinator has made its first evaluation (training is under
/// way); bounded.
inline std::unique_ptr<sim_cluster> start_and_wait_for_training(sim_cluster_config& c) {
  c.job.eval_every = 0.5;
  auto started = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::once_flag>();
  c.hooks.on_eval = [started, once](const progress_point&) {
    std::call_once(*once, [&] { started->set_value(); });
  };
  auto cluster = std::make_unique<sim_cluster>(c);
  if (started->get_future().wait_for(20s) != std::future_status::ready)
    throw std::runtime_error("no evaluation within 20 s");
  return cluster;
}

}  // namespace sim_test
}  // namespace actrain
