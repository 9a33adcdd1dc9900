#pragma once
// The payloads of sparse parameters (embedding tables, actors/sparse_shard.hpp): row pulls, row
// blocks, row gradients and a table's counters; each with its inspect(). Part of
// <actrain/protocol.hpp>.
#include <cstdint>
#include <vector>

#include <caf/all.hpp>

#include <actrain/wire.hpp>

namespace actrain {

/// A worker asks a sparse shard (or a sparse barrier in front of it) for the rows of `ids` (each
/// owned by that shard, distinct) to compute step `step` with. step -1: as the table stands
/// (evaluation).
struct row_request {
  std::int32_t worker = 0;
  std::int64_t step = 0;
  std::vector<std::uint64_t> ids;
};

/// The rows asked for, in the order asked: ids.size() x dim floats, and each row's version
/// (updates applied to it so far).
struct row_block {
  std::int32_t shard = 0;
  std::int64_t version = 0;  ///< pushes the shard applied so far
  std::vector<float> values;
  std::vector<std::int64_t> row_versions;
};

/// Row gradients for one sparse shard: ids.size() x dim floats, computed by `worker` at `step`
/// from rows of `base_versions` (one per id, from the row_block it pulled). `rows`: samples the
/// gradient averages over. With fp16 compression the values travel as half-precision bit
/// patterns in `half_values` (and `values` is empty); the shard decodes them before its rule.
struct row_gradient {
  std::int32_t worker = 0;
  std::int64_t step = 0;
  std::int32_t rows = 0;
  std::vector<std::uint64_t> ids;
  std::vector<std::int64_t> base_versions;
  std::vector<float> values;
  std::vector<std::uint16_t> half_values;
};

/// A sparse shard's counters: traffic, rows held, memory and the hottest rows.
struct table_stats {
  std::int32_t shard = 0;
  std::int64_t version = 0;  ///< pushes applied
  std::int64_t pushes = 0;
  std::int64_t pulls = 0;
  std::int64_t rows_pulled = 0;
  std::int64_t rows_pushed = 0;
  std::int64_t rows_held = 0;
  std::int64_t evicted = 0;
  std::int64_t rejected = 0;  ///< malformed messages refused
  std::int64_t memory_bytes = 0;
  std::int64_t bytes_in = 0;   ///< payload bytes of pulls' ids and pushes received
  std::int64_t bytes_out = 0;  ///< payload bytes of rows sent
  double mean_staleness = 0;   ///< per pushed row: its version minus the version it was pulled at
  std::vector<std::uint64_t> hot_ids;  ///< the most pulled + pushed rows, most first
  std::vector<std::int64_t> hot_counts;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_request& x) {
  return f(caf::meta::type_name("row_request"), x.worker, x.step, wire_block(x.ids));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_block& x) {
  return f(caf::meta::type_name("row_block"), x.shard, x.version, wire_block(x.values),
           wire_block(x.row_versions));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_gradient& x) {
  return f(caf::meta::type_name("row_gradient"), x.worker, x.step, x.rows, wire_block(x.ids),
           wire_block(x.base_versions), wire_block(x.values), wire_block(x.half_values));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, table_stats& x) {
  return f(caf::meta::type_name("table_stats"), x.shard, x.version, x.pushes, x.pulls,
           x.rows_pulled, x.rows_pushed, x.rows_held, x.evicted, x.rejected, x.memory_bytes,
           x.bytes_in, x.bytes_out, wire_bits(x.mean_staleness), wire_block(x.hot_ids),
           wire_block(x.hot_counts));
}

}  // namespace actrain
