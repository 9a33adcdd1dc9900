#pragma once
// Simulated nodes: a whole cluster in one process, each node with its own actor_system and
// middleman, talking BASP over real loopback sockets (127.0.0.1, port 0). The nodes run the same
// functions as `actrain node` processes (include/actrain/cluster.hpp), so a test of the harness is
// a test of the deployment path. Fault injection: kill a node's actors, slow a worker, delay, cut
// or silence a node's links (each ps and worker node reaches the coordinator through its own
// link_relay), add nodes with another token. See docs/testing.md.
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <actrain/cluster.hpp>
#include <actrain/testing/link_relay.hpp>

namespace actrain {

struct sim_cluster_config {
  job_spec job;                          ///< model dims fitted to `data`; job.workers worker nodes
  std::shared_ptr<const job_data> data;  ///< shared read-only by every node
  int ps_nodes = 2;                      ///< job.shards are spread over these
  cluster_options cluster;               ///< token, heartbeat, join_timeout (host/port ignored)
  std::vector<double> worker_delays;     ///< per worker node: extra seconds per step (stragglers)
  engine_hooks hooks;                    ///< the coordinator's hooks (its own threads)
  int threads_per_node = 2;              ///< scheduler threads of each node's actor system
  /// Each ps and worker node connects to the coordinator through its own loopback relay, so
  /// its links can be delayed, cut or silenced at any time. Off: nodes connect directly (and
  /// the link calls throw).
  bool relay_links = true;
  /// When set, the cluster runs this sparse job instead of `job` (whose model and data are then
  /// unused; job.workers still says how many worker nodes start): the nodes run the sparse
  /// functions of include/actrain/cluster.hpp over `sparse_train`, the coordinator evaluates on
  /// `sparse_test`; wait_sparse() returns its result. REQUIRES: prepare_sparse_job ran on it.
  std::shared_ptr<const sparse_job> sparse;
  std::shared_ptr<const sparse_dataset> sparse_train;
  std::shared_ptr<const sparse_dataset> sparse_test;
};

/// Names one simulated node for the link calls: a ps or worker node by its node index (the
/// order the harness started them, as kill_worker() and worker_outcome() use).
struct sim_node {
  node_role role = node_role::worker;
  int index = 0;
  static sim_node worker(int i) { return {node_role::worker, i}; }
  static sim_node ps(int i) { return {node_role::ps, i}; }
};

/// Owns the node threads. Construction starts the coordinator node, waits (bounded by
/// cluster.join_timeout) until it listens, then starts the ps and worker nodes. The destructor
/// kills whatever still runs and joins every thread. Not copyable; use from one thread.
class sim_cluster {
 public:
  explicit sim_cluster(sim_cluster_config cfg);
  ~sim_cluster();
  sim_cluster(const sim_cluster&) = delete;
  sim_cluster& operator=(const sim_cluster&) = delete;

  /// The coordinator's port on 127.0.0.1.
  std::uint16_t port() const { return port_; }

  /// Kills every actor of worker node `i` (exit reason kill), as a crash of that node would.
  void kill_worker(int i);
  /// Kills every actor of ps node `i`.
  void kill_ps(int i);

  /// Adds `d` of latency to every chunk the node's links carry from now on, both directions
  /// (0 removes it). Everything still arrives, in order. Only the node's connection to the
  /// coordinator crosses the relay: with cluster.direct_connections (the default) a worker
  /// node's own connections to the ps nodes do not, so its async traffic with the shards
  /// bypasses this link (sync and ssp workers talk to barriers on the coordinator, which it
  /// carries). Set direct_connections = false to route every worker <-> ps message through it.
  void delay_links(sim_node n, std::chrono::microseconds d);
  /// Closes the node's connection to the coordinator on both sides and refuses new ones: the
  /// coordinator sees the node's actors go down at once (a crashed machine, a reset link).
  void cut_links(sim_node n);
  /// Swallows every byte the node's links carry and refuses new connections, leaving the
  /// sockets open (a pulled cable, a partition): only heartbeats notice, after about
  /// cluster.connection_timeout.
  void silence_links(sim_node n);
  /// What the node's links carried so far (for tests: proof the traffic crossed the relay).
  link_counts link_traffic(sim_node n) const;

  /// Starts one more worker node with these options (host/port are filled in); returns its
  /// index for worker_outcome(). A worker node beyond [job] workers joins the running job (up to
  /// cluster.max_workers); also for tests of refusals (wrong token, a full cluster).
  int add_worker_node(cluster_options opts);

  /// The coordinator's result; throws std::runtime_error if it takes longer than `bound`.
  engine_result wait(std::chrono::milliseconds bound);
  /// The same for a sparse job (sim_cluster_config::sparse).
  sparse_result wait_sparse(std::chrono::milliseconds bound);
  /// How worker node `i` ended; throws std::runtime_error if it takes longer than `bound`.
  node_outcome worker_outcome(int i, std::chrono::milliseconds bound);
  node_outcome ps_outcome(int i, std::chrono::milliseconds bound);

  /// The coordinator's event lines so far (joins, refusals, lost workers).
  std::vector<std::string> events() const;

 private:
  struct node {
    std::shared_ptr<node_control> control = std::make_shared<node_control>();
    std::future<node_outcome> outcome;
    std::unique_ptr<link_relay> relay;  ///< its link to the coordinator (null: direct)
    std::thread thread;                 ///< declared last: joined before the relay goes
  };
  void start_node(node& n, node_role role, cluster_options opts);
  link_relay& relay_of(sim_node n) const;

  sim_cluster_config cfg_;
  std::uint16_t port_ = 0;
  std::shared_ptr<node_control> coordinator_control_ = std::make_shared<node_control>();
  std::future<engine_result> result_;
  std::future<sparse_result> sparse_result_;
  std::thread coordinator_thread_;
  std::vector<std::unique_ptr<node>> ps_;
  std::vector<std::unique_ptr<node>> workers_;
  mutable std::mutex events_mtx_;
  std::vector<std::string> events_;  ///< appended by the coordinator node's threads
};

}  // namespace actrain
