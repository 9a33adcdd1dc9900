// Simulated nodes: 1 coordinator, 2 ps and 3 worker nodes, each its own actor system and
// middleman on 127.0.0.1, trained against the closed form and the single-process engine.
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
namespace {

using namespace std::chrono_literals;

std::unique_ptr<sim_cluster> start_and_wait_for_training(sim_cluster_config& c);

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

// A ps node dies while workers talk to it over their own connections: the job fails naming the
// shard, and every other node ends (nothing waits for the dead node).
TEST_F(sim_cluster_test, killing_a_ps_node_with_direct_links_fails_the_job_naming_its_shard) {
  auto c = make(test::linear_job(3));
  auto cluster = start_and_wait_for_training(c);
  cluster->kill_ps(0);
  auto res = cluster->wait(25s);
  EXPECT_FALSE(res.ok);
  // ps node 0 holds the shards s with s % 2 == its index.
  auto index = cluster->ps_outcome(0, 5s).index;
  EXPECT_NE(res.error.find("shard " + std::to_string(index) + " went down"), std::string::npos)
      << res.error;
  // The surviving ps says the job failed and why (an `actrain node` process exits 1 with it).
  // A worker may learn it from the coordinator, fail on its own request to the dead shard, or
  // find the coordinator gone first; when it fails, it says the job failed.
  for (int i = 0; i < 3; ++i) {
    auto w = cluster->worker_outcome(i, 10s);
    if (!w.ok) {
      EXPECT_EQ(w.message.rfind("the job failed: ", 0), 0u) << w.message;
    }
  }
  auto survivor = cluster->ps_outcome(1, 10s);
  EXPECT_FALSE(survivor.ok);
  EXPECT_EQ(survivor.message.rfind("the job failed: ", 0), 0u) << survivor.message;
}

// With [cluster] replicas = 1 the same kill costs nothing: the replica of the lost node's shard,
// on the other ps node, takes over and the job goes on. Every step a worker pushed reached every
// shard exactly once (a primary answers a push once its replica has it; the workers resend what
// was not answered), so both shards end at the same version, one per step, and the MSE is the
// closed form's within 1e-3.
TEST_F(sim_cluster_test, killing_a_ps_node_with_replicas_hands_its_shard_to_its_replica) {
  auto c = make(test::linear_job(3));
  c.cluster.replicas = 1;
  auto cluster = start_and_wait_for_training(c);
  cluster->kill_ps(0);
  auto res = cluster->wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
  auto index = cluster->ps_outcome(0, 5s).index;
  EXPECT_TRUE(has_event(cluster->events(), "shard " + std::to_string(index) + " lost on node"));
  EXPECT_TRUE(has_event(cluster->events(), "took over at version"));
  std::int64_t steps = 0;  // no worker was lost: each walked its own rows
  for (int w = 0; w < 3; ++w) {
    auto r = shard_range(c.data->train.rows, 3, w);
    steps += (r.second - r.first + c.job.batch - 1) / c.job.batch * c.job.epochs;
  }
  // ... unless one done first took a share of another's epochs not started (a worker slowed by
  // the kill): each share cuts at most one range of each of the 2 others, a short batch more per
  // epoch. Every step pushes to both shards once: the shard whose replica took over must count
  // exactly the steps the untouched one counted, no step lost or applied twice.
  std::int64_t shares = 0;
  for (auto& e : cluster->events())
    if (e.find("walked its rows first and takes") != std::string::npos) ++shares;
  ASSERT_EQ(res.shards.size(), 2u);
  EXPECT_EQ(res.shards[0].version, res.shards[1].version);
  for (auto& ss : res.shards) {
    EXPECT_GE(ss.version, steps) << "shard " << ss.shard;
    EXPECT_LE(ss.version, steps + shares * 2 * c.job.epochs) << "shard " << ss.shard;
  }
  if (shares == 0)
    for (auto& ss : res.shards) EXPECT_EQ(ss.version, steps) << "shard " << ss.shard;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(cluster->worker_outcome(i, 10s).ok) << i;
  EXPECT_TRUE(cluster->ps_outcome(1, 10s).ok);
  auto best = least_squares_mse(c.data->train);
  EXPECT_LT((train_mse(c, res) - best) / best, 1e-3);
}

// Chaos in the simulated-node harness (the process version, which also kills and restarts the
// coordinator, is test/integration/chaos_test.cpp): with replicas, in a seeded order at seeded
// moments, a worker node is killed and a new one joins in its place, a ps node is killed (its
// shard's replica takes over), and a worker's and a ps node's links to the coordinator stall for
// 0.7 s (every byte delayed, then released). The job completes, the replica took over, every node
// ends as it should, and the MSE is within 1e-2 of the closed form, the bound of the other
// lost-worker tests here (seeds 1-6 ended 9e-5 to 1.9e-3 above it; the 1e-3 goal against the
// fault-free run is the process chaos test's). ACTRAIN_CHAOS_SEED picks another schedule.
TEST_F(sim_cluster_test, seeded_chaos_with_replicas_kills_and_stalls_nodes_and_the_job_completes) {
  auto* env = std::getenv("ACTRAIN_CHAOS_SEED");
  const unsigned seed = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 1u;
  std::mt19937 rng(seed);
  // Long enough (about 9 s here) that every fault lands in its first half.
  auto c = make(test::linear_job(3, 60));
  c.cluster.replicas = 1;
  c.cluster.max_workers = 6;
  auto cluster = start_and_wait_for_training(c);
  const int lost_worker = std::uniform_int_distribution<int>(0, 2)(rng);
  const int lost_ps = std::uniform_int_distribution<int>(0, 1)(rng);
  int joiner = -1;
  auto stall = [&](sim_node n) {
    cluster->delay_links(n, std::chrono::milliseconds(700));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the stall itself is the fault
    cluster->delay_links(n, std::chrono::microseconds(0));
  };
  std::vector<std::pair<std::string, std::function<void()>>> faults{
      {"kill worker " + std::to_string(lost_worker) + ", a new one joins",
       [&] {
         cluster->kill_worker(lost_worker);
         auto opts = c.cluster;
         opts.name = "replacement";
         joiner = cluster->add_worker_node(opts);
       }},
      {"kill ps " + std::to_string(lost_ps), [&] { cluster->kill_ps(lost_ps); }},
      {"stall worker " + std::to_string((lost_worker + 1) % 3),
       [&] { stall(sim_node::worker((lost_worker + 1) % 3)); }},
      {"stall ps " + std::to_string(1 - lost_ps), [&] { stall(sim_node::ps(1 - lost_ps)); }},
  };
  std::shuffle(faults.begin(), faults.end(), rng);
  std::uniform_int_distribution<int> gap_ms(50, 150);
  for (auto& [what, fault] : faults) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms(rng)));  // seeded fault times
    std::cerr << "chaos (seed " << seed << "): " << what << "\n";
    fault();
  }
  auto res = cluster->wait(60s);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_TRUE(has_event(cluster->events(), "took over at version"));
  EXPECT_FALSE(cluster->ps_outcome(lost_ps, 10s).ok);
  EXPECT_TRUE(cluster->ps_outcome(1 - lost_ps, 10s).ok);
  cluster->worker_outcome(lost_worker, 10s);  // ended (how a killed node says it, varies)
  for (int i = 0; i < 3; ++i)
    if (i != lost_worker) EXPECT_TRUE(cluster->worker_outcome(i, 10s).ok) << "worker " << i;
  ASSERT_GE(joiner, 0);
  EXPECT_TRUE(cluster->worker_outcome(joiner, 10s).ok);
  EXPECT_GE(res.samples, 60 * 20000 - 3 * 32);
  auto best = least_squares_mse(c.data->train);
  auto rel = (train_mse(c, res) - best) / best;
  std::cerr << "chaos (seed " << seed << "): train MSE " << rel << " above the closed form, "
            << res.samples << " samples\n";
  EXPECT_LT(rel, 1e-2);
  // The replacement took a share, even when it came while the others' lists were still being
  // rewritten after the loss (it waits for that instead of taking nothing and idling).
  std::int64_t taken = -1;
  for (auto& e : cluster->events()) {
    auto at = e.find("('replacement') joined at step ");
    if (at == std::string::npos) continue;
    std::cerr << "  " << e << "\n";
    auto t = e.find(" and takes ");
    if (t != std::string::npos) taken = std::stoll(e.substr(t + 11));
  }
  EXPECT_GT(taken, 0) << "the replacement worker took no share of the work";
  if (HasFailure())
    for (auto& e : cluster->events()) std::cerr << "  " << e << "\n";
}

