#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include <actrain/protocol.hpp>

#include "optim/row_mean.hpp"

namespace actrain {

struct job_spec;

/// How to build one local aggregator.
struct aggregator_config {
  shard_actor front;       ///< what the group pushes to: a shard or a barrier
  std::int32_t group = 0;  ///< the id this group uses towards the front (pushes and pulls)
  std::int32_t first_worker =
      0;  ///< workers first_worker .. first_worker + members - 1 belong here
  std::int32_t members = 1;
  std::chrono::milliseconds timeout{60000};  ///< requests to the front
  /// Values in the front's slice: a push of any other length is refused. 0: the first push
  /// decides (tests only; make_aggregators always sets it).
  std::size_t slice = 0;
};

/// What an aggregator keeps. One step is open at a time: a member's pull for its next step waits
/// until the step it pushed has been combined and acknowledged by the front.
struct aggregator_state {
  static inline const char* name = "actrain.aggregator";
  /// Answers every held pull with `ended_by` (else errc::stopped): see answer_held_at_end.
  ~aggregator_state();
  aggregator_config cfg;
  caf::error ended_by;  ///< an actrain reason the aggregator ended with (a stopped or failed job)
  struct held_pull {
    pull_request req;  ///< as the worker sent it
    caf::typed_response_promise<weights> promise;
  };
  std::vector<held_pull> held;
  std::vector<bool> active;             ///< per member: still expected
  std::vector<bool> lost;               ///< per member: gone for good (its pushes don't revive it)
  std::vector<bool> arrived;            ///< per member: has a slice in the open step
  std::vector<std::int64_t> last_step;  ///< per member: last step it pushed (-1: none yet)
  row_weighted_mean sum;                ///< of the open step's slices
  std::int64_t base_version = -1;       ///< oldest base version among the open step's slices
  std::int32_t arrivals = 0;
  bool flushing = false;     ///< a combined push awaits the front's ack
  std::int64_t step = 0;     ///< combined pushes sent (the group's step at the front)
  std::int64_t version = 0;  ///< the front's version in its last ack
  std::int64_t slices = 0;   ///< member slices accepted (for tests)
};

/// Local aggregation (the seed's in-graph replication): stands in front of one shard or barrier
/// for a group of workers in one process and implements the shard's interface, so the workers
/// cannot tell it from a shard. It sums the row-weighted slices of one step from every live member
/// and pushes their mean (rows = the members' rows together) to the front once, as worker `group`
/// at the group's own step; members' pulls for their next step are held until that push is
/// acknowledged, then forwarded to the front as the group's pull (the front answers the worker
/// directly). leave_atom(w) for a member stops waiting for it; when the last member leaves, the
/// group leaves the front. The aggregator quits when its front goes down.
shard_actor::behavior_type aggregator(shard_actor::stateful_pointer<aggregator_state> self,
                                      aggregator_config cfg);

/// What workers of `job` talk to when topo.aggregators: one aggregator per front, all
/// workers of the process in one group (the coordinator hands every worker the same fronts), group
/// id 0 towards the fronts; else `fronts` themselves. Spawned in `sys`; each quits with its front
/// and is stopped by the coordinator like any front.
std::vector<shard_actor> make_aggregators(caf::actor_system& sys, const job_spec& job,
                                          const topology& topo,
                                          const std::vector<shard_actor>& fronts);

}  // namespace actrain
