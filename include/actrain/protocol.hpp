#pragma once
// Every message type, atom and typed actor interface of actrain, in one place. Each message has
// one row in docs/protocol.md. Types that may cross nodes have an inspect() overload here and a
// type ID in the actrain block; register the block on every node with
// `cfg.add_message_types<caf::id_block::actrain>()` (see include/actrain/system.hpp).
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>

#include <actrain/checkpoint.hpp>
#include <actrain/errors.hpp>
#include <actrain/job.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/run_state.hpp>
#include <actrain/tensor.hpp>
#include <actrain/wire.hpp>

namespace actrain {

/// Bumped whenever a message layout changes; checked when a node registers.
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

// -- message payloads ---------------------------------------------------------------------------

/// A worker asks a shard (or a barrier in front of it) for weights to compute step `step` with.
struct pull_request {
  std::int32_t worker = 0;
  std::int64_t step = 0;
};

/// A shard's weights at `version` (pushes applied so far).
struct weights {
  std::int32_t shard = 0;
  std::int64_t version = 0;
  tensor values;
  /// Between a gateway and a proxy only: non-zero means `values` is empty and travelled before
  /// as the chunks of this transfer (cluster/chunking.hpp). Shards and workers never see it set.
  std::uint64_t transfer = 0;
};

/// A gradient slice for one shard, computed by `worker` at its step `step` from weights of
/// version `base_version`. `rows` is how many samples it averages over (for barriers that
/// weight by rows and for local aggregation).
struct gradient {
  std::int32_t worker = 0;
  std::int64_t step = 0;
  std::int64_t base_version = 0;
  std::int32_t rows = 0;
  tensor values;
  std::uint64_t transfer = 0;  ///< as in weights: values sent before as chunks (proxy -> gateway)
  /// Compression (job_spec::compression); every receiver expands these into `values` first.
  /// fp16: the slice as half-precision bit patterns, and `values` empty.
  std::vector<std::uint16_t> half_values{};
  /// topk: `values` holds only the entries at these positions of the slice (increasing), and
  /// `length` is the slice's length; the other entries are zero.
  std::vector<std::uint32_t> indices{};
  std::int64_t length = 0;
};

/// What a shard says after applying (or dropping) a push.
struct push_ack {
  std::int64_t version = 0;    ///< the shard's version after this push
  std::int64_t staleness = 0;  ///< shard version minus the gradient's base version, on arrival
  /// false: dropped by the staleness policy or as late. true: taken; with buffered
  /// aggregation (staleness_policy::buffer) it may wait in the buffer, the version unchanged.
  bool applied = true;
};

/// One update a primary shard applied, as its replica applies it (chain replication,
/// [cluster] replicas = 1): the gradient after the primary's staleness rule (delay compensation,
/// buffering), the step size and momentum it used. The replica runs the same optimizer step on
/// the same values, so both hold the same bits. `worker` and `step` name the push it came from:
/// a worker that resends a push after a failover finds it applied already.
struct replica_update {
  std::int32_t shard = 0;
  std::int64_t version = 0;  ///< the primary's version after this update (replica's + 1)
  float lr = 0;
  float momentum = -1;  ///< the momentum coefficient the step used; < 0: the rule has none
  std::int64_t staleness = 0;
  std::int32_t worker = 0;
  std::int64_t step = 0;
  tensor grad;
};

/// A shard's (or barrier's) counters.
struct shard_stats {
  std::int32_t shard = 0;
  std::int64_t version = 0;
  std::int64_t pushes = 0;
  std::int64_t pulls = 0;
  std::int64_t rejected = 0;                      ///< bad length or non-finite values
  std::int64_t dropped_stale = 0;                 ///< dropped by the staleness policy
  std::int64_t dropped_late = 0;                  ///< barrier: slices for an already finished step
  std::int64_t mailbox = 0;                       ///< messages waiting when the stats were taken
  std::vector<std::int64_t> staleness_histogram;  ///< index = staleness (last bin: >= size-1)
  double mean_staleness = 0;                      ///< running mean of applied pushes' staleness
  double momentum = 0;             ///< momentum coefficient in use (0: the rule has none)
  std::int64_t uncompensated = 0;  ///< stale pushes applied without delay compensation
  /// Barrier only: the step it is holding back, for how long, and for which workers' slices
  /// (waiting_step = -1 when nothing is waiting). Feeds the coordinator's stall diagnosis.
  std::int64_t waiting_step = -1;
  double waiting_s = 0;
  std::vector<std::int32_t> waiting_for;
};

/// A worker's report to the coordinator, every few steps.
struct progress_report {
  std::int32_t worker = 0;
  std::int64_t step = 0;
  std::int64_t samples = 0;  ///< samples since the last report
  double loss_sum = 0;       ///< summed loss over those samples
  double busy_seconds = 0;   ///< compute time since the last report
  std::int64_t max_staleness = 0;
  bool finished = false;  ///< the worker has done all the work it was assigned
  /// Rows of batches skipped when a resumed worker replayed its readers to the checkpoint's cut
  /// (trained before the cut: counted, not timed).
  std::int64_t replayed = 0;
  /// Payload bytes this worker sent and received since the last report (sparse workers: row
  /// ids, versions and values of their pulls and pushes; 0 where not counted).
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::int64_t bytes_pushed = 0;  ///< the part of bytes_sent that carried gradients
};

/// What a finished job returns: the coordinator's reply to run_atom.
struct engine_result {
  bool ok = false;
  bool stopped = false;                 ///< ended by a stop request (a signal): resumable
  std::string error;                    ///< why the job failed or stopped, when !ok
  std::vector<float> params;            ///< final parameters, assembled from the shards
  std::vector<progress_point> history;  ///< one point per evaluation
  double seconds = 0;                   ///< wall time from the first assignment to the last step
  std::int64_t samples = 0;
  double samples_per_s = 0;
  eval_result test;                               ///< final evaluation
  std::vector<std::int64_t> staleness_histogram;  ///< summed over shards
  std::vector<shard_stats> shards;
  int workers_lost = 0;
  std::int64_t checkpoints = 0;          ///< checkpoint files written
  std::int64_t checkpoints_skipped = 0;  ///< due while the previous one was still being written
  std::string last_checkpoint;           ///< path of the newest one ("" = none)
  double checkpoint_write_s = 0;         ///< seconds spent writing them (off the training path)
  std::int64_t checkpoint_bytes = 0;     ///< size of the newest one
  /// Gradient payload bytes the workers pushed and weight bytes they received (all workers,
  /// from their progress reports): what compression saves is measured here.
  std::int64_t bytes_pushed = 0;
  std::int64_t bytes_received = 0;
  /// Across nodes: every node's bytes on its TCP connections, per peer (empty in one process).
  std::vector<observe::node_traffic> nodes{};
  /// The shard whose loss ended the run when the coordinator was told to leave that to its
  /// caller (coordinator_config::shard_loss_recoverable); -1: none.
  std::int32_t shard_lost = -1;
};

/// One piece of a large tensor crossing nodes: elements [offset, offset + part.size()) of a
/// tensor of shape `shape`, piece `index` of `count` of transfer `transfer` (numbered by the
/// sender). The receiver reassembles the whole before anything else sees it.
struct tensor_chunk {
  std::uint64_t transfer = 0;
  std::int32_t index = 0;
  std::int32_t count = 0;
  std::int64_t offset = 0;
  shape_t shape;
  tensor part;
};

/// Where worker nodes reach a ps node over a connection of their own (port 0: nowhere; they
/// route through the coordinator node).
struct ps_endpoint {
  std::string host;
  std::uint16_t port = 0;
  /// The ps node's bulk-channel port (cluster_options::bulk_channel), 0 = none: workers' pulls
  /// and pushes go over BASP.
  std::uint16_t bulk_port = 0;
};

/// One TCP connection of a node's process as the kernel counts it: its two endpoints
/// ("address:port") and the bytes the peer acknowledged and that arrived. The registrar joins
/// every node's connections by their endpoints to name each one's peer.
struct socket_traffic {
  std::string local;
  std::string peer;
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
};

/// The contiguous range of the flat parameter vector that shard `index` owns.
struct shard_range_t {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

/// Range partitioning: a pure function of model size and shard count (sizes differ by <= 1).
shard_range_t param_range(std::int64_t num_params, int shards, int index);

// -- sparse parameters (actors/sparse_shard.hpp) -----------------------------------------------

/// A worker asks a sparse shard (or a sparse barrier in front of it) for the rows of `ids` (each
/// owned by that shard, distinct) to compute step `step` with. step -1: as the table stands
/// (evaluation).
struct row_request {
  std::int32_t worker = 0;
  std::int64_t step = 0;
  std::vector<std::uint64_t> ids;
};

/// The rows asked for, in the order asked: ids.size() x dim floats, and each row's version
/// (updates applied to it so far).
struct row_block {
  std::int32_t shard = 0;
  std::int64_t version = 0;  ///< pushes the shard applied so far
  std::vector<float> values;
  std::vector<std::int64_t> row_versions;
};

/// Row gradients for one sparse shard: ids.size() x dim floats, computed by `worker` at `step`
/// from rows of `base_versions` (one per id, from the row_block it pulled). `rows`: samples the
/// gradient averages over. With fp16 compression the values travel as half-precision bit
/// patterns in `half_values` (and `values` is empty); the shard decodes them before its rule.
struct row_gradient {
  std::int32_t worker = 0;
  std::int64_t step = 0;
  std::int32_t rows = 0;
  std::vector<std::uint64_t> ids;
  std::vector<std::int64_t> base_versions;
  std::vector<float> values;
  std::vector<std::uint16_t> half_values;
};

/// A sparse shard's counters: traffic, rows held, memory and the hottest rows.
struct table_stats {
  std::int32_t shard = 0;
  std::int64_t version = 0;  ///< pushes applied
  std::int64_t pushes = 0;
  std::int64_t pulls = 0;
  std::int64_t rows_pulled = 0;
  std::int64_t rows_pushed = 0;
  std::int64_t rows_held = 0;
  std::int64_t evicted = 0;
  std::int64_t rejected = 0;  ///< malformed messages refused
  std::int64_t memory_bytes = 0;
  std::int64_t bytes_in = 0;   ///< payload bytes of pulls' ids and pushes received
  std::int64_t bytes_out = 0;  ///< payload bytes of rows sent
  double mean_staleness = 0;   ///< per pushed row: its version minus the version it was pulled at
  std::vector<std::uint64_t> hot_ids;  ///< the most pulled + pushed rows, most first
  std::vector<std::int64_t> hot_counts;
};

// -- inspectors ---------------------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pull_request& x) {
  return f(caf::meta::type_name("pull_request"), x.worker, x.step);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, weights& x) {
  return f(caf::meta::type_name("weights"), x.shard, x.version, x.values, x.transfer);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gradient& x) {
  return f(caf::meta::type_name("gradient"), x.worker, x.step, x.base_version, x.rows, x.values,
           x.transfer, wire_block(x.half_values), wire_block(x.indices), x.length);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tensor_chunk& x) {
  return f(caf::meta::type_name("tensor_chunk"), x.transfer, x.index, x.count, x.offset, x.shape,
           x.part);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_update& x) {
  return f(caf::meta::type_name("replica_update"), x.shard, x.version, x.lr, x.momentum,
           x.staleness, x.worker, x.step, x.grad);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, push_ack& x) {
  return f(caf::meta::type_name("push_ack"), x.version, x.staleness, x.applied);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_stats& x) {
  return f(caf::meta::type_name("shard_stats"), x.shard, x.version, x.pushes, x.pulls, x.rejected,
           x.dropped_stale, x.dropped_late, x.mailbox, x.staleness_histogram,
           wire_bits(x.mean_staleness), wire_bits(x.momentum), x.uncompensated, x.waiting_step,
           wire_bits(x.waiting_s), x.waiting_for);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, progress_report& x) {
  return f(caf::meta::type_name("progress_report"), x.worker, x.step, x.samples,
           wire_bits(x.loss_sum), wire_bits(x.busy_seconds), x.max_staleness, x.finished,
           x.replayed, x.bytes_sent, x.bytes_received, x.bytes_pushed);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_checkpoint& x) {
  return f(caf::meta::type_name("shard_checkpoint"), x.shard, x.version, x.step,
           wire_block(x.values), x.opt_steps, wire_block(x.opt_slots));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_work& x) {
  return f(caf::meta::type_name("saved_work"), x.begin, x.end, x.epochs);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_worker& x) {
  return f(caf::meta::type_name("saved_worker"), x.worker, x.start_step, x.step, x.alive, x.work);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint& x) {
  return f(caf::meta::type_name("checkpoint"), x.job, x.sequence, x.step, x.samples,
           wire_bits(x.seconds), x.next_eval_samples, x.last_eval_step, x.history, x.shards,
           x.workers);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_endpoint& x) {
  return f(caf::meta::type_name("ps_endpoint"), x.host, x.port, x.bulk_port);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, socket_traffic& x) {
  return f(caf::meta::type_name("socket_traffic"), x.local, x.peer, x.bytes_sent, x.bytes_received);
}
namespace observe {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_traffic& x) {
  return f(caf::meta::type_name("peer_traffic"), x.peer, x.bytes_sent, x.bytes_received);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_traffic& x) {
  return f(caf::meta::type_name("node_traffic"), x.node, x.bytes_sent, x.bytes_received, x.peers);
}
}  // namespace observe
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_range_t& x) {
  return f(caf::meta::type_name("shard_range"), x.begin, x.end);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, class_report& x) {
  return f(caf::meta::type_name("class_report"), wire_block(x.precision), wire_block(x.recall),
           wire_block(x.average_precision), wire_block(x.support), wire_bits(x.macro_precision),
           wire_bits(x.macro_recall), wire_bits(x.macro_average_precision), wire_bits(x.auc));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_result& x) {
  return f(caf::meta::type_name("eval_result"), wire_bits(x.loss), wire_bits(x.accuracy), x.rows,
           x.classes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, progress_point& x) {
  return f(caf::meta::type_name("progress_point"), x.epoch, x.step, x.samples, wire_bits(x.seconds),
           wire_bits(x.train_loss), wire_bits(x.test_loss), wire_bits(x.test_accuracy), x.classes);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_result& x) {
  return f(caf::meta::type_name("engine_result"), x.ok, x.stopped, x.error, wire_block(x.params),
           x.history, wire_bits(x.seconds), x.samples, wire_bits(x.samples_per_s), x.test,
           x.staleness_histogram, x.shards, x.workers_lost, x.checkpoints, x.checkpoints_skipped,
           x.last_checkpoint, wire_bits(x.checkpoint_write_s), x.checkpoint_bytes, x.bytes_pushed,
           x.bytes_received, x.nodes, x.shard_lost);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_request& x) {
  return f(caf::meta::type_name("row_request"), x.worker, x.step, wire_block(x.ids));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_block& x) {
  return f(caf::meta::type_name("row_block"), x.shard, x.version, wire_block(x.values),
           wire_block(x.row_versions));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_gradient& x) {
  return f(caf::meta::type_name("row_gradient"), x.worker, x.step, x.rows, wire_block(x.ids),
           wire_block(x.base_versions), wire_block(x.values), wire_block(x.half_values));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, table_stats& x) {
  return f(caf::meta::type_name("table_stats"), x.shard, x.version, x.pushes, x.pulls,
           x.rows_pulled, x.rows_pushed, x.rows_held, x.evicted, x.rejected, x.memory_bytes,
           x.bytes_in, x.bytes_out, wire_bits(x.mean_staleness), wire_block(x.hot_ids),
           wire_block(x.hot_counts));
}

// -- typed interfaces ---------------------------------------------------------------------------

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

CAF_BEGIN_TYPE_ID_BLOCK(actrain, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(actrain, (actrain::tensor))
CAF_ADD_TYPE_ID(actrain, (actrain::pull_request))
CAF_ADD_TYPE_ID(actrain, (actrain::weights))
CAF_ADD_TYPE_ID(actrain, (actrain::gradient))
CAF_ADD_TYPE_ID(actrain, (actrain::push_ack))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_stats))
CAF_ADD_TYPE_ID(actrain, (actrain::progress_report))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_checkpoint))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_range_t))
CAF_ADD_TYPE_ID(actrain, (actrain::shard_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::worker_assignment))
CAF_ADD_TYPE_ID(actrain, (actrain::released_work))
CAF_ADD_TYPE_ID(actrain, (actrain::worker_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::coordinator_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::tensor_chunk))
CAF_ADD_TYPE_ID(actrain, (actrain::chunked_shard_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::ps_endpoint))
CAF_ADD_TYPE_ID(actrain, (std::vector<actrain::ps_endpoint>))
CAF_ADD_TYPE_ID(actrain, (actrain::socket_traffic))
CAF_ADD_TYPE_ID(actrain, (std::vector<actrain::socket_traffic>))
CAF_ADD_TYPE_ID(actrain, (actrain::observe::node_traffic))
CAF_ADD_TYPE_ID(actrain, (std::vector<actrain::observe::node_traffic>))
CAF_ADD_TYPE_ID(actrain, (actrain::registrar_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::registrar_impl))
CAF_ADD_TYPE_ID(actrain, (actrain::worker_impl))
CAF_ADD_TYPE_ID(actrain, (actrain::engine_result))
CAF_ADD_TYPE_ID(actrain, (actrain::coordinator_impl))
CAF_ADD_TYPE_ID(actrain, (actrain::checkpoint))
CAF_ADD_TYPE_ID(actrain, (actrain::checkpoint_writer_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::row_request))
CAF_ADD_TYPE_ID(actrain, (actrain::row_block))
CAF_ADD_TYPE_ID(actrain, (actrain::row_gradient))
CAF_ADD_TYPE_ID(actrain, (actrain::table_stats))
CAF_ADD_TYPE_ID(actrain, (actrain::sparse_shard_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::sparse_assignment))
CAF_ADD_TYPE_ID(actrain, (actrain::sparse_worker_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::replica_update))
CAF_ADD_TYPE_ID(actrain, (actrain::replica_sink_actor))
CAF_ADD_TYPE_ID(actrain, (actrain::replicated_shard_actor))
CAF_END_TYPE_ID_BLOCK(actrain)