// What replicas cannot do is refused at start, naming the key.
TEST(cluster_replicas, settings_replicas_cannot_serve_are_refused_by_name) {
  auto job = test::sim_config(test::linear_job(3)).job;  // the model fitted to its data
  cluster_options o;
  o.ps_nodes = 2;
  o.replicas = 1;
  EXPECT_NO_THROW(validate_replicas(job, o));
  auto refused = [&](const job_spec& j, const cluster_options& opts, const std::string& part) {
    try {
      validate_replicas(j, opts);
      ADD_FAILURE() << "accepted; expected a refusal naming '" << part << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  auto one_ps = o;
  one_ps.ps_nodes = 1;
  refused(job, one_ps, "cluster.ps-nodes >= 2");
  auto sync = job;
  sync.mode = "sync";
  refused(sync, o, "async jobs");
  auto buffered = job;
  buffered.staleness.buffer = 2;
  refused(buffered, o, "staleness.buffer = 2");
  auto chunked = o;
  chunked.chunking.chunk_bytes = 8;  // below the 11-parameter slices
  refused(job, chunked, "cluster.chunk-bytes");
  auto two = o;
  two.replicas = 2;
  refused(job, two, "cluster.replicas must be 0 or 1");
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

TEST_F(sim_cluster_test, a_sparse_job_across_simulated_nodes_survives_a_killed_worker_node) {
  ctr_spec spec;
  spec.rows = 300000;
  spec.fields = 6;
  spec.ids_per_field = 200;
  spec.weight_sd = 0.6;
  spec.bias = -1.0;
  spec.seed = 5;
  auto train = make_synthetic_ctr(spec, 0);
  auto test_spec = spec;
  test_spec.rows = 20000;
  auto test = make_synthetic_ctr(test_spec, spec.rows);
  double truth = roc_auc(test.true_logit, test.data.y);
  auto job = std::make_shared<sparse_job>();
  job->model.kind = "sparse_lr";
  job->optim.lr = 0.1f;
  job->workers = 2;
  job->shards = 2;
  job->batch = 128;
  job->epochs = 2;
  prepare_sparse_job(*job, spec.rows, train.data.id_space);
  auto c = make(test::linear_job(2));  // its dense model and data stay unused
  c.job.workers = 2;
  c.ps_nodes = 2;
  c.sparse = job;
  c.sparse_train = std::make_shared<const sparse_dataset>(std::move(train.data));
  c.sparse_test = std::make_shared<const sparse_dataset>(std::move(test.data));
  auto started = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::once_flag>();
  c.hooks.on_event = [started, once](const std::string& line) {
    if (line.find("every worker has reported") != std::string::npos)
      std::call_once(*once, [&] { started->set_value(); });
  };
  sim_cluster cluster{c};
  ASSERT_EQ(started->get_future().wait_for(30s), std::future_status::ready);
  cluster.kill_worker(1);
  auto r = cluster.wait_sparse(60s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.workers_lost, 1);
  EXPECT_GE(r.samples, 2 * spec.rows);
  EXPECT_NEAR(r.test_auc, truth, 0.015) << "truth " << truth;
  EXPECT_TRUE(has_event(cluster.events(), ") go to worker ")) << "no reassignment event";
  EXPECT_EQ(cluster.worker_outcome(1, 10s).message, "killed (fault injection)");
}

TEST_F(sim_cluster_test, killing_a_worker_node_mid_run_still_completes_the_job) {
  auto c = make(test::linear_job(3));
  c.job.eval_every = 0.5;  // the first evaluation tells the test that training is under way
  auto started = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::once_flag>();
  c.hooks.on_eval = [started, once](const progress_point&) {
    std::call_once(*once, [&] { started->set_value(); });
  };
  sim_cluster cluster{c};
  ASSERT_EQ(started->get_future().wait_for(20s), std::future_status::ready);
  cluster.kill_worker(0);
  auto res = cluster.wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.workers_lost, 1);
  // Worker ids follow registration order, not node order: ask the node which id it had.
  auto killed = cluster.worker_outcome(0, 5s);
  EXPECT_EQ(killed.message, "killed (fault injection)");
  EXPECT_TRUE(has_event(cluster.events(), "worker " + std::to_string(killed.index) + " lost"));
  // The event says why it went down: the exit reason of its actors (killed), or the loss of its
  // node's link when the node's connection closed before that reason arrived (seen once in CI).
  EXPECT_TRUE(has_event(cluster.events(), "lost at step")) << "no loss event";
  for (const auto& e : cluster.events())
    if (e.find("lost at step") != std::string::npos) {
      std::cerr << "loss event: " << e << "\n";
      EXPECT_TRUE(e.find("kill") != std::string::npos ||
                  e.find("remote_link_unreachable") != std::string::npos)
          << e;
    }
  EXPECT_TRUE(cluster.worker_outcome(1, 5s).ok);
  // Its rows went to another worker: the job still made (at least) its passes over the data.
  EXPECT_GE(res.samples, 6 * 20000 - 3 * 32);
  auto best = least_squares_mse(c.data->train);
  EXPECT_LT((train_mse(c, res) - best) / best, 1e-2);
}

/// Starts `c` and returns once the coordinator has made its first evaluation (training is under
/// way); bounded.
std::unique_ptr<sim_cluster> start_and_wait_for_training(sim_cluster_config& c) {
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

// A worker node's link is cut mid-run (both sockets closed, reconnects refused): the coordinator
// sees that node's worker go down, the barriers stop waiting for it, its rows go to another
// worker, and the sync job completes. The cut node notices the coordinator is gone and stops.
TEST_F(sim_cluster_test, cutting_a_worker_nodes_links_mid_run_still_completes_the_job) {
  auto c = sync_job(2, 2);
  auto cluster = start_and_wait_for_training(c);  // evaluates every 0.5 epoch: 104 global steps
  cluster->cut_links(sim_node::worker(1));
  auto res = cluster->wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.workers_lost, 1);
  auto cut = cluster->worker_outcome(1, 5s);
  EXPECT_EQ(cut.message, "the coordinator went away; local actors stopped");
  EXPECT_TRUE(has_event(cluster->events(), "worker " + std::to_string(cut.index) + " lost"));
  EXPECT_TRUE(cluster->worker_outcome(0, 5s).ok);
  EXPECT_GT(cluster->link_traffic(sim_node::worker(1)).from_target, 0u);
  EXPECT_GE(res.samples, 2 * 20000 - 3 * 32);
  auto best = least_squares_mse(c.data->train);
  EXPECT_LT((train_mse(c, res) - best) / best, 0.05);
  // The lost worker's rows went to one of the others, which takes more global steps than the
  // 417 of 3 workers: the evaluation points go on to the end, 104 steps apart, then the final
  // evaluation.
  ASSERT_FALSE(res.shards.empty());
  auto steps = res.shards[0].version;
  std::cerr << "global steps " << steps << ", evaluation points " << res.history.size() << "\n";
  EXPECT_GT(steps, 417 + 2 * 104);
  ASSERT_GE(res.history.size(), 2u);
  for (std::size_t i = 0; i + 1 < res.history.size(); ++i)
    EXPECT_EQ(res.history[i].step, static_cast<std::int64_t>(104 * (i + 1))) << "point " << i;
  EXPECT_GT(res.history[res.history.size() - 2].step, steps - 104);
}

// A worker node's link goes silent (bytes swallowed, sockets left open): nothing is closed, so
// only heartbeats can tell. The connections' timeout is far away (30 s): actrain's own node
// heartbeats find it (node-timeout 500 ms). The coordinator takes the node as lost, its rows go to
// the others and the job completes; the silent node's beacon gets no answer either and it stops
// its actors, naming that. (The logic itself is tested on the test clock:
// test/actors/liveness_test.cpp; CAF's connection heartbeats alone, across real processes, by
// multiprocess_test's SIGSTOPped ps.)
TEST_F(sim_cluster_test, a_silent_worker_link_is_found_by_actrains_node_heartbeats) {
  auto c = make(test::linear_job(3, 2));
  c.cluster.connection_timeout = std::chrono::seconds(30);
  c.cluster.node_timeout = std::chrono::milliseconds(500);
  auto cluster = start_and_wait_for_training(c);
  auto silenced = std::chrono::steady_clock::now();
  cluster->silence_links(sim_node::worker(2));
  auto res = cluster->wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.workers_lost, 1);
  auto silent = cluster->worker_outcome(2, 10s);
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - silenced).count();
  EXPECT_EQ(silent.message.rfind("the coordinator went away (the coordinator node answered no "
                                 "heartbeat for ",
                                 0),
            0u)
      << silent.message;
  EXPECT_LT(took, 15.0) << "the connection timeout (30 s) is not what ended it";
  // Both sides time out after node-timeout: the coordinator's check names the silent node, or
  // the node's own beacon fired first, the node stopped and closed its connection, and its
  // worker was lost with the link (remote_link_unreachable) before the check came. Either way
  // heartbeats found the silence (the node's outcome above says so for its side).
  std::string named, lost;
  for (auto& e : cluster->events()) {
    if (e.rfind("node '", 0) == 0 && e.find("sent no heartbeat for") != std::string::npos)
      named = e;
    if (e.rfind("worker " + std::to_string(silent.index) + " lost", 0) == 0) lost = e;
  }
  ASSERT_FALSE(lost.empty()) << ::testing::PrintToString(cluster->events());
  EXPECT_TRUE(named.find("([cluster] node-timeout 500 ms): its ") != std::string::npos ||
              lost.find("remote_link_unreachable") != std::string::npos)
      << ::testing::PrintToString(cluster->events());
  EXPECT_GT(cluster->link_traffic(sim_node::worker(2)).dropped, 0u);  // heartbeats at least
  EXPECT_GE(res.samples, 2 * 20000 - 3 * 32);
  auto best = least_squares_mse(c.data->train);
  EXPECT_LT((train_mse(c, res) - best) / best, 0.05);
}

