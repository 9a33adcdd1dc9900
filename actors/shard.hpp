#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <actrain/engine.hpp>
#include <actrain/optim.hpp>
#include <actrain/protocol.hpp>

#include "optim/staleness_rule.hpp"

namespace actrain {

/// Owns one contiguous slice of the model and its optimizer state, and applies every push as it
/// arrives (async SGD). Pulls are answered from a snapshot tensor that is shared by every pull
/// until the next push, so a pull never copies more than once per version.
struct shard_state {
  static inline const char* name = "actrain.shard";
  std::int32_t index = 0;
  /// The weights at `version`, shared with every pull of that version and never written: a step
  /// writes the next version into a buffer of its own (optimizer::step_into), so an answer needs
  /// no copy.
  tensor values;
  tensor_pool old_values;  ///< earlier versions, recycled once no answer or kept weight reads them
  std::unique_ptr<optimizer> opt;
  optim_spec optim;
  staleness_policy staleness;
  staleness_rule rule;  ///< momentum correction and delay compensation (staleness_policy)
  std::int64_t version = 0;
  int buffer = 1;                ///< pushes summed into one update (shard_config::buffer)
  int buffered = 0;              ///< pushes summed into `sum` so far
  std::vector<float> sum;        ///< buffer > 1: their gradients, scaled by their step factors
  /// Polyak averaging (shard_config::average): an exponential moving average of `values` over
  /// about `average_span` updates, `averaged` of them folded in since it (re)started from the
  /// values; what pulls from the coordinator (worker -1) read. Empty when off.
  std::vector<float> average;
  std::int64_t average_span = 0;
  std::int64_t averaged = 0;
  bool unfolded = false;  ///< `values` is not in the average yet (settle_average folds it)
  shard_stats stats;
  // Hot replicas ([cluster] replicas = 1). A primary streams every applied update to `replica`
  // and answers a push only once the replica has it (chain replication: what a worker saw
  // acknowledged survives the primary); `waiting` holds those answers, in order, by the version
  // they wait for. A replica applies the stream; promoted, it is the shard.
  replica_sink_actor replica;
  struct waiting_answer {
    std::int64_t version = 0;
    std::function<void()> deliver;
  };
  std::deque<waiting_answer> waiting;
  /// The last step applied per worker, kept by a primary with a replica and by a replica: a push
  /// resent after a failover (step <= this) is answered without applying it twice.
  std::map<std::int32_t, std::int64_t> applied_steps;
  std::int64_t replicated = 0;  ///< updates applied from a primary's stream (replica side)
};

replicated_shard_actor::behavior_type shard(
    replicated_shard_actor::stateful_pointer<shard_state> self, shard_config cfg);

/// The update a push applied, as a replica applies it (apply_push fills it when asked).
struct applied_update {
  bool applied = false;  ///< the values changed (not dropped, buffered or a duplicate)
  replica_update update;
};

/// Applies a gradient to a shard's state (the arithmetic of push, with no actor around it).
/// Returns the ack, or an error (bad length, non-finite values) leaving the state untouched.
/// `out`: filled with what was applied, for a replica. A push from a worker at a step the shard
/// applied already (st.applied_steps, after a failover) is acknowledged and not applied again.
caf::expected<push_ack> apply_push(shard_state& st, gradient& g, applied_update* out = nullptr);

/// Applies a primary's update to a replica's state (the replica side of apply_push). An update
/// that does not follow the replica's version, or of the wrong length, is refused.
caf::expected<std::int64_t> apply_replicated(shard_state& st, const replica_update& u);

/// Folds the shard's values into its weight average after an update (no-op when off): decay
/// min(1 - 1 / span, (1 + k) / (10 + k)) at the k-th update since the average (re)started, so
/// the first updates are not drowned by the initial weights.
void fold_average(shard_state& st);

/// Folds `values` into the average if a push left them unfolded: apply_push leaves that to its
/// caller, so that a push_pull's answer leaves before the pass over the average. The next step
/// and every read of the average settle it first.
void settle_average(shard_state& st);

/// Starts the weight average over from the shard's values (at start and after a restore).
void restart_average(shard_state& st);

}  // namespace actrain
