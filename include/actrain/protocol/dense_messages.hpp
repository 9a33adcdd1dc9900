#pragma once
// The payloads of dense training and of the cluster: pulls, weights, gradients and acks between
// workers and shards, progress reports, a finished job's result, chunks of large tensors, ps
// endpoints and socket traffic; each with its inspect(). Part of <actrain/protocol.hpp>.
#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <actrain/checkpoint.hpp>
#include <actrain/job.hpp>
#include <actrain/protocol/inspect.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/run_state.hpp>
#include <actrain/tensor.hpp>
#include <actrain/wire.hpp>

namespace actrain {

/// A worker asks a shard (or a barrier in front of it) for weights to compute step `step` with.
/// Worker -1 is the coordinator (evaluations and the job's result): a shard that keeps a weight
/// average (staleness_policy::average) answers it with the average.
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
typename Inspector::result_type inspect(Inspector& f, ps_endpoint& x) {
  return f(caf::meta::type_name("ps_endpoint"), x.host, x.port, x.bulk_port);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, socket_traffic& x) {
  return f(caf::meta::type_name("socket_traffic"), x.local, x.peer, x.bytes_sent, x.bytes_received);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_range_t& x) {
  return f(caf::meta::type_name("shard_range"), x.begin, x.end);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_result& x) {
  return f(caf::meta::type_name("engine_result"), x.ok, x.stopped, x.error, wire_block(x.params),
           x.history, wire_bits(x.seconds), x.samples, wire_bits(x.samples_per_s), x.test,
           x.staleness_histogram, x.shards, x.workers_lost, x.checkpoints, x.checkpoints_skipped,
           x.last_checkpoint, wire_bits(x.checkpoint_write_s), x.checkpoint_bytes, x.bytes_pushed,
           x.bytes_received, x.nodes, x.shard_lost);
}

}  // namespace actrain
