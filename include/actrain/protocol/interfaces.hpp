#pragma once
// The typed actor interfaces: shards and what stands in front of them, workers, the coordinator,
// the registrar and the checkpoint writer, with the assignments workers are given. Part of
// <actrain/protocol.hpp>.
#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <actrain/checkpoint.hpp>
#include <actrain/job.hpp>
#include <actrain/protocol/atoms.hpp>
#include <actrain/protocol/dense_messages.hpp>
#include <actrain/protocol/sparse_messages.hpp>
#include <actrain/run_state.hpp>
#include <actrain/wire.hpp>

namespace actrain {

/// A parameter shard, or anything that stands in front of one (a barrier). Workers use only this.
using shard_actor =
    caf::typed_actor<caf::replies_to<pull_atom, pull_request>::with<weights>,
                     caf::replies_to<push_atom, gradient>::with<push_ack>,
                     caf::replies_to<push_pull_atom, gradient>::with<weights>,
                     caf::replies_to<stats_atom>::with<shard_stats>,
                     caf::replies_to<checkpoint_atom, std::int64_t>::with<shard_checkpoint>,
                     caf::replies_to<restore_atom, shard_checkpoint>::with<std::int64_t>,
                     caf::reacts_to<leave_atom, std::int32_t, bool>>;

/// What a primary shard needs of its replica: the state to start from (restore) and every
/// update it applies after that, in order (replicate -> the replica's version).
using replica_sink_actor =
    caf::typed_actor<caf::replies_to<replicate_atom, replica_update>::with<std::int64_t>,
                     caf::replies_to<restore_atom, shard_checkpoint>::with<std::int64_t>>;

/// What a dense shard is spawned as: a shard_actor that can also be a replica (replicate) and be
/// given one (replica). A replica is a whole shard: promoted, it answers workers as it stands.
using replicated_shard_actor =
    shard_actor::extend<caf::replies_to<replicate_atom, replica_update>::with<std::int64_t>,
                        caf::reacts_to<replica_atom, replica_sink_actor>>;

/// A sparse shard (the rows of one embedding table that map to it), or a sparse barrier in front
/// of one. leave: a worker finished or was lost (a barrier stops waiting for it).
using sparse_shard_actor =
    caf::typed_actor<caf::replies_to<pull_atom, row_request>::with<row_block>,
                     caf::replies_to<push_atom, row_gradient>::with<push_ack>,
                     caf::replies_to<stats_atom>::with<table_stats>,
                     caf::reacts_to<leave_atom, std::int32_t>>;

/// A shard interface that also takes chunks: shard_gateway (in front of a shard or barrier, on
/// its node) and shard_proxy (standing in for a remote one). Converts to shard_actor.
using chunked_shard_actor =
    shard_actor::extend<caf::replies_to<chunk_atom, tensor_chunk>::with<std::int32_t>>;

/// What a worker is given: its shards, the rows of the training set it owns, how long to run.
struct worker_assignment {
  std::int32_t worker = 0;
  std::vector<shard_actor> shards;
  std::vector<shard_range_t> ranges;  ///< parameter range of each shard
  std::vector<shard_range_t> rows;    ///< training rows [begin, end) this worker walks
  std::int64_t epochs = 1;            ///< passes over its rows
  std::int64_t start_step = 0;        ///< first step number (continues after a reassignment)
  caf::actor reports_to;              ///< where progress goes (the coordinator)
  /// Resume: batches of this and the following assignments to read and skip before computing
  /// (they were trained before the checkpoint's cut).
  std::int64_t skip = 0;
  /// The shards have hot replicas: a shard that stops answering may move (moved_atom), so the
  /// worker keeps its unacknowledged pushes to resend and waits for the move instead of failing.
  bool replicated = false;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_assignment& x) {
  return f(caf::meta::type_name("worker_assignment"), x.worker, x.shards, x.ranges, x.rows,
           x.epochs, x.start_step, x.reports_to, x.skip, x.replicated);
}

/// What a worker gives up for a worker that joined the job (release_atom). Only epochs not
/// started are split: a range being walked keeps its current epoch; of each range's later epochs
/// the worker keeps the first rows and gives up the last 1/share. `kept` replaces the last
/// `replaced` entries of the worker's assignments (coordinator's list, in the order given: the
/// ones it has not finished), so a checkpoint's replay of the list reads what the worker reads.
struct released_work {
  std::int32_t replaced = 0;
  std::vector<saved_work> kept;
  std::vector<saved_work> given;  ///< rows for the joining worker, each with its epochs
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, released_work& x) {
  return f(caf::meta::type_name("released_work"), x.replaced, x.kept, x.given);
}

/// A worker: started with an assignment (again to add rows), stopped with stop_atom; asked to
/// release part of its work when another joins (share >= 2; nothing while it replays a resumed
/// cut or has stopped); told that a shard moved to its replica (moved: index, new handle).
using worker_actor =
    caf::typed_actor<caf::reacts_to<assign_atom, worker_assignment>, caf::reacts_to<stop_atom>,
                     caf::replies_to<release_atom, std::int32_t>::with<released_work>,
                     caf::reacts_to<moved_atom, std::int32_t, shard_actor>>;
/// What a worker is spawned as: worker_actor plus its own watchdog ticks. Handed out as
/// worker_actor only.
using worker_impl = worker_actor::extend<caf::reacts_to<watchdog_atom>>;

/// Compute slots shared by the CPU workers of one process (never across nodes): a worker asks
/// for a slot (slot_atom; answered true once it holds one, in the order asked), pulls its weights
/// and computes its step holding it, and leaves it (leave_atom, slot_atom) once its step's
/// gradient is computed. A worker that ends holding or waiting for a slot gives it up.
using compute_gate_actor = caf::typed_actor<caf::replies_to<slot_atom>::with<bool>,
                                            caf::reacts_to<leave_atom, slot_atom>>;

/// What a sparse worker is given: the dense shard (or barrier) of its model's dense parameters,
/// the table's shards (index = table_shard_of), its rows of the training set, how long to run.
struct sparse_assignment {
  std::int32_t worker = 0;
  shard_actor dense;
  std::vector<sparse_shard_actor> tables;
  std::vector<shard_range_t> rows;
  std::int64_t epochs = 1;
  caf::actor reports_to;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sparse_assignment& x) {
  return f(caf::meta::type_name("sparse_assignment"), x.worker, x.dense, x.tables, x.rows, x.epochs,
           x.reports_to);
}
/// A worker of a sparse model: pull the batch's rows -> forward/backward -> push row gradients.
using sparse_worker_actor =
    caf::typed_actor<caf::reacts_to<assign_atom, sparse_assignment>, caf::reacts_to<stop_atom>>;

/// Where workers report; the coordinator.
/// stop (why): end the job now, as stopped with `why` (a signal); with checkpoints on, a last
/// checkpoint is written first (in sync mode a cut a few steps ahead), so the job can resume.
/// join_worker (index, handle, node name): a worker that joined the running job (a cluster's
/// registrar forwards it); it gets a share of the rows still to train, released by the others.
/// heartbeat (node name): that node is alive (the registrar forwards its beacon's heartbeats).
/// With coordinator_config::node_timeout, a watched node silent for that long is lost: every
/// actor of it is taken as down (a worker's rows go to others, a shard's replica takes over or
/// the job fails) and told to exit.
using coordinator_actor =
    caf::typed_actor<caf::reacts_to<progress_atom, progress_report>,
                     caf::replies_to<run_atom>::with<engine_result>,
                     caf::reacts_to<stop_atom, std::string>,
                     caf::reacts_to<join_worker_atom, std::int32_t, worker_actor, std::string>,
                     caf::reacts_to<heartbeat_atom, std::string>>;
/// What a coordinator is spawned as: coordinator_actor plus its own periodic ticks (console,
/// metrics, stall detection) and its silence checks (heartbeat, every node_check). Handed out as
/// coordinator_actor only.
using coordinator_impl =
    coordinator_actor::extend<caf::reacts_to<tick_atom>, caf::reacts_to<heartbeat_atom>>;

/// Where a node's beacon sends its heartbeats (the registrar): answers true for a registered
/// node, false for any other.
using heartbeat_sink_actor = caf::typed_actor<caf::replies_to<heartbeat_atom>::with<bool>>;

/// The coordinator's checkpoint writer (on a thread of its own, off the training path): writes
/// one checkpoint into the run's folder and answers (path, bytes, seconds), or an error naming
/// what failed.
using checkpoint_writer_actor =
    caf::typed_actor<caf::replies_to<checkpoint>::with<std::string, std::int64_t, double>>;

/// The coordinator node's registrar, published on [cluster] host:port.
///   hello: (role, token, protocol_version, byte-order probe, node name) -> (index, count of
///          that role, the registrar's probe); refused with bad_token / version_mismatch /
///          bad_config naming what differs.
///   join_shard / join_worker: (index, handle) once the node's actors run.
///   join_front: (shard index, handle) a sync/ssp barrier a ps node runs in front of its own
///          shard (sent before that shard's join_shard): workers reach it over the node's bulk
///          channel, and it reaches its shard without crossing a node.
///   join_replica: (shard index, handle) a ps node's replica of another ps node's shard
///          ([cluster] replicas = 1: shard s is replicated on the ps node after its own).
///   peer: (ps index, endpoint) where workers reach that ps node (host "" = as seen here).
///   peers -> every ps node's endpoint, once all are known (worker nodes dial them).
///   members -> true once every shard and worker joined (the coordinator node waits on it).
///   run: (coordinator) the job runs: worker nodes that register from now on (up to [cluster]
///          max-workers) join it through the coordinator.
///   traffic: (the sending node's TCP connections, final) -> true: its bytes per connection
///          (sampled every 100 ms), every half second and once more (final) when its actors
///          are down.
///   traffic: (wait) -> every reporting node's bytes per peer (the coordinator node's own
///          included); with wait, once every registered node sent its final report or two
///          seconds passed (a failed job's nodes may never send one: asked without wait).
///   heartbeat -> true when the sender's node is registered (every node-timeout / 10 from its
///          beacon); the registrar passes it on to the running job's coordinator, by name.
///   (registrar_impl adds tick, sent to itself: see below.)
///   stop -> a status line; tells every joined actor to stop and quits.
using registrar_actor = caf::typed_actor<
    caf::replies_to<hello_atom, std::string, std::string, std::uint32_t, tensor,
                    std::string>::with<std::int32_t, std::int32_t, tensor>,
    caf::reacts_to<join_shard_atom, std::int32_t, shard_actor>,
    caf::reacts_to<join_replica_atom, std::int32_t, replicated_shard_actor>,
    caf::reacts_to<join_front_atom, std::int32_t, shard_actor>,
    caf::reacts_to<join_worker_atom, std::int32_t, worker_actor>,
    caf::reacts_to<peer_atom, std::int32_t, ps_endpoint>,
    caf::replies_to<peers_atom>::with<std::vector<ps_endpoint>>,
    caf::replies_to<traffic_atom, std::vector<socket_traffic>, bool>::with<bool>,
    caf::replies_to<traffic_atom, bool>::with<std::vector<observe::node_traffic>>,
    caf::replies_to<members_atom>::with<bool>, caf::reacts_to<run_atom, coordinator_actor>,
    caf::replies_to<heartbeat_atom>::with<bool>, caf::replies_to<stop_atom>::with<std::string>,
    caf::reacts_to<stop_atom, std::string>>;
/// What the registrar is spawned as: registrar_actor plus the tick it sends itself every 100 ms
/// (it samples its own node's connections and ends a wait for final traffic reports).
using registrar_impl = registrar_actor::extend<caf::reacts_to<tick_atom>>;

}  // namespace actrain
