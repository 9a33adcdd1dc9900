#pragma once
#include <memory>

#include <caf/all.hpp>

#include "actors/coordinator.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"

namespace actrain {

/// Runs a whole job inside `sys` (the embedded, single-process cluster): spawns the shards, the
/// workers (detached, one thread each) and the coordinator, waits for the coordinator's result and
/// returns it. Blocks the calling thread (it is not an actor). `sys` must have been built from a
/// config passed through prepare_config().
/// Throws std::invalid_argument for an invalid job.
engine_result run_job(caf::actor_system& sys, const job_spec& job,
                      std::shared_ptr<const job_data> data, engine_hooks hooks = {});

/// run_job's first half: spawns the job's shards, the barriers or aggregators in front of them
/// and its workers, and returns the coordinator's config (with `hooks` and a fresh result)
/// ready to spawn. For callers that need the coordinator's handle (tests that talk to it).
coordinator_config wire_job(caf::actor_system& sys, const job_spec& job,
                            std::shared_ptr<const job_data> data, engine_hooks hooks = {});
/// run_job's second half: asks the spawned coordinator `coord` to run, waits until it is done
/// and returns its result (`result`: the one its config carried). Blocks the calling thread.
engine_result run_coordinator(caf::actor_system& sys, coordinator_actor coord,
                              std::shared_ptr<engine_result> result);

/// Whether run_job spawns the job's workers on CAF's scheduler (true) or detached, one thread
/// each (false): detached when a step may block a thread (a device, simulated compute,
/// stragglers) or when several workers compete for the cores.
bool workers_on_scheduler(const job_spec& job);
/// The shard configs of a job: initial values from the model's seeded init, split by range.
std::vector<shard_config> make_shard_configs(const job_spec& job);
/// The parameter ranges of the job's shards.
std::vector<shard_range_t> job_ranges(const job_spec& job);
/// The worker config for worker `id` of a job.
worker_config make_worker_config(const job_spec& job, std::shared_ptr<const dataset> train,
                                 std::int32_t id);

}  // namespace actrain
