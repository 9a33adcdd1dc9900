#pragma once
#include <cstdint>
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
  std::vector<float> values;
  tensor snapshot;            ///< values at `version`, empty after a push until the next pull
  tensor_pool old_snapshots;  ///< earlier snapshots, recycled once no worker reads them
  std::unique_ptr<optimizer> opt;
  optim_spec optim;
  staleness_policy staleness;
  staleness_rule rule;  ///< momentum correction and delay compensation (staleness_policy)
  std::int64_t version = 0;
  int buffer = 1;                ///< pushes summed into one update (shard_config::buffer)
  int buffered = 0;              ///< pushes summed into `sum` so far
  std::vector<float> sum;        ///< buffer > 1: their gradients, scaled by their step factors
  shard_stats stats;
};

shard_actor::behavior_type shard(shard_actor::stateful_pointer<shard_state> self, shard_config cfg);

/// Applies a gradient to a shard's state (the arithmetic of push, with no actor around it).
/// Returns the ack, or an error (bad length, non-finite values) leaving the state untouched.
caf::expected<push_ack> apply_push(shard_state& st, gradient& g);

}  // namespace actrain
