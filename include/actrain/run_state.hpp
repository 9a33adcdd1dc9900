#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <actrain/metrics.hpp>

/// What the coordinator knows about a running job, as plain values.
/// This header is CAF-free: the coordinator copies its state in through metrics_hub::update and
/// every reader (HTTP endpoint, console, metrics file) works on a snapshot copy.
namespace actrain::observe {

/// One worker as the coordinator last heard of it.
struct worker_status {
  std::string name;          ///< e.g. "worker-3"
  std::string node;          ///< node it runs on ("local" in one process)
  std::int64_t step = 0;     ///< mini-batches computed
  std::int64_t samples = 0;  ///< rows processed
  double samples_per_s = 0;  ///< recent rate
  /// Fraction of the recent wall time the worker spent on its steps (batch, forward/backward,
  /// sending), the rest waiting for weights or window room: near 1 compute-bound, low
  /// communication-bound.
  double busy = 0;
  double loss = 0;                  ///< last mini-batch loss
  std::int64_t last_staleness = 0;  ///< staleness of its last applied push
  std::string state = "computing";  ///< "computing", "waiting for shard-1", "stopped", ...
  double seconds_since_report = 0;  ///< time since its last progress report
};

/// One parameter shard (or the barrier in front of it).
struct shard_status {
  std::string name;  ///< e.g. "shard-0"
  std::string node;
  std::int64_t version = 0;  ///< updates applied
  std::int64_t pushes = 0;
  std::int64_t pulls = 0;
  std::int64_t rejected = 0;       ///< pushes refused by validation
  std::int64_t dropped_stale = 0;  ///< pushes dropped by the staleness policy
  std::int64_t dropped_late = 0;   ///< sync: late slices dropped by the barrier
  std::int64_t mailbox_depth = 0;  ///< messages waiting in its mailbox
  double mean_staleness = 0;       ///< running mean staleness of its applied pushes
  double momentum = 0;             ///< momentum in use after the staleness correction
  std::int64_t uncompensated = 0;  ///< stale pushes its delay compensation could not correct
};

/// One sparse shard of an embedding table.
struct table_status {
  std::string name;  ///< e.g. "table-0"
  std::string node;
  std::int64_t rows_held = 0;  ///< rows created (touched) and not evicted
  std::int64_t evicted = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t pulls = 0;
  std::int64_t pushes = 0;
  std::int64_t rows_pulled = 0;
  std::int64_t rows_pushed = 0;
  std::int64_t rejected = 0;
  std::int64_t bytes_in = 0;           ///< payload bytes of the pulls' ids and of pushes received
  std::int64_t bytes_out = 0;          ///< payload bytes of rows sent
  double mean_staleness = 0;           ///< per pushed row
  std::vector<std::uint64_t> hot_ids;  ///< most pulled + pushed rows, most first
  std::vector<std::int64_t> hot_counts;
};

/// Bytes one node moved to and from one peer (a node of the cluster, or "other": a connection
/// whose far end no node reported, such as an HTTP client of /metrics).
struct peer_traffic {
  std::string peer;
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
};

/// Bytes a node moved over its TCP connections, totals since it started: the kernel's counts
/// (TCP_INFO: bytes acknowledged by the peer, bytes received), framing and TLS included.
struct node_traffic {
  std::string node;
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  std::vector<peer_traffic> peers{};  ///< by peer name
};

/// One point of the training curve; NaN marks "not measured at this point".
struct curve_point {
  double seconds = 0;  ///< since the job started
  std::int64_t samples = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double samples_per_s = 0;
  class_report classes{};  ///< evaluation points of classifiers: the per-class report
};

/// Everything the observers show. Copyable; produced by metrics_hub::snapshot().
struct run_snapshot {
  std::string job;
  std::string mode;  ///< "async", "sync", "ssp"
  std::int64_t epoch = 0;
  std::int64_t epochs = 0;
  std::int64_t step = 0;
  std::int64_t samples = 0;
  std::int64_t samples_per_epoch = 0;  ///< training rows in one epoch (0 = unknown)
  double elapsed_s = 0;
  double eta_s = 0;
  double samples_per_s = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  class_report classes{};  ///< the last evaluation's per-class report (empty: none)
  bool finished = false;
  std::vector<worker_status> workers;
  std::vector<shard_status> shards;
  std::vector<node_traffic> nodes;
  std::vector<table_status> tables;  ///< sparse jobs: the embedding table's shards
  double rows_per_step = 0;          ///< sparse jobs: distinct rows a worker step touches
  double bytes_per_push = 0;         ///< sparse jobs: gradient payload bytes per worker push
  /// staleness value -> number of applied pushes with exactly that staleness.
  std::map<std::int64_t, std::int64_t> staleness_histogram;
  std::int64_t dropped_late = 0;  ///< late gradients dropped, whole job
  /// Human lines naming what a stuck step waits for, e.g.
  /// "sync step 12 on shard-0 waits 2.3 s for worker-3". Empty when nothing is stuck.
  std::vector<std::string> stalls;
  std::vector<curve_point> curve;
};

/// The one place the coordinator writes run state and observers read it.
/// Thread-safe: update() and snapshot() may be called from any thread. Not a singleton: the
/// coordinator owns it and hands a reference to the http_server / console.
class metrics_hub {
 public:
  /// Runs `fn` on the state under the lock; keep it short (no I/O, no blocking).
  void update(const std::function<void(run_snapshot&)>& fn);
  /// A consistent copy of the state.
  run_snapshot snapshot() const;
  /// Convenience: appends a point to the curve (and keeps at most `max_curve_points`, thinning
  /// the oldest half by 2 when full so a long run stays bounded).
  void add_curve_point(const curve_point& p);
  /// Blocks until `pred` holds for the state, or until `deadline`; returns whether it held.
  /// `pred` runs under the lock, at once and whenever an update wakes the caller (updates that
  /// land between two wake-ups are seen together): a wait on the coordinator's updates, not a
  /// poll.
  bool wait_until(const std::function<bool(const run_snapshot&)>& pred,
                  std::chrono::steady_clock::time_point deadline) const;

  static constexpr std::size_t max_curve_points = 4096;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  run_snapshot state_;
};

}  // namespace actrain::observe
