#pragma once
// actrain::testing: whole clusters of simulated nodes in one process, each node a real actor
// system talking BASP over loopback sockets, with faults injected (kill a node, delay, cut or
// silence its links). Link the actrain::testing target; it is never part of the actrain binary.
#include <actrain/testing/link_relay.hpp>
#include <actrain/testing/sim_cluster.hpp>
