#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <actrain/data.hpp>
#include <actrain/engine.hpp>
#include <actrain/model.hpp>
#include <actrain/protocol.hpp>

#include "actors/compression.hpp"

namespace actrain {

/// Work still to do: rows [begin, end) of the training set, walked `epochs` times.
struct work_item {
  std::unique_ptr<batch_reader> reader;  ///< the assigned rows, in batches
  std::int64_t begin = 0, end = 0;
  std::int64_t epochs = 0;       ///< as assigned (the coordinator's entry for it)
  std::int64_t epochs_left = 0;  ///< the current one included
  bool in_epoch = false;         ///< the reader is part-way through an epoch
};

struct worker_state {
  static inline const char* name = "actrain.worker";
  worker_config cfg;
  std::shared_ptr<const data_source> source;  ///< cfg.source, or cfg.train in memory
  std::vector<shard_actor> shards;
  caf::actor reports_to;  ///< from the assignment: the coordinator
  std::vector<shard_range_t> ranges;
  std::deque<work_item> work;
  std::unique_ptr<backend> dev;
  std::unique_ptr<model> net;
  buffer dev_params, dev_grad, dev_x, dev_y;  ///< only used when the backend is not the host
  /// A recordable model's step on a device, recorded once per batch size (the last batch of an
  /// epoch may be shorter) and replayed; empty where the backend does not record.
  std::map<int, std::unique_ptr<recorded_work>> recorded_steps;
  std::vector<float> params, grad, x, y;
  tensor_pool sent_grads;  ///< pushed gradients, recycled once every shard has applied them
  gradient_encoder enc;    ///< cfg.compression, and top-k's residual
  // step bookkeeping
  std::int64_t step = 0;         ///< next step to compute
  std::int64_t skip = 0;         ///< resume: batches still to read past before computing
  std::int64_t fetch_step = -1;  ///< the step whose weights are being fetched (-1: none)
  std::size_t fetched = 0;       ///< slices of fetch_step received
  std::vector<tensor> slices;    ///< weights of fetch_step, one per shard
  std::vector<std::int64_t> slice_versions;
  std::vector<std::int64_t> base_versions;  ///< versions the params in use were built from
  bool ready = false;                       ///< all slices of fetch_step are in
  std::vector<int> in_flight;               ///< pushes outstanding per shard
  /// Hot replicas (worker_assignment::replicated): per shard, the handle's generation (answers
  /// from an earlier handle are ignored), the pushes not acknowledged yet (resent when the shard
  /// moves to its replica), and whether its slice of fetch_step is in.
  bool replicated = false;
  std::vector<std::uint32_t> generation;
  std::vector<std::deque<std::pair<bool, gradient>>> unacked;  ///< (push_pull, gradient)
  std::vector<char> have_slice;
  int max_in_flight_seen = 0;               ///< for tests of back-pressure
  std::int64_t answers = 0;                 ///< shard replies received (watchdog)
  std::int64_t answers_at_tick = -1;        ///< `answers` at the previous watchdog tick
  bool holding_slot = false;  ///< holds a compute slot of cfg.gate
  bool asking_slot = false;   ///< has asked cfg.gate for one
  int turn_step = 0;          ///< steps computed in the turn it holds the slot for
  bool stopped = false;
  bool finished_reported = false;
  std::mt19937_64 rng;
  progress_report pending;  ///< accumulated since the last report
};

/// The exit reason of a worker whose model, data or device threw: errc::compute_failed with
/// `who` (e.g. "worker 3: ") and the exception's text (CAF's default would only print
/// "unhandled exception" and exit with no cause). Shared by the dense and sparse workers.
caf::error compute_error(const std::string& who, std::exception_ptr& eptr);

/// A worker: pull all shards -> forward/backward on a mini-batch -> push one slice per shard.
/// It computes inside its handlers: spawn it detached when a step may block (a device, sleeps of
/// simulated compute or stragglers) or when several workers share few cores; on the scheduler,
/// one worker and its shards pass messages on one thread without waking another (engine.cpp).
/// Requests carry no per-request timeout (each one would cost two events on CAF's clock thread
/// per step); a watchdog fails the worker when shards stop answering (worker_config::timeout).
/// Spawned as worker_impl (its watchdog ticks are its own); handed out as worker_actor.
worker_impl::behavior_type worker(worker_impl::stateful_pointer<worker_state> self,
                                  worker_config cfg);

}  // namespace actrain
