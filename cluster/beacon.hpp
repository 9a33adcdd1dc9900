#pragma once
// A node's beacon: its heartbeat to the coordinator node, and its view of whether that node is
// still there. Internal to actrain::cluster.
#include <chrono>

#include <caf/all.hpp>

#include <actrain/cluster.hpp>
#include <actrain/protocol.hpp>

namespace actrain {

/// Spawns a beacon that asks `to` (the registrar) heartbeat_atom every `every`, on the actor
/// system's clock (CAF's test clock under the deterministic scheduler). While answers come it
/// goes on; when none came for `timeout` (the coordinator node hung, or a route to it swallows
/// everything), it quits with errc::node_down naming how long, so the node can take the
/// coordinator as gone. When `to` is down it quits normally (the node monitors `to` itself).
/// Stop it with an exit message. Answers in flight at most timeout / every + 1.
/// How often a node's beacon beats and the coordinator checks for silence: a tenth of
/// [cluster] node-timeout, never more often than [cluster] heartbeat (200 ms by default: a few
/// small messages a second per node).
std::chrono::milliseconds beacon_period(const cluster_options& opts);

caf::actor spawn_beacon(caf::actor_system& sys, heartbeat_sink_actor to,
                        std::chrono::milliseconds every, std::chrono::milliseconds timeout);

}  // namespace actrain
