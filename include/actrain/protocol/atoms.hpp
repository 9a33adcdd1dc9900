#pragma once
// The protocol's version and its atoms: the first element of every actrain message. Part of
// <actrain/protocol.hpp>.
#include <cstdint>

#include <caf/all.hpp>

namespace actrain {

/// Bumped whenever a message layout changes; checked when a node registers.
/// 15: leave carries whether the worker was lost (a lost one's late pushes never bring it back);
/// 14: a ps node's own sync/ssp barriers join the registrar (join_front);
/// 12: heartbeats between a node's beacon, the registrar and the coordinator (heartbeat);
/// 11: hot replicas of shards (replicate, replica, moved, join_replica);
/// 10: a worker joins a running job (coordinator join_worker, worker release);
/// 7: sparse shards' row messages; 5: doubles as their IEEE 754 bits, float vectors as raw blocks
/// (wire.hpp); 4: checkpoints at a step, resumed assignments.
constexpr std::uint32_t protocol_version = 15;

// -- atoms (at most 10 characters) --------------------------------------------------------------
using pull_atom = caf::atom_constant<caf::atom("pull")>;
using push_atom = caf::atom_constant<caf::atom("push")>;
using push_pull_atom = caf::atom_constant<caf::atom("pushpull")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using assign_atom = caf::atom_constant<caf::atom("assign")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;
/// Coordinator -> shard or front (step): the shard's checkpoint. A sync barrier answers after
/// exactly `step` global steps (one consistent cut of every shard); -1: as the shard stands now.
using checkpoint_atom = caf::atom_constant<caf::atom("ckpt")>;

/// Coordinator -> shard or barrier (worker, lost): a worker finished or was lost; a barrier stops
/// waiting for it. A finished worker's next push brings it back (it was given more rows); a lost
/// one's never does: its last pushes may reach a barrier on a ps node after this message (they
/// cross on the bulk channel, this on the coordinator's connection).
using leave_atom = caf::atom_constant<caf::atom("leave")>;
/// Proxy <-> gateway: one chunk of a large tensor (cluster/chunking.hpp).
using chunk_atom = caf::atom_constant<caf::atom("chunk")>;
/// Coordinator -> worker (share): give up 1/share of the work not started yet (released_work).
using release_atom = caf::atom_constant<caf::atom("release")>;
/// Primary shard -> its replica (replica_update): apply the update the primary applied.
using replicate_atom = caf::atom_constant<caf::atom("replicate")>;
/// Coordinator -> primary shard (replica handle): stream every applied update to it from now on.
using replica_atom = caf::atom_constant<caf::atom("replica")>;
/// Coordinator -> worker (shard index, handle): that shard's primary was lost; its replica took
/// over at this handle.
using moved_atom = caf::atom_constant<caf::atom("moved")>;
/// A worker to itself, every worker_config::timeout (worker_impl, never from outside).
using watchdog_atom = caf::atom_constant<caf::atom("watchdog")>;
// Registration of nodes with the coordinator node's registrar (registrar_actor below).
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using join_shard_atom = caf::atom_constant<caf::atom("joinshard")>;
using join_worker_atom = caf::atom_constant<caf::atom("joinworker")>;
using join_replica_atom = caf::atom_constant<caf::atom("joinrepl")>;
using join_front_atom = caf::atom_constant<caf::atom("joinfront")>;
using members_atom = caf::atom_constant<caf::atom("members")>;
using peer_atom = caf::atom_constant<caf::atom("peer")>;
using peers_atom = caf::atom_constant<caf::atom("peers")>;
/// A node's TCP connections and their byte counts, to the registrar (per-node traffic).
using traffic_atom = caf::atom_constant<caf::atom("traffic")>;
/// Liveness: a node's beacon -> registrar every node-timeout / 10 (answered: true), the
/// registrar -> coordinator (node name), and the coordinator to itself (its silence check).
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
/// A compute slot of one process's CPU workers (compute_gate_actor): asked for, and left.
using slot_atom = caf::atom_constant<caf::atom("slot")>;

}  // namespace actrain
