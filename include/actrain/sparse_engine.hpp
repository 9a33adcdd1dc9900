#pragma once
// Training a sparse model (sparse.hpp) in one actor system: sparse shards own the embedding
// table's rows (by hash or range of the id), a dense shard the model's few dense parameters,
// and workers pull and push only the rows of their mini-batches. Async by default; sync puts a
// barrier in front of every shard, as for dense models.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <actrain/protocol.hpp>
#include <actrain/run_state.hpp>
#include <actrain/sparse.hpp>
#include <actrain/sparse_data.hpp>

namespace actrain {

struct sparse_job {
  sparse_model_spec model;
  table_spec table;  ///< rows: the data's id_space when 0; dim: from the model
  row_optim_spec optim;
  std::string mode = "async";  ///< "async" or "sync"
  int workers = 4;
  int shards = 2;  ///< sparse shards of the table
  int batch = 256;
  std::int64_t epochs = 1;
  std::uint64_t seed = 42;
  int window = 2;  ///< pushes in flight per shard and worker
  /// Pull and push the whole table every step (a dense parameter server's traffic), to measure
  /// the sparse path against. Small tables only.
  bool whole_table = false;
  /// How workers' row gradients travel: "none", "fp16" (half precision: half the value bytes),
  /// "topk" (per step only the topk_fraction of the rows with the largest gradient norm; every
  /// other row's gradient is kept on the worker and added to its next one: error feedback).
  std::string compression = "none";
  double topk_fraction = 0.01;
  /// Fault injection (tests, chaos runs): worker `fail_worker` fails at step fail_after_steps;
  /// its rows go to a survivor.
  int fail_worker = -1;
  std::int64_t fail_after_steps = 0;
  /// The job fails when no worker reported for this long.
  std::chrono::milliseconds stall_timeout{60000};
  /// When set, the driver publishes the run's state there every `tick` (workers, table shards
  /// with their rows, traffic and hottest rows, rows per step, bytes per push; the HTTP
  /// endpoint's /metrics and /status read it) and the final test metrics at the end. Not owned.
  observe::metrics_hub* hub = nullptr;
  std::chrono::milliseconds tick{1000};
  /// One-line events on the driver's thread: every worker has reported (training is under way),
  /// a worker lost and where its rows went.
  std::function<void(const std::string&)> on_event;
};
/// Throws std::invalid_argument naming the bad field.
void validate(const sparse_job& j);

struct sparse_result {
  bool ok = false;
  std::string error;
  double seconds = 0;  ///< from the assignments to the last worker's last acknowledged push
  std::int64_t samples = 0;
  double samples_per_s = 0;
  /// CPU time (user + system) of the whole process over `seconds`: every thread, the shards'
  /// included (assumes nothing else runs in the process meanwhile).
  double cpu_seconds = 0;
  std::int64_t steps = 0;  ///< summed over workers
  double train_loss = 0;   ///< mean over every sample trained
  double test_auc = 0;
  double test_log_loss = 0;
  double test_accuracy = 0;
  std::vector<table_stats> tables;  ///< per sparse shard, after training
  double rows_per_step = 0;         ///< distinct rows pulled per worker step
  /// Payload bytes (ids, versions, values, dense parameters) workers sent and received, in all
  /// and per worker step.
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::int64_t bytes_pushed = 0;  ///< the gradients' part of bytes_sent
  double bytes_per_step = 0;
  double bytes_sent_per_step = 0;
  double bytes_pushed_per_step = 0;
  std::int64_t rows_held = 0;     ///< rows the shards hold
  std::int64_t memory_bytes = 0;  ///< the shards' row memory
  /// Workers lost (each one's rows went to a survivor, for the epochs it had not completed).
  int workers_lost = 0;
  /// Across nodes: every node's bytes on its TCP connections, per peer (empty in one process).
  std::vector<observe::node_traffic> nodes{};
};

/// Runs the job in `sys` (a config passed through prepare_config) and evaluates the trained
/// model on `test` (when it has rows). Blocks the calling thread. Throws std::invalid_argument
/// for an invalid job or data that does not fit it (an id >= table rows).
sparse_result run_sparse_job(caf::actor_system& sys, sparse_job job,
                             std::shared_ptr<const sparse_dataset> train,
                             const sparse_dataset& test);

// The pieces of run_sparse_job, for drivers that place the actors themselves (the cluster's
// nodes, include/actrain/cluster.hpp).

/// Fills in table.rows (0: `id_space`) and table.dim (the model's), then validates; throws
/// std::invalid_argument naming what is wrong.
void prepare_sparse_job(sparse_job& job, std::int64_t train_rows, std::uint64_t id_space);
/// The shard of the model's dense parameters (its bias); Adagrad for the adaptive row rules.
shard_actor spawn_dense_shard(caf::actor_system& sys, const sparse_job& job);
/// Sparse shard `index` of job.shards.
sparse_shard_actor spawn_sparse_shard(caf::actor_system& sys, const sparse_job& job,
                                      std::int32_t index);
/// Worker `id` over `train`, waiting for its assignment: on a thread of its own (detached), or
/// on the scheduler.
sparse_worker_actor spawn_sparse_worker(caf::actor_system& sys, const sparse_job& job,
                                        std::shared_ptr<const sparse_dataset> train,
                                        std::int32_t id, bool detached = true);
/// Drives a job over actors spawned already (local or remote handles): barriers in front of the
/// shards when sync (in this actor system), row ranges of `train_rows` assigned, progress summed,
/// a lost worker's rows reassigned, the test set evaluated, every actor stopped at the end.
/// REQUIRES: prepare_sparse_job(job, ...) ran; workers.size() == job.workers and tables.size()
/// == job.shards, in index order.
sparse_result drive_sparse_job(caf::actor_system& sys, const sparse_job& job,
                               std::int64_t train_rows, const shard_actor& dense,
                               const std::vector<sparse_shard_actor>& tables,
                               const std::vector<sparse_worker_actor>& workers,
                               const sparse_dataset& test);

/// Logits of `test` under the model held by `tables` and `dense` (rows read without being
/// created); blocks the calling thread.
std::vector<float> predict_sparse(caf::actor_system& sys, const sparse_job& job,
                                  const std::vector<sparse_shard_actor>& tables,
                                  const shard_actor& dense, const sparse_dataset& test);

}  // namespace actrain
