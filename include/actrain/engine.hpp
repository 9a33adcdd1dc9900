#pragma once
// The engine's entry points: what it takes to build shards, workers and a coordinator, what a
// job returns, and run_job(), the whole job in one actor system.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <actrain/checkpoint.hpp>
#include <actrain/data.hpp>
#include <actrain/job.hpp>
#include <actrain/model.hpp>
#include <actrain/optim.hpp>
#include <actrain/protocol.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/run_state.hpp>

namespace actrain {

/// How to build one shard.
struct shard_config {
  std::int32_t index = 0;
  std::vector<float> init;  ///< initial values of the slice this shard owns
  optim_spec optim;
  staleness_policy staleness;
  std::size_t histogram_bins = 33;  ///< staleness 0..31, and a last bin for >= 32
  /// How many steps, on average, the gradient mass a push carries waited on its worker before
  /// it was sent: 0, except with top-k compression, whose error feedback holds an entry back
  /// until it is among the largest (held_steps(job_spec)). The momentum correction counts it as
  /// staleness (staleness_rule::hold).
  double held_steps = 0;
  /// Pushes summed into one update (staleness_policy::buffer resolved for the job: 1 unless the
  /// job is async).
  int buffer = 1;
  /// Updates the shard's weight average spans (staleness_policy::average resolved for the job:
  /// shard_average); 0: no average, evaluations read the live weights.
  std::int64_t average = 0;
};

/// How to build one worker. The training data is shared (read-only) between the workers of a
/// process; an assignment says which rows of it this worker walks.
struct worker_config {
  std::int32_t id = 0;
  model_spec model;
  std::shared_ptr<const dataset> train;
  /// When set, the worker reads its rows from here instead of `train` (job_data::train_source).
  std::shared_ptr<const data_source> source;
  int batch = 64;
  std::uint64_t seed = 42;     ///< batches use seed + id (worker 0 matches the reference)
  std::string device = "cpu";  ///< "cpu", "cuda:N", "auto"
  float clip_norm = 0;
  int window = 2;        ///< max pushes in flight per shard (back-pressure)
  bool prefetch = true;  ///< pull step t+1 while computing step t
  /// Push with push_pull: the reply to step t's slice is step t+1's weights (one message each
  /// way per shard and step, no prefetch). For sync, where t+1's weights cannot come earlier.
  bool push_pull = false;
  int report_every = 10;  ///< steps between progress reports
  /// When set, the worker computes only while it holds one of this gate's compute slots: it asks
  /// for one, pulls its weights once it holds it (`prefetch` and `push_pull` must be false),
  /// computes `turn_steps` steps (each step's weights the answer to the previous push) and
  /// leaves the slot after the turn's last push. CPU workers of one process that outnumber its
  /// cores take turns this way instead of being preempted mid-step (topology::compute_slots).
  compute_gate_actor gate{};
  int turn_steps = 8;  ///< with a gate: steps per turn (>= 1)
  /// Deadline for a shard's answer: the worker fails when requests are outstanding and none has
  /// been answered for this long (checked by a watchdog every `timeout`, so within 2x of it).
  std::chrono::milliseconds timeout{60000};
  double delay_s = 0;              ///< straggler: extra seconds per step (fixed)
  double delay_jitter_s = 0;       ///< straggler: plus uniform [0, jitter) seconds per step
  double simulated_compute_s = 0;  ///< > 0: replace forward/backward by this much busy time
  bool shuffle = true;             ///< false: walk rows in order (tests that line batches up)
  /// Gradients on the wire: "none", "fp16" (half precision) or "topk" (per slice and step the
  /// topk_fraction of entries with the largest |gradient + residual|; the rest stays on the
  /// worker as the residual and joins later steps: error feedback). job_spec::compression.
  std::string compression = "none";
  double topk_fraction = 0.01;
};

/// Callbacks the coordinator makes on its own thread (keep them short).
struct engine_hooks {
  std::function<void(const progress_point&)> on_eval;  ///< after every evaluation
  std::function<void(const std::string&)> on_event;    ///< one-line events (worker lost, ...)
  std::chrono::milliseconds tick{1000};                ///< console/metrics period
  std::function<void(const progress_point&, double eta_s)> on_tick;  ///< periodic progress
  /// When set, the coordinator publishes the run's state there every tick (HTTP endpoint,
  /// console, metrics file read it). Not owned; must outlive the job.
  observe::metrics_hub* hub = nullptr;
  /// A worker silent for longer than this (or a barrier step held this long) is named as a stall.
  double stall_after_s = 1.0;
};

/// Everything a coordinator drives. The handles may be local actors or remote proxies.
struct coordinator_config {
  job_spec job;
  std::shared_ptr<const job_data> data;
  std::vector<shard_actor> shards;  ///< the shards themselves (evaluation, stats)
  std::vector<shard_actor> fronts;  ///< what workers talk to: the shards, or barriers
  std::vector<shard_range_t> ranges;
  std::vector<worker_actor> workers;
  /// The node each worker and shard runs on, as /status and /metrics name it (a cluster's
  /// registered node names); empty: "local".
  std::vector<std::string> worker_nodes{};
  std::vector<std::string> shard_nodes{};
  /// Workers in all, joined ones included, the running job takes (join_worker_atom: a cluster's
  /// registrar forwards worker nodes that register beyond [job] workers). 0: none join.
  std::int32_t max_workers = 0;
  /// A shard that goes down ends the run with engine_result::shard_lost and tells no worker,
  /// front or shard (a coordinator node restarts the job from its last checkpoint once the lost
  /// ps node is back). False: the job fails, every actor told why.
  bool shard_loss_recoverable = false;
  /// Hot replicas ([cluster] replicas = 1): per shard, a copy on another node that its primary
  /// streams every applied update to (empty: none). A primary that goes down is replaced by its
  /// replica and the job goes on; the fronts must be the shards themselves (async, no chunking).
  std::vector<replicated_shard_actor> replicas{};
  std::vector<std::string> replica_nodes{};  ///< the node each replica runs on
  /// Liveness of nodes (a cluster's [cluster] node-timeout): a node named here, or by a worker
  /// that joins, that sends no heartbeat (heartbeat_atom, name) for node_timeout is lost: its
  /// workers, shards and replicas are taken as down and told to exit. The coordinator checks
  /// every node_check, on the actor system's clock. 0: nothing is watched (one process).
  std::vector<std::string> watched_nodes{};
  std::chrono::milliseconds node_timeout{0};
  std::chrono::milliseconds node_check{100};
  engine_hooks hooks;
  /// When set, the job continues from this checkpoint: the shards are restored, every worker
  /// replays its readers to the cut, and the history and counts go on from there.
  std::shared_ptr<const checkpoint> resume;
};

/// Runs a whole job inside `sys` (the embedded, single-process cluster): spawns the shards, the
/// workers (detached, one thread each) and the coordinator, waits for the coordinator's result and
/// returns it. Blocks the calling thread (it is not an actor). `sys` must have been built from a
/// config passed through prepare_config().
/// Throws std::invalid_argument for an invalid job.
/// `resume`: continue from that checkpoint (coordinator_config::resume).
engine_result run_job(caf::actor_system& sys, const job_spec& job,
                      std::shared_ptr<const job_data> data, engine_hooks hooks = {},
                      std::shared_ptr<const checkpoint> resume = nullptr);

/// run_job's first half: spawns the job's shards, the barriers or aggregators in front of them
/// and its workers, and returns the coordinator's config (with `hooks`) ready to spawn. For
/// callers that need the coordinator's handle (tests that talk to it).
coordinator_config wire_job(caf::actor_system& sys, const job_spec& job,
                            std::shared_ptr<const job_data> data, engine_hooks hooks = {});
/// run_job's second half: spawns the coordinator from `cfg`, asks it to run, waits until it is
/// done and returns its result (the reply to run_atom). Blocks the calling thread.
engine_result run_coordinator(caf::actor_system& sys, coordinator_config cfg);
/// Spawns the coordinator of `cfg` without running it: a caller that keeps its handle (to stop
/// the job with stop_atom, e.g. on a signal) then calls run_coordinator(sys, handle).
coordinator_actor spawn_coordinator(caf::actor_system& sys, coordinator_config cfg);
/// The same for a coordinator spawned already (a caller that keeps its handle). A coordinator
/// ended from outside before the job finished (an exit message, a kill) still returns: ok false,
/// `error` the actrain reason it was ended with, else "the coordinator ended before the job did".
engine_result run_coordinator(caf::actor_system& sys, const coordinator_actor& coord);

/// Spawns one shard in `sys` (on the scheduler). The handle is what workers, barriers and the
/// client talk to; stop it with an exit message (or let the coordinator stop it).
shard_actor spawn_shard(caf::actor_system& sys, shard_config cfg);
/// Spawns one worker in `sys`; `detached`: on a thread of its own (topology::workers_on_scheduler
/// says which a job's workers get). It
/// waits for an assignment (assign_atom) from a coordinator.
worker_actor spawn_worker(caf::actor_system& sys, worker_config cfg, bool detached = true);

/// The shard configs of a job: initial values from the model's seeded init, split by range.
std::vector<shard_config> make_shard_configs(const job_spec& job);
/// The parameter ranges of the job's shards.
std::vector<shard_range_t> job_ranges(const job_spec& job);
/// The steps a pushed gradient's mass waited on its worker, on average: with top-k compression
/// an entry goes out about once every 1 / topk_fraction steps, carrying what accumulated since
/// it last went, so its mass is (1 / topk_fraction - 1) / 2 steps old; 0 for every other kind.
double held_steps(const job_spec& job);

/// Pushes a shard of `job` sums into one update: staleness_policy::buffer in async mode (0: the
/// job's workers), at most the job's workers (one worker's consecutive pushes are never merged:
/// a single async worker steps like the reference trainer), 1 in sync and ssp (the barrier sums a
/// step's slices already).
int shard_buffer(const job_spec& job);
/// Updates a shard of `job` averages its weights over (staleness_policy::average): -1 resolves
/// to 100 in async and ssp jobs and to 0 (off) in sync ones; 0 is off.
std::int64_t shard_average(const job_spec& job);
/// The worker config for worker `id` of a job laid out as `topo` (plan_topology).
worker_config make_worker_config(const job_spec& job, const topology& topo,
                                 std::shared_ptr<const dataset> train, std::int32_t id);

}  // namespace actrain