// Elastic workers: a worker node that registers beyond [job] workers while the job runs joins
// it. The two workers each release a third of the epochs they have not started, the newcomer
// trains them, and the job completes having made exactly its passes over the data (none twice,
// none skipped). In sync mode the barriers expect the newcomer from its first slice on, and the
// run still reaches the closed form. A worker beyond [cluster] max-workers (here 3) is refused.
TEST_F(sim_cluster_test, a_worker_node_joining_mid_run_takes_a_share_of_the_rows_and_trains) {
  for (std::string mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    auto c = make(test::linear_job(2, 4));
    c.job.mode = mode;
    c.cluster.max_workers = 3;
    c.worker_delays = {0.002, 0.002};  // ~0.6 s an epoch: the joiner comes in long before the end
    auto cluster = start_and_wait_for_training(c);
    auto opts = c.cluster;
    opts.name = "joiner";
    auto joiner = cluster->add_worker_node(opts);
    auto res = cluster->wait(60s);
    ASSERT_TRUE(res.ok) << res.error;
    auto out = cluster->worker_outcome(joiner, 5s);
    EXPECT_TRUE(out.ok) << out.message;
    EXPECT_EQ(out.index, 2);
    std::int64_t taken = -1;
    for (auto& e : cluster->events()) {
      auto at = e.find("worker 2 ('joiner') joined at step ");
      if (at == std::string::npos) continue;
      auto n = e.find("takes ", at);
      ASSERT_NE(n, std::string::npos) << e;
      taken = std::stoll(e.substr(n + 6));
      std::cerr << mode << ": " << e << "\n";
    }
    // A third of the epochs no worker had started: each of the two gives up the last 3333 of
    // its 10000 rows for each of them (3 when it joins in the first epoch, as it should here).
    EXPECT_GT(taken, 0) << "the joiner took no share of the rows";
    EXPECT_EQ(taken % (2 * 3333), 0) << taken;
    EXPECT_LE(taken, 2 * 3333 * 3);
    // Every sample counted comes from a worker's report: the others were left 80000 - taken, so
    // the total holds only if the joiner trained its share (and none was trained twice).
    EXPECT_EQ(res.samples, 4 * 20000);
    auto best = least_squares_mse(c.data->train);
    EXPECT_LT((train_mse(c, res) - best) / best, 0.05);
  }
}

