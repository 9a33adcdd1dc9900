#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <actrain/data.hpp>
#include <actrain/metrics.hpp>
#include <actrain/model.hpp>
#include <actrain/optim.hpp>

namespace actrain {

/// Where a job's data comes from.
struct data_spec {
  std::string kind = "fashion_mnist";  ///< "fashion_mnist", "synthetic_linear", "csv"
  std::string path;                ///< fashion_mnist: directory ("" = Debian's); csv: train file
  std::string test_path;           ///< csv: test file ("" = hold out test_fraction)
  std::string label;               ///< csv: label column name ("" = last column)
  double test_fraction = 0.1;      ///< csv without test_path: the last fraction of rows is held out
  bool header = true;              ///< csv: the first line names the columns
  std::string delimiter = ",";     ///< csv: one character between fields ("tab" or "\t": a tab)
  bool standardize = false;        ///< csv: standardize features (and a regression target)
  std::int64_t rows = 100000;      ///< synthetic_linear: training rows
  std::int64_t test_rows = 10000;  ///< synthetic_linear: held-out rows
  int features = 100;              ///< synthetic_linear
  float noise = 0.01f;             ///< synthetic_linear: noise standard deviation
  std::int64_t train_subset = 0;   ///< use only the first N training rows (0 = all)
  std::int64_t test_subset = 0;    ///< use only the first N test rows (0 = all)
};

/// When and where a job saves checkpoints ([checkpoint] in an INI file).
struct checkpoint_spec {
  std::string dir;               ///< the run's checkpoint folder ("" = no checkpoints)
  std::int64_t every_steps = 0;  ///< sync: global steps; async/ssp: updates (all workers' steps)
  double every_seconds = 0;      ///< also (or instead) after this much training time
  int keep = 3;                  ///< newest checkpoints kept in dir
  bool at_end = true;            ///< one more after the final evaluation
};

/// A whole training job: a plain value, filled from an INI file by the apps layer.
struct job_spec {
  std::string name = "job";
  model_spec model;
  optim_spec optim;
  data_spec data;
  staleness_policy staleness;
  std::string mode = "async";        ///< "async", "sync", "ssp"
  int backup = 0;                    ///< sync: K = workers - backup
  int ssp_bound = 0;                 ///< ssp: max steps ahead of the slowest worker
  std::string late_policy = "drop";  ///< sync with backup: "drop" or "fold" late slices
  int workers = 1;
  int shards = 1;
  int batch = 64;              ///< rows per worker mini-batch
  int epochs = 1;              ///< passes over the training set (all workers together)
  double target_accuracy = 0;  ///< stop early once the test accuracy reaches this (0 = off)
  double eval_every = 1;       ///< evaluate every this many epochs
  int window = 2;              ///< max outstanding pushes per shard per worker
  /// Async: how a worker gets the weights of its next step. "prefetch": it pulls them while the
  /// step computes (the gradient is at least one update stale); "with-push": the answer to step
  /// t's push is step t+1's weights (push_pull: one round trip per shard and step, fresher
  /// weights, no overlap); "auto": with-push across processes, where a round trip's wake-ups and
  /// copies cost more than the overlap saves, and in one process whose CPU workers outnumber its
  /// cores (they keep every core busy, so the overlap buys little and the extra staleness costs
  /// accuracy); prefetch in one process otherwise, where a pull is a pointer. "in-turn" (one
  /// process only): a worker pulls its weights once it holds one of the process's compute slots
  /// (`compute_slots`) and leaves the slot when its gradient is computed, so workers that
  /// outnumber the cores take turns instead of being preempted mid-step, and a gradient is only
  /// as stale as the other slot holders' pushes make it. "auto" picks in-turn in one process
  /// whose CPU workers are more than twice its cores (with-push up to that).
  std::string async_pull = "auto";
  /// async-pull "in-turn": how many workers may pull and compute at once (0: the usable cores
  /// + 1, so one worker's pull travels while the cores compute).
  int compute_slots = 0;
  /// async-pull "in-turn": steps a worker computes per turn, each step's weights the answer to
  /// its previous push, before it leaves its slot (and pulls afresh on its next turn). 1: one
  /// pull per step; 8 costs no samples/s against with-push (docs/benchmarks.md, staleness).
  int turn_steps = 8;
  float clip_norm = 0;         ///< worker-side gradient clipping (0 = off)
  /// Gradients on the wire: "none", "fp16" or "topk" (error feedback: what a step does not send
  /// stays on the worker and joins later steps); worker_config::compression.
  std::string compression = "none";
  double topk_fraction = 0.01;  ///< topk: fraction of each slice's entries sent per step
  std::uint64_t seed = 42;
  std::string device = "cpu";  ///< worker compute: "cpu", "cuda:N", "auto"
  std::string metrics_path;    ///< CSV/JSON-lines metrics file ("" = none)
  // Experiments: slowed workers and simulated compute.
  std::vector<int> stragglers;     ///< ids of workers slowed by the delay below
  double straggler_delay_s = 0;    ///< stragglers: extra seconds per step
  double straggler_jitter_s = 0;   ///< stragglers: plus uniform [0, jitter) seconds per step
  double simulated_compute_s = 0;  ///< > 0: workers replace forward/backward by this busy time
  /// Local aggregation (in-graph replication): the workers of this process sum their slices of
  /// each step (row-weighted mean) before one push per shard.
  bool local_aggregation = false;
  checkpoint_spec checkpoint;
};

/// Throws std::invalid_argument naming the first bad field.
void validate(const job_spec& job);

/// Where a job's actors run: all in one process (run_job), or as nodes of a cluster.
enum class placement { one_process, cluster };

/// What stands between a job's workers and each shard, and how the workers talk and run: one
/// decision per job, taken by the local engine and the cluster's nodes alike (a plain value: no
/// actors are spawned here).
struct topology {
  /// sync and ssp: one barrier in front of each shard (on the coordinator's node in a cluster).
  bool barriers = false;
  int barrier_workers = 0;  ///< what a barrier counts: every worker, or 1 (an aggregated process)
  int barrier_backup = 0;   ///< sync: workers a step does not wait for
  /// Local aggregation: one aggregator in front of each front, combining this process's workers.
  bool aggregators = false;
  /// Workers push with push_pull (the reply to step t's slice is step t+1's weights) instead of
  /// a prefetched pull and a push.
  bool push_pull = false;
  /// Workers run on CAF's scheduler (one small-model worker and its shards take turns on a
  /// thread) instead of detached, one thread each.
  bool workers_on_scheduler = false;
  /// > 0: the workers take turns in this many compute slots (job_spec::async_pull "in-turn"):
  /// they pull once they hold a slot, neither prefetched nor with the push.
  int compute_slots = 0;
};

/// The topology of `job` placed `where`, on a machine whose process may run on `cores` CPUs (0:
/// this process's, from its CPU affinity). Throws std::invalid_argument for what the placement
/// cannot do (local aggregation combines the workers of one process: not across nodes).
/// REQUIRES: validate(job) passed and the model's dims are known.
topology plan_topology(const job_spec& job, placement where = placement::one_process,
                       int cores = 0);

/// The job's training and test data, loaded once.
struct job_data {
  dataset train;
  dataset test;
  /// When set, workers read their training rows from this source instead of `train` (which may
  /// then stay empty): rows an application streams or produces itself. The coordinator counts
  /// epochs by its rows(); evaluation still uses `test`.
  std::shared_ptr<const data_source> train_source;
  /// The standardization fitted on the training rows and applied to both sets ([data]
  /// standardize); empty otherwise.
  standardization scaling;
};

/// Rows of the training set: train_source->rows() when there is a source, else train.rows.
std::int64_t train_rows(const job_data& data);
/// Loads (or generates) the data a job names; the model's input/output dims must match.
job_data load_job_data(const job_spec& job);
/// data.delimiter as the character between CSV fields: one character, or "tab" / "\t".
/// Throws std::invalid_argument naming the key otherwise.
char csv_delimiter(const std::string& text);

/// A warning worth printing before the job runs ("" for none): workers x batch above the
/// training rows (each worker's rows make less than one batch).
std::string data_warning(const job_spec& job, const job_data& data);

/// Fills model.input_dim / output_dim from the data when they are 0; throws
/// std::invalid_argument when they do not fit the data or there are more workers than rows.
void fit_model_to_data(job_spec& job, const job_data& data);

/// Mean loss and accuracy of `params` (host vector) on d, computed on backend b in batches.
struct eval_result {
  double loss = 0;
  double accuracy = 0;  ///< 0 for regression
  std::int64_t rows = 0;
  /// Classifiers whose model provides its outputs: precision, recall and average precision per
  /// class, their macro means, and AUC for two classes.
  class_report classes{};
};
eval_result evaluate(const model_spec& spec, const std::vector<float>& params, const dataset& d,
                     backend& b, int batch_rows = 1000);

}  // namespace actrain
