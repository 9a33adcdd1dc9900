// Training across simulated nodes: async, sync and ssp jobs against the closed form and the
// single-process engine, and which links their slices cross.
#include "sim_cluster_fixture.hpp"

namespace actrain {
namespace sim_test {
namespace {

// Async with direct connections (the default): each worker node dials every ps node, so its
// gradients and weights go worker <-> ps and not through its link to the coordinator (the relay
// the harness puts there). That link carries only registration, the run and stop messages,
// progress reports and heartbeats. The slices alone would be 21 floats each way per step, 1250
// steps per worker: coordinator -> worker carries under 10% of that; worker -> coordinator
// also carries the progress reports (one per 10 steps, ~140 bytes on the wire: ~14 bytes a step
// whatever the model's size, 17% of this 21-parameter model's slices), so under 25%. Heartbeats
// (a 32-byte BASP header per 50 ms each way) come on top: they grow with the run's wall time, which
// a loaded machine stretches (a loaded repeat run here saw a 1-epoch run's 1803 bytes vs 1747).
TEST_F(sim_cluster_test, async_training_across_nodes_converges_like_the_single_process_run) {
  auto c = make(test::linear_job(3));
  ASSERT_TRUE(c.cluster.direct_connections);
  auto best = least_squares_mse(c.data->train);
  engine_result across;
  {
    auto started = std::chrono::steady_clock::now();
    sim_cluster cluster{c};
    across = cluster.wait(25s);
    EXPECT_TRUE(cluster.worker_outcome(0, 5s).ok);
    EXPECT_TRUE(cluster.ps_outcome(1, 5s).ok);
    std::uint64_t slices = 6 * 20000 / 3 / 32 * 21 * sizeof(float);
    auto beats = heartbeat_bytes(c, started) + registrar_interface_bytes();
    for (int i = 0; i < 3; ++i) {
      auto l = cluster.link_traffic(sim_node::worker(i));
      std::cerr << "worker node " << i << " link to the coordinator: " << l.to_target
                << " bytes out, " << l.from_target << " bytes in (slices alone: " << slices
                << ", heartbeats and the registrar's interface up to " << beats << ")\n";
      EXPECT_GT(l.to_target, 0u) << "worker node " << i;
      EXPECT_LT(l.to_target, slices / 4 + beats) << "worker node " << i;
      EXPECT_LT(l.from_target, slices / 10 + beats) << "worker node " << i;
    }
    for (int i = 0; i < 2; ++i)
      EXPECT_TRUE(has_event(cluster.events(),
                            "ps " + std::to_string(i) + " takes worker connections at 127.0.0.1:"));
  }
  ASSERT_TRUE(across.ok) << across.error;
  EXPECT_EQ(across.samples, 6 * 20000);
  EXPECT_EQ(across.shards.size(), 2u);
  auto mse = train_mse(c, across);
  std::cerr << "across nodes: train MSE " << (mse - best) / best << " above the closed form\n";
  EXPECT_LT((mse - best) / best, 1e-3) << "across nodes " << mse << ", closed form " << best;
  // The same job in one process reaches the same optimum (async orders differ, so compare the
  // distance to the closed form, not the bits).
  auto local = run_single_process(c);
  ASSERT_TRUE(local.ok) << local.error;
  auto local_mse = train_mse(c, local);
  EXPECT_NEAR(mse, local_mse, 1e-3 * best);
  EXPECT_NEAR(across.test.loss, local.test.loss, 0.01 * local.test.loss);
}

// direct_connections off: CAF 0.17 routes a message to a node it has no connection to through the
// node that introduced it, so every slice crosses the worker's one link to the coordinator: at
// least 21 floats each way per step, ~209 steps per worker in this 1-epoch run.
TEST_F(sim_cluster_test, without_direct_connections_async_traffic_crosses_the_coordinator) {
  auto c = make(test::linear_job(3, 1));
  c.cluster.direct_connections = false;
  sim_cluster cluster{c};
  auto res = cluster.wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_FALSE(has_event(cluster.events(), "takes worker connections"));
  std::uint64_t slices = 20000 / 3 / 32 * 21 * sizeof(float);
  for (int i = 0; i < 3; ++i) {
    auto l = cluster.link_traffic(sim_node::worker(i));
    std::cerr << "worker node " << i << " link to the coordinator: " << l.to_target
              << " bytes out, " << l.from_target << " bytes in (slices alone: " << slices << ")\n";
    EXPECT_GT(l.to_target, slices) << "worker node " << i;
    EXPECT_GT(l.from_target, slices) << "worker node " << i;
  }
  auto best = least_squares_mse(c.data->train);
  EXPECT_LT((train_mse(c, res) - best) / best, 0.05);
}

// A ps node listening on every interface advertises nothing itself: the coordinator hands
// workers the address it sees that node's connection come from (127.0.0.1 here).
TEST_F(sim_cluster_test,
       a_ps_node_on_every_interface_is_dialed_at_the_address_the_coordinator_sees) {
  auto c = make(test::linear_job(3, 1));
  c.cluster.listen_host = "0.0.0.0";
  EXPECT_EQ(ps_listen_address(c.cluster), "");
  auto started = std::chrono::steady_clock::now();
  sim_cluster cluster{c};
  auto res = cluster.wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(has_event(cluster.events(),
                          "ps " + std::to_string(i) + " takes worker connections at 127.0.0.1:"));
  std::uint64_t slices = 20000 / 3 / 32 * 21 * sizeof(float);
  // a loaded machine stretches the job: more beats
  auto beats = heartbeat_bytes(c, started) + registrar_interface_bytes();
  for (int i = 0; i < 3; ++i) {
    auto l = cluster.link_traffic(sim_node::worker(i));
    std::cerr << "worker node " << i << " link to the coordinator: " << l.to_target
              << " bytes out, " << l.from_target << " bytes in (bound " << slices / 4 + beats
              << " out)\n";
    EXPECT_LT(l.to_target, slices / 4 + beats) << "worker node " << i;  // see the first test
    EXPECT_LT(l.from_target, slices / 10 + beats) << "worker node " << i;
  }
}

// Sync across nodes: with the bulk channel (the default) each ps node runs the barriers of its own
// shards, so a worker's slices go to its ps nodes and never cross its link to the coordinator,
// which carries what it carries in async (progress reports, heartbeats: under a quarter of the
// slices). Without the channel the barriers run on the coordinator node, in front of the remote
// shards, and every slice crosses that link: more than the slices' bytes.
TEST_F(sim_cluster_test, sync_slices_reach_barriers_on_the_ps_nodes_not_the_coordinator) {
  std::uint64_t slices = 3 * 20000 / 3 / 32 * 21 * sizeof(float);
  for (bool bulk : {true, false}) {
    SCOPED_TRACE(bulk ? "bulk channel" : "no bulk channel");
    auto c = sync_job(3, 3);
    c.cluster.bulk_channel = bulk;
    auto started = std::chrono::steady_clock::now();
    sim_cluster cluster{c};
    auto res = cluster.wait(25s);
    ASSERT_TRUE(res.ok) << res.error;
    auto beats = heartbeat_bytes(c, started) + registrar_interface_bytes();
    for (int i = 0; i < 3; ++i) {
      auto l = cluster.link_traffic(sim_node::worker(i));
      std::cerr << "worker node " << i << " link to the coordinator: " << l.to_target
                << " bytes out (slices alone: " << slices << ")\n";
      if (bulk)
        EXPECT_LT(l.to_target, slices / 4 + beats) << "worker node " << i;
      else
        EXPECT_GT(l.to_target, slices) << "worker node " << i;
    }
  }
}

// Sync across nodes: every global step goes through one barrier per shard (on the ps nodes).
// Every global step applies the row-weighted mean of the same three slices as in one process, so
// the runs differ only by the order of three float additions per step: the trajectory matches to
// 1e-5. The trajectory is sampled at the end of epochs 1, 2 and 3 of one learning-rate schedule
// (total_steps fixed for 3 epochs), one run per point: at each, every parameter, the mean train
// loss so far and the test loss. The coordinator's intermediate evaluations are not compared:
// they pull the shards at whatever global step they reached when enough progress reports had
// arrived, and their train loss covers the reports that arrived meanwhile, so two runs of the
// same job in one process differ there too (docs/testing.md).
TEST_F(sim_cluster_test, sync_training_across_nodes_follows_the_single_process_trajectory) {
  std::vector<double> across_losses, local_losses;
  for (int epochs : {1, 2, 3}) {
    SCOPED_TRACE("epochs " + std::to_string(epochs));
    auto c = sync_job(epochs, 3);
    engine_result across;
    {
      sim_cluster cluster{c};
      across = cluster.wait(25s);
    }
    auto local = run_single_process(c);
    expect_same_sync_run(c, across, local);
    if (across.history.empty() || local.history.empty()) continue;
    across_losses.push_back(across.history.back().train_loss);
    local_losses.push_back(local.history.back().train_loss);
  }
  // The mean train loss of the first e epochs falls from epoch to epoch, in both runs alike.
  ASSERT_EQ(across_losses.size(), 3u);
  EXPECT_GT(across_losses[0], across_losses[1]);
  EXPECT_GT(across_losses[1], across_losses[2]);
}

// Within one run: sync evaluates at fixed global steps (the barriers hold the coordinator's pull
// until the step is applied), so every evaluation point of a run across nodes equals the same
// point of the single-process run: same step, test loss and accuracy to 1e-5.
TEST_F(sim_cluster_test, every_sync_evaluation_point_matches_the_single_process_run) {
  auto c = sync_job(2, 2);
  c.job.eval_every = 0.25;
  engine_result across;
  {
    sim_cluster cluster{c};
    across = cluster.wait(25s);
  }
  auto local = run_single_process(c);
  auto again = run_single_process(c);
  ASSERT_TRUE(across.ok) << across.error;
  ASSERT_TRUE(local.ok) << local.error;
  ASSERT_TRUE(again.ok) << again.error;
  // 20000 rows, 3 workers of batch 32: an evaluation every 52 global steps, 8 of them in 2
  // epochs (the last falls on the final step or past it), plus the final evaluation.
  ASSERT_GE(local.history.size(), 8u);
  ASSERT_EQ(across.history.size(), local.history.size());
  ASSERT_EQ(again.history.size(), local.history.size());
  for (std::size_t i = 0; i + 1 < local.history.size(); ++i) {
    SCOPED_TRACE("evaluation point " + std::to_string(i));
    auto& l = local.history[i];
    EXPECT_EQ(l.step, static_cast<std::int64_t>(52 * (i + 1)));
    for (auto* other : {&across.history[i], &again.history[i]}) {
      EXPECT_EQ(other->step, l.step);
      EXPECT_NEAR(other->test_loss, l.test_loss, 1e-5 * l.test_loss);
      EXPECT_NEAR(other->test_accuracy, l.test_accuracy, 1e-5);
    }
  }
  // The trajectory goes down: the first point is well above the last.
  EXPECT_GT(local.history.front().test_loss, 2 * local.history.back().test_loss);
  EXPECT_NEAR(across.test.loss, local.test.loss, 1e-5 * local.test.loss);
}

// Every chunk on every worker and ps node's link to the coordinator arrives 1 ms late (both
// directions): sync training is slower and ends exactly where the single-process run ends.
// Without direct connections, so that all of a worker's traffic crosses its delayed link (with
// them, a sync worker's pushes go to the barriers on the coordinator, but the weights come
// straight from the shards: a barrier delegates the pull, and the shard answers the worker).
TEST_F(sim_cluster_test, delayed_links_train_to_the_same_result) {
  auto c = sync_job(1, 1);
  c.cluster.direct_connections = false;
  auto delay = 1ms;
  engine_result across;
  std::vector<link_counts> worker_links;
  {
    sim_cluster cluster{c};
    for (int i = 0; i < 3; ++i) cluster.delay_links(sim_node::worker(i), delay);
    for (int i = 0; i < 2; ++i) cluster.delay_links(sim_node::ps(i), delay);
    across = cluster.wait(25s);
    for (int i = 0; i < 3; ++i) worker_links.push_back(cluster.link_traffic(sim_node::worker(i)));
    auto ps0 = cluster.link_traffic(sim_node::ps(0));
    EXPECT_GT(ps0.to_target, 0u);
    EXPECT_GT(ps0.from_target, 0u);
  }
  expect_same_sync_run(c, across, run_single_process(c));
  // The traffic really crossed the relays: each worker's slices for every step it made (21
  // floats out, 21 back per step, ~209 steps) went through its own link, not a side channel.
  auto steps_per_worker = across.samples / 3 / c.job.batch;
  for (auto& l : worker_links) {
    EXPECT_EQ(l.connections, 1);
    EXPECT_GT(l.to_target, std::uint64_t(steps_per_worker) * 21 * sizeof(float));
    EXPECT_GT(l.from_target, std::uint64_t(steps_per_worker) * 21 * sizeof(float));
  }
  // A lower bound the delay guarantees (no upper bound is asserted): a worker step waits for
  // at least one round trip over its delayed link.
  EXPECT_GE(across.seconds, steps_per_worker * 2 * 1e-3);
}

TEST_F(sim_cluster_test, ssp_training_across_nodes_reaches_the_closed_form) {
  auto c = make(test::linear_job(3));
  c.job.mode = "ssp";
  c.job.ssp_bound = 2;
  c.worker_delays = {0, 0, 0.0005};  // one slower worker: the bound has something to hold back
  engine_result across;
  {
    sim_cluster cluster{c};
    across = cluster.wait(25s);
  }
  ASSERT_TRUE(across.ok) << across.error;
  EXPECT_EQ(across.samples, 6 * 20000);
  auto best = least_squares_mse(c.data->train);
  std::cerr << "ssp across nodes: train MSE " << (train_mse(c, across) - best) / best
            << " above the closed form\n";
  EXPECT_LT((train_mse(c, across) - best) / best, 1e-3);
}

}  // namespace
}  // namespace sim_test
}  // namespace actrain
