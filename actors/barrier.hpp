#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <actrain/protocol.hpp>

#include "optim/row_mean.hpp"

namespace actrain {

struct job_spec;

/// One thing a barrier decided, in the order it decided it (for tests and studies).
struct barrier_event {
  enum kind_t : std::uint8_t { push, answer, leave, apply, late } kind = push;
  std::int32_t worker = 0;
  std::int64_t step =
      0;  ///< push/late: the gradient's step; answer: the pulled step; apply: global step
};

/// An append-only, thread-safe record of barrier events. Shared between the barrier (writer) and
/// whoever inspects it afterwards; events are only appended while a log is attached.
struct barrier_log {
  std::mutex mtx;
  std::vector<barrier_event> events;
  void add(barrier_event e) {
    std::lock_guard<std::mutex> guard{mtx};
    events.push_back(e);
  }
};

/// How to build one barrier.
struct barrier_config {
  shard_actor shard;          ///< the shard this barrier stands in front of
  std::string mode = "sync";  ///< "sync" or "ssp"
  std::int32_t workers = 1;   ///< N: workers 0..N-1 push here
  /// Worker indexes tracked (below max(N, capacity)): workers N.. may join the running job and
  /// are expected from their first push on (a step boundary: that push is their slice of a step).
  /// A joiner's slot opens at its first message, so a large capacity costs nothing per step.
  std::int32_t capacity = 0;
  std::int32_t backup = 0;           ///< sync: K = N - backup
  std::int32_t ssp_bound = 0;        ///< ssp: s
  std::string late_policy = "drop";  ///< sync: "drop" or "fold" slices of a finished step
  /// Requests to the shard for stats, checkpoints and restores (a step's push has none: the shard
  /// is local and monitored).
  std::chrono::milliseconds timeout{60000};
  std::shared_ptr<barrier_log> log;  ///< optional record of every decision
  /// Values in the shard's slice: a push of any other length is refused. 0: the first push
  /// decides (tests only; make_fronts always sets it, so one wrong push cannot fix the length).
  std::size_t slice = 0;
};

/// What a barrier keeps. A worker's "clock" is how many steps it has pushed (its last pushed
/// step + 1); departed workers (finished or lost) no longer count.
struct barrier_state {
  static inline const char* name = "actrain.barrier";
  /// Answers every held pull and checkpoint with the reason the barrier ended (`ended_by`; else
  /// errc::stopped): CAF 0.17 drops a promise that is never delivered silently, so a requester (a
  /// worker, the bulk channel's connection thread) would otherwise wait its whole timeout for a
  /// barrier that is gone, whatever ended it (exit_reason::kill included). The state is destroyed
  /// while the actor finishes, before its cleanup, so the replies still leave.
  ~barrier_state();
  barrier_config cfg;
  /// An actrain exit reason or shard failure the barrier ended with (a stopped or failed job):
  /// what its held requests are answered with, so a worker learns the job's fate, not the
  /// barrier's.
  caf::error ended_by;
  struct held_pull {
    pull_request req;
    caf::typed_response_promise<weights> promise;
  };
  std::vector<held_pull> held;  ///< pulls not answerable yet
  struct held_checkpoint {
    std::int64_t step;
    caf::typed_response_promise<shard_checkpoint> promise;
  };
  /// sync: checkpoints asked for at a step not reached yet.
  std::vector<held_checkpoint> held_checkpoints;
  std::vector<std::int64_t> clock;  ///< per worker: steps pushed
  std::int64_t clock_floor = 0;     ///< a slot opened from now on starts here (a restored step)
  std::vector<bool> active;         ///< per worker: still expected
  std::vector<bool> lost;           ///< per worker: gone for good (its late pushes don't revive it)
  // sync
  std::int64_t done = 0;           ///< global steps applied through this barrier
  std::int64_t open_version = -1;  ///< shard version the open step's slices start from
  row_weighted_mean sum;           ///< of the open step's slices
  std::vector<bool> arrived;       ///< per worker: has a slice in the open step
  std::int32_t arrivals = 0;
  /// The actor system's clock (CAF's test clock under the deterministic scheduler): the seam
  /// that makes the stall figures below testable without waiting on real time.
  const caf::actor_clock* sys_clock = nullptr;
  caf::actor_clock::time_point open_since;  ///< when the open step's first slice came
  std::int64_t dropped_late = 0;
  std::int64_t folded = 0;
  std::int64_t pulls = 0;
};

/// Stands in front of one shard and implements the shard's interface, so workers cannot tell it
/// from a shard. sync: accumulates the slices of the open step and, once K = N - backup workers
/// have arrived, pushes their row-weighted mean to the shard once (one optimizer step per global
/// step); a pull for step t+1 is answered only after step t is applied; slices computed from an
/// older version are late (dropped and counted, or folded into the open step). ssp: pushes go
/// straight to the shard; a pull for step t is answered only when t <= slowest clock + s.
/// leave_atom(w, lost) removes worker w from the expected set; a push from it re-adds it unless it
/// was lost.
shard_actor::behavior_type barrier(shard_actor::stateful_pointer<barrier_state> self,
                                   barrier_config cfg);

/// Shard `s`'s barrier as make_fronts configures it, in front of `shard` (a ps node that runs the
/// barriers of its own shards configures them so too).
barrier_config front_config(const job_spec& job, const topology& topo, std::size_t s,
                            shard_actor shard, std::int32_t capacity);

/// What workers of `job` talk to: the shards themselves, or (topo.barriers) one barrier per
/// shard spawned in `sys` (the coordinator stops them with the shards). `log`, when set, is
/// attached to barrier 0.
/// `capacity`: worker indexes the barriers track, joining workers included (barrier_config).
std::vector<shard_actor> make_fronts(caf::actor_system& sys, const job_spec& job,
                                     const topology& topo, const std::vector<shard_actor>& shards,
                                     std::shared_ptr<barrier_log> log = nullptr,
                                     std::int32_t capacity = 0);

}  // namespace actrain
