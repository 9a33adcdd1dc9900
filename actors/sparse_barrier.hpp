#pragma once
// Synchronous training over a sparse shard: the barrier implements the sparse shard's interface
// and stands in front of one. It sums the row gradients of step t from every worker still in the
// job (each weighted by its rows, so the result is the gradient of the mean loss over the global
// batch), pushes that once, and holds pulls for step t + 1 until it is applied. Workers cannot
// tell it from the shard.
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include <actrain/protocol.hpp>

namespace actrain {

struct sparse_barrier_config {
  sparse_shard_actor shard;
  std::int32_t workers = 1;  ///< workers 0..N-1 push here
  int dim = 1;
};

struct sparse_barrier_state {
  static inline const char* name = "actrain.sparse_barrier";
  /// Answers every held pull with `ended_by` (else errc::stopped): see answer_held_at_end.
  ~sparse_barrier_state();
  sparse_barrier_config cfg;
  caf::error ended_by;       ///< an actrain reason the barrier ended with (a stopped or failed job)
  std::int64_t applied = 0;  ///< steps applied: pulls for steps <= applied are answerable
  std::int64_t closed = 0;   ///< steps applied or being applied: a push for an earlier one is late
  std::set<std::int32_t> departed;
  struct step_sum {
    std::set<std::int32_t> arrived;
    std::int64_t rows = 0;
    std::unordered_map<std::uint64_t, std::uint32_t> index;
    std::vector<std::uint64_t> ids;
    std::vector<std::int64_t> base;
    std::vector<float> values;  ///< sum of rows_i * g_i
  };
  std::map<std::int64_t, step_sum> steps;  ///< steps with pushes not applied yet
  bool applying = false;
  struct held_pull {
    row_request req;
    caf::typed_response_promise<row_block> promise;
  };
  std::vector<held_pull> held;
};

sparse_shard_actor::behavior_type sparse_barrier(
    sparse_shard_actor::stateful_pointer<sparse_barrier_state> self, sparse_barrier_config cfg);

}  // namespace actrain
