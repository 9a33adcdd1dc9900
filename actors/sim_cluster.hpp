#pragma once
// Simulated nodes: a whole cluster in one process, each node with its own actor_system and
// middleman, talking BASP over real loopback sockets (127.0.0.1, port 0). The nodes run the same
// functions as `actrain node` processes (actors/cluster.hpp), so a test of the harness is a test
// of the deployment path. Fault injection: kill a node's actors, slow a worker, add nodes with
// another token. See docs/testing.md.
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/cluster.hpp"

namespace actrain {

struct sim_cluster_config {
  job_spec job;                          ///< model dims fitted to `data`; job.workers worker nodes
  std::shared_ptr<const job_data> data;  ///< shared read-only by every node
  int ps_nodes = 2;                      ///< job.shards are spread over these
  cluster_options cluster;               ///< token, heartbeat, join_timeout (host/port ignored)
  std::vector<double> worker_delays;     ///< per worker node: extra seconds per step (stragglers)
  engine_hooks hooks;                    ///< the coordinator's hooks (its own threads)
  int threads_per_node = 2;              ///< scheduler threads of each node's actor system
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

  /// Starts one more worker node with these options (host/port are filled in); returns its
  /// index for worker_outcome(). For tests of refusals (wrong token, a full cluster).
  int add_worker_node(cluster_options opts);

  /// The coordinator's result; throws std::runtime_error if it takes longer than `bound`.
  engine_result wait(std::chrono::milliseconds bound);
  /// How worker node `i` ended; throws std::runtime_error if it takes longer than `bound`.
  node_outcome worker_outcome(int i, std::chrono::milliseconds bound);
  node_outcome ps_outcome(int i, std::chrono::milliseconds bound);

  /// The coordinator's event lines so far (joins, refusals, lost workers).
  std::vector<std::string> events() const;

 private:
  struct node {
    std::shared_ptr<node_control> control = std::make_shared<node_control>();
    std::future<node_outcome> outcome;
    std::thread thread;
  };
  void start_node(node& n, node_role role, cluster_options opts);

  sim_cluster_config cfg_;
  std::uint16_t port_ = 0;
  std::shared_ptr<node_control> coordinator_control_ = std::make_shared<node_control>();
  std::future<engine_result> result_;
  std::thread coordinator_thread_;
  std::vector<std::unique_ptr<node>> ps_;
  std::vector<std::unique_ptr<node>> workers_;
  mutable std::mutex events_mtx_;
  std::vector<std::string> events_;  ///< appended by the coordinator node's threads
};

}  // namespace actrain
