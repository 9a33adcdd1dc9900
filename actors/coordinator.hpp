#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <actrain/backend.hpp>
#include <actrain/checkpoint.hpp>
#include <actrain/engine.hpp>
#include <actrain/job.hpp>
#include <actrain/protocol.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/run_state.hpp>

namespace actrain {

struct worker_track {
  worker_actor handle;
  std::vector<shard_range_t> rows;
  std::int64_t assigned_samples = 0;  ///< rows x epochs, over every assignment
  std::int64_t done_samples = 0;
  std::int64_t step = 0;
  bool finished = false;
  bool alive = true;
  caf::actor_clock::time_point last_report;
  /// When the coordinator last saw it waiting at a barrier (its slice in, the step held): a
  /// worker released from there is computing, not silent, until its next report.
  caf::actor_clock::time_point last_blocked;
  double rate = 0;                ///< samples/s over the last rate window (>= 0.5 s)
  std::int64_t rate_samples = 0;  ///< samples since the rate window opened
  double rate_busy_s = 0;         ///< seconds the worker computed since the window opened
  double busy = 0;                ///< busy fraction over the last rate window
  caf::actor_clock::time_point rate_since;
  double last_loss = 0;  ///< mean loss of its last report
  std::int64_t last_staleness = 0;
  std::int64_t first_step = 0;   ///< the step its first assignment started at
  std::vector<saved_work> work;  ///< every assignment, in order (what a checkpoint saves)
  /// A request that rewrites its list (release_atom) is out: the next waits for its answer, so
  /// each answer replaces the entries it was about.
  bool relisting = false;
  bool interleave_wanted = false;  ///< rows were added meanwhile (or it was replaying): ask after
  bool replaying = false;          ///< resumed with batches to replay, no report since
  bool taking_share = false;       ///< finished, asking the others for a share (async)
};

struct coordinator_state {
  static inline const char* name = "actrain.coordinator";
  coordinator_config cfg;
  std::vector<worker_track> workers;
  engine_result result;  ///< filled as the job runs; the reply to run
  caf::typed_response_promise<engine_result> done;
  /// The exit reason the coordinator was ended with from outside (an application's exit message,
  /// a kill): what `done` is answered with when the job never got to answer it.
  caf::error ended_by;
  /// Answers `done` when it is still pending: CAF 0.17 drops an undelivered promise without a
  /// word, and whoever waits for the job (run_coordinator) would block forever. An actrain reason
  /// is passed on as it is; any other becomes errc::stopped naming it.
  ~coordinator_state();
  std::unique_ptr<backend> eval_backend;
  /// A test loss above this ends the job as diverged (diverged_loss_bound): 1000 x the loss of
  /// predicting nothing. 0 = no test set to judge by.
  double diverged_above = 0;
  /// The actor system's clock (CAF's test clock under the deterministic scheduler): every time
  /// the coordinator reads (rates, stalls, elapsed time) comes through it.
  const caf::actor_clock* sys_clock = nullptr;
  caf::actor_clock::time_point now() const { return sys_clock->now(); }
  /// Seconds since training started (by the clock above).
  double elapsed() const { return std::chrono::duration<double>(now() - start).count(); }
  /// Reports a one-line event to the hooks.
  void event(const std::string& line) const {
    if (cfg.hooks.on_event) cfg.hooks.on_event(line);
  }
  caf::actor_clock::time_point start;
  int failovers = 0;  ///< shards whose replica took over
  double train_seconds = 0;
  std::int64_t samples = 0;
  double loss_sum = 0;
  std::int64_t loss_rows = 0;
  std::int64_t next_eval_samples = 0;
  std::int64_t target_samples = 0;
  int epoch = 0;
  bool evaluating = false;
  /// sync: evaluate after every `eval_steps` global steps, on the weights of exactly that step
  /// (0: by samples reported, as in async and ssp).
  std::int64_t eval_steps = 0;
  std::int64_t last_eval_step = 0;  ///< sync: the furthest evaluation point asked for so far
  bool finishing = false;
  bool asking_shards = false;  ///< every worker was lost: the shards are asked whether they live
  bool stopping = false;         ///< asked to stop (a signal): the last checkpoint is being taken
  std::string last_loss_reason;  ///< why the last lost worker went down
  bool stopping_early = false;
  std::vector<shard_stats> front_stats;  ///< latest stats of each front (refreshed every tick)
  std::int64_t curve_samples = 0;        ///< samples at the last curve point
  double curve_seconds = 0;
  // Checkpoints (a writer exists only when the job takes them).
  checkpoint_writer_actor writer;
  std::string fingerprint;            ///< job_fingerprint of the job
  std::int64_t next_sequence = 1;     ///< of the next checkpoint file
  bool gathering = false;             ///< async cut: shards asked, not all answered yet
  bool writing = false;               ///< a file is being written
  std::int64_t sync_cut = -1;         ///< sync: the step of the cut asked for (-1: none)
  std::optional<checkpoint> pending;  ///< sync: gathered, waiting for its evaluation points
  std::int64_t updates = 0;           ///< async/ssp: all workers' steps so far
  bool training = false;              ///< rows are handed out (after a resume's restore)
  /// Workers that joined before training began: they join once it does.
  std::vector<std::tuple<std::int32_t, worker_actor, std::string>> early_joins;
  /// Resumed slots whose worker was lost before the cut: the node now in the slot takes a share
  /// of the others' rows, as a joining worker does, once they replayed to the cut (maybe_revive).
  std::vector<std::size_t> revive;
  std::int64_t updates_at_checkpoint = 0;
  double seconds_at_checkpoint = 0;
  /// Liveness (cfg.node_timeout): when each watched node was last heard from, and the nodes
  /// taken as lost (never watched again).
  std::map<std::string, caf::actor_clock::time_point> node_seen;
  std::set<std::string> lost_nodes;
};

/// Copies the coordinator's view of the run into `hub` (CAF-free data, read by observers).
void publish_snapshot(const coordinator_state& st, observe::metrics_hub& hub, bool finished);
/// Marks every worker the latest front stats show waiting at a barrier (last_blocked = now).
/// Called whenever fresh front stats arrive.
void note_blocked_workers(coordinator_state& st);
/// Lines naming what the job waits for: workers silent for longer than the threshold, and
/// barrier steps held back, with the workers they wait for.
std::vector<std::string> find_stalls(const coordinator_state& st, double threshold_s);

/// How long the coordinator waits for a shard's or front's answer (not for a held cut or point).
constexpr std::chrono::seconds coordinator_request_timeout{60};

using coordinator_self = coordinator_impl::stateful_pointer<coordinator_state>;

// Checkpoints (coordinator_checkpoint.cpp).
/// Asks every front for its shard's state: at global step `step` (sync: a barrier answers when it
/// gets there, so every shard is cut at the same step) or as it stands (-1), then writes the
/// checkpoint (sync: once the evaluations up to the cut are in). `then`, for a last checkpoint
/// (the end of the job, a stop), runs once it is written or has failed.
void take_checkpoint(coordinator_self self, std::int64_t step,
                     std::function<void()> then = nullptr);
/// sync: writes the gathered cut once every evaluation point up to its step is in the history.
void write_pending(coordinator_self self);
/// A checkpoint when [checkpoint] every-seconds of training have passed since the last one.
void maybe_checkpoint_by_time(coordinator_self self);
/// sync: a cut a little ahead of the furthest reported worker.
std::int64_t sync_cut_ahead(const coordinator_state& st);
/// Why `c` cannot continue this job ("" when it can).
std::string resume_mismatch(const coordinator_state& st, const checkpoint& c);
/// Opens the job's checkpoint folder and spawns the writer (nothing without [checkpoint] dir);
/// returns why it could not ("" on success).
std::string open_checkpoints(coordinator_self self);

// Evaluation (coordinator_eval.cpp).
/// The run as it stands: epoch, samples, elapsed time, mean train loss since the last
/// evaluation, the furthest worker's step.
progress_point current_point(coordinator_state& st);
/// Gathers the shards' parameters and evaluates them (one at a time); a final evaluation then
/// finishes the job.
void evaluate_now(coordinator_self self, bool final_eval);
/// sync: asks the barriers for the evaluation points at fixed global steps (the first
/// eval_window of them) when [job] eval-every asks for any; `rows` split over `n` workers.
void plan_sync_evaluations(coordinator_self self, std::int64_t rows, int n);
/// Where a test loss means the model diverged: 1000 x the loss of a model that predicts nothing
/// (0: no test set to judge by).
double diverged_loss_bound(const model_spec& m, const dataset& test);

// Membership (coordinator_members.cpp).
/// Hands worker `w` these rows for `epochs` passes (after `skip` batches: a resume's replay) and
/// records them in its list (what a checkpoint saves).
void assign(coordinator_self self, std::size_t w, std::vector<shard_range_t> rows,
            std::int64_t epochs, std::int64_t skip = 0);
/// A worker is gone: its rows are spread over every live worker (each gets a contiguous part of
/// each of its ranges, the least loaded the larger parts), walked for the epochs it had left.
void reassign(coordinator_self self, std::size_t lost, const caf::error& reason);
/// Worker w got rows on top of its own (a lost worker's, a joiner's share): it is asked to walk
/// its epochs not started epoch after epoch, every range in each (release_atom with share 1), and
/// its list takes the rewritten entries. Range after range, the end of the run would train only
/// the rows handed over last, and the model would lean toward them.
void interleave(coordinator_self self, std::size_t w);
/// A worker joined the running job (join_worker_atom): the others release a share of the epochs
/// they have not started, which becomes its rows.
void join_worker(coordinator_self self, std::int32_t index, worker_actor h,
                 const std::string& node);
/// Worker `h` takes slot `j` and a share of the others' rows (a join, or a revived slot).
void take_in(coordinator_self self, std::size_t j, worker_actor h, const std::string& node,
             bool monitor);
/// Async: worker j walked all its rows while others still walk theirs; like a joiner, it takes a
/// share of the epochs they have not started (rows are split evenly at the start, so a slow
/// worker would otherwise train alone on its own rows at the end of the job, and the model
/// would lean toward them). Sync and ssp steps wait for the slowest worker anyway.
void take_share_when_done(coordinator_self self, std::size_t j);
/// The slots in `revive` take their share once every other live worker reported since the
/// resume (a worker still replaying to the cut has nothing it can release yet).
void maybe_revive(coordinator_self self);
/// Resuming a checkpoint taken after workers joined (slots beyond [job] workers): those slots
/// come back empty, and what each had left at the cut is spread over the others as a lost
/// worker's is. Their nodes, registering again, join afresh.
void spread_joined_slots(coordinator_self self, const checkpoint& from);
/// Worker w will push no more (finished or lost): barriers stop waiting for it.
void tell_fronts_leave(coordinator_self self, std::size_t w, bool lost);
/// Ends training once every live worker finished (the final evaluation), or fails the job when
/// none is left.
void maybe_done(coordinator_self self);

// Liveness of nodes (coordinator_members.cpp).
/// Watches `node` from now on (cfg.node_timeout > 0; not the coordinator's own "local" actors,
/// nor a node taken as lost before).
void watch_node(coordinator_state& st, const std::string& node);
/// Training begins: watches cfg.watched_nodes and starts the silence checks.
void watch_nodes(coordinator_self self);
/// A heartbeat of `node` (through the registrar).
void heard_from(coordinator_self self, const std::string& node);
/// Every cfg.node_check: a watched node silent for cfg.node_timeout is lost (its actors taken
/// as down, as member_down, and told to exit).
void check_nodes(coordinator_self self);

// The job's end (coordinator.cpp).
/// An actor the coordinator watches went down (`source`, why): a worker is lost (its rows go to
/// others), a shard ends the job (or its replica takes over), a replica is forgotten.
void member_down(coordinator_self self, const caf::actor_addr& source, const caf::error& reason);
/// The job is over: a last checkpoint (when the job takes them), then the result.
void finish(coordinator_self self);
/// Ends the job as failed (or stopped) with `why`: the reply to run names it, every live worker,
/// front and shard is stopped with that reason.
void fail_job(coordinator_self self, std::string why, errc code = errc::job_failed);

/// Builds nothing itself: hands each worker its rows and the shard map, counts epochs, evaluates
/// on the test set, reacts to lost workers, and stops everything when the job is done. `run`
/// replies with the job's result.
/// Spawned as coordinator_impl (its ticks are its own); handed out as coordinator_actor.
coordinator_impl::behavior_type coordinator(
    coordinator_impl::stateful_pointer<coordinator_state> self, coordinator_config cfg);

}  // namespace actrain
