#pragma once
// actrain::testing: whole clusters of simulated nodes in one process, each node a real actor
// system talking BASP over loopback sockets, with faults injected (kill a node, delay, cut or
// silence its links). Link the actrain::testing target; it is never part of the actrain binary.
#include <actrain/testing/link_relay.hpp>
#include <actrain/testing/sim_cluster.hpp>

namespace actrain::testing {
/// The harness under the names an application's own tests read best:
/// `actrain::testing::cluster c{cfg}; c.kill_worker(1); c.wait(30s);`
using cluster = sim_cluster;
using cluster_config = sim_cluster_config;
using node = sim_node;
}  // namespace actrain::testing
