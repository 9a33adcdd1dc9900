// A ps node lost across simulated nodes: without a replica the job fails naming its shard; with
// replicas the shard's replica takes over, also under seeded chaos.
#include "sim_cluster_fixture.hpp"

namespace actrain {
namespace sim_test {
namespace {

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
  // exactly the steps the untouched one counted, no step lost or applied twice (and exactly the
  // static steps when no share was taken: the bounds meet).
  std::int64_t shares = 0;
  for (auto& e : cluster->events())
    if (e.find("walked its rows first and takes") != std::string::npos) ++shares;
  ASSERT_EQ(res.shards.size(), 2u);
  EXPECT_EQ(res.shards[0].version, res.shards[1].version);
  for (auto& ss : res.shards) {
    EXPECT_GE(ss.version, steps) << "shard " << ss.shard;
    EXPECT_LE(ss.version, steps + shares * 2 * c.job.epochs) << "shard " << ss.shard;
  }
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
    if (i != lost_worker) {
      EXPECT_TRUE(cluster->worker_outcome(i, 10s).ok) << "worker " << i;
    }
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

}  // namespace
}  // namespace sim_test
}  // namespace actrain
