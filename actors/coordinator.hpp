#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/protocol.hpp"
#include "observe/run_state.hpp"
#include "tensor/backend.hpp"
#include "train/job.hpp"
#include "train/reference_trainer.hpp"

namespace actrain {

/// What a finished job returns.
struct engine_result {
  bool ok = false;
  std::string error;                    ///< why the job failed, when !ok
  std::vector<float> params;            ///< final parameters, assembled from the shards
  std::vector<progress_point> history;  ///< one point per evaluation
  double seconds = 0;                   ///< wall time from the first assignment to the last step
  std::int64_t samples = 0;
  double samples_per_s = 0;
  eval_result test;                               ///< final evaluation
  std::vector<std::int64_t> staleness_histogram;  ///< summed over shards
  std::vector<shard_stats> shards;
  int workers_lost = 0;
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
  engine_hooks hooks;
  std::shared_ptr<engine_result> result;  ///< filled before run's reply
};

struct worker_track {
  worker_actor handle;
  std::vector<shard_range_t> rows;
  std::int64_t assigned_samples = 0;  ///< rows x epochs, over every assignment
  std::int64_t done_samples = 0;
  std::int64_t step = 0;
  bool finished = false;
  bool alive = true;
  std::chrono::steady_clock::time_point last_report;
  double rate = 0;                ///< samples/s over the last rate window (>= 0.5 s)
  std::int64_t rate_samples = 0;  ///< samples since the rate window opened
  double rate_busy_s = 0;         ///< seconds the worker computed since the window opened
  double busy = 0;                ///< busy fraction over the last rate window
  std::chrono::steady_clock::time_point rate_since;
  double last_loss = 0;  ///< mean loss of its last report
  std::int64_t last_staleness = 0;
};

struct coordinator_state {
  static inline const char* name = "actrain.coordinator";
  coordinator_config cfg;
  std::vector<worker_track> workers;
  caf::typed_response_promise<std::string> done;
  std::unique_ptr<backend> eval_backend;
  std::chrono::steady_clock::time_point start;
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
  bool stopping_early = false;
  std::vector<shard_stats> front_stats;  ///< latest stats of each front (refreshed every tick)
  std::int64_t curve_samples = 0;        ///< samples at the last curve point
  double curve_seconds = 0;
};

/// Copies the coordinator's view of the run into `hub` (CAF-free data, read by observers).
void publish_snapshot(const coordinator_state& st, observe::metrics_hub& hub, bool finished);
/// Lines naming what the job waits for: workers silent for longer than the threshold, and
/// barrier steps held back, with the workers they wait for.
std::vector<std::string> find_stalls(const coordinator_state& st, double threshold_s);

/// Builds nothing itself: hands each worker its rows and the shard map, counts epochs, evaluates
/// on the test set, reacts to lost workers, and stops everything when the job is done. `run`
/// replies with a one-line summary once the result is filled.
coordinator_actor::behavior_type coordinator(
    coordinator_actor::stateful_pointer<coordinator_state> self, coordinator_config cfg);

}  // namespace actrain