TEST_F(sim_cluster_test, a_worker_beyond_max_workers_is_refused_naming_the_limit) {
  auto c = make(test::linear_job(2, 2));
  c.cluster.max_workers = 2;
  auto cluster = start_and_wait_for_training(c);  // the first two hold their indexes
  auto opts = c.cluster;
  opts.name = "one-too-many";
  auto extra = cluster->add_worker_node(opts);
  auto out = cluster->worker_outcome(extra, 10s);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.message.find("the cluster already has its 2 workers ([job] workers; no more may "
                             "join this job)"),
            std::string::npos)
      << out.message;
  auto res = cluster->wait(25s);
  ASSERT_TRUE(res.ok) << res.error;
}

TEST_F(sim_cluster_test, a_bad_token_is_refused_with_a_clear_message_on_both_sides) {
  auto c = make(test::linear_job(3, 1));
  sim_cluster cluster{c};
  auto opts = c.cluster;
  opts.token = "not-the-token";
  opts.name = "intruder";
  auto bad = cluster.add_worker_node(opts);
  auto out = cluster.worker_outcome(bad, 10s);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.message.find("actrain.bad_token"), std::string::npos) << out.message;
  EXPECT_NE(out.message.find("does not match the coordinator's ([cluster] token)"),
            std::string::npos)
      << out.message;
  auto res = cluster.wait(25s);
  ASSERT_TRUE(res.ok) << res.error;  // the refused node does not disturb the job
  EXPECT_TRUE(has_event(cluster.events(), "refused worker node 'intruder': actrain.bad_token"));
}

TEST(cluster_hello, version_and_byte_order_mismatches_are_named) {
  auto probe = byte_order_probe();
  EXPECT_FALSE(check_hello("t", "ps", "t", protocol_version, probe));
  auto v = check_hello("t", "ps", "t", protocol_version + 1, probe);
  EXPECT_NE(describe_error(v).find("actrain.version_mismatch: protocol version"),
            std::string::npos);
  // What a peer of the other byte order would have sent: every float's bytes reversed.
  std::vector<float> swapped(probe.size());
  for (std::size_t i = 0; i < probe.size(); ++i) {
    auto* src = reinterpret_cast<const unsigned char*>(probe.data() + i);
    auto* dst = reinterpret_cast<unsigned char*>(swapped.data() + i);
    for (int b = 0; b < 4; ++b) dst[b] = src[3 - b];
  }
  auto b = check_hello("t", "worker", "t", protocol_version, tensor(swapped));
  EXPECT_NE(describe_error(b).find("byte order"), std::string::npos);
  EXPECT_NE(describe_error(check_hello("t", "boss", "t", protocol_version, probe)).find("role"),
            std::string::npos);
}

}  // namespace
}  // namespace actrain
