#pragma once
// A sparse shard: the rows of one embedding table whose ids map to it (table_shard_of), created
// on first touch, each with its own lazy optimizer state and version. Pulls and pushes name
// their rows; nothing else of the table travels.
#include <cstdint>
#include <memory>

#include <actrain/protocol.hpp>
#include <actrain/sparse.hpp>

#include "optim/row_table.hpp"

namespace actrain {

/// How to build one sparse shard.
struct sparse_shard_config {
  std::int32_t index = 0;
  std::int32_t shards = 1;  ///< shards of the table (the ids this one owns follow from it)
  table_spec table;
  row_optim_spec optim;
  std::size_t hot_rows = 10;  ///< rows named in stats (the hottest by traffic)
};

struct sparse_shard_state {
  static inline const char* name = "actrain.sparse_shard";
  sparse_shard_config cfg;
  std::unique_ptr<row_table> rows;
  table_stats stats;
  double staleness_sum = 0;
};

/// Checks a request or gradient from a worker: every id owned by this shard and < table rows,
/// the value count ids x dim, finite values, one base version per id. Returns none or the error
/// naming what is wrong (the caller refuses the message).
caf::error check_rows(const sparse_shard_config& cfg, std::int32_t worker,
                      const std::vector<std::uint64_t>& ids, const std::vector<float>* values,
                      const std::vector<std::int64_t>* base_versions);

/// Decodes fp16 row values (half_values) into g.values; an error when both are set or the count
/// is not ids x dim. Shards and barriers call it before reading values.
caf::error take_row_values(row_gradient& g, int dim);

sparse_shard_actor::behavior_type sparse_shard(
    sparse_shard_actor::stateful_pointer<sparse_shard_state> self, sparse_shard_config cfg);

}  // namespace actrain
