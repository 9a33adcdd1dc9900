#pragma once
// One shard's part of an embedding table: the rows it owns that were touched, each with its
// optimizer state, version and traffic count, kept in flat arrays indexed by slot (no allocation
// per row), an id -> slot map, and a least-recently-used list for bounded tables.
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include <actrain/sparse.hpp>

namespace actrain {

class row_table {
 public:
  /// REQUIRES: validate(t) and validate(o) passed.
  row_table(table_spec t, row_optim_spec o);

  /// Copies the rows of ids[0..n) into out (n x dim, row-major) and their versions into
  /// versions (when not null), creating missing rows with their initial values.
  void pull(const std::uint64_t* ids, std::size_t n, float* out, std::int64_t* versions);
  /// Like pull, but a missing row is not created: its initial values are copied (evaluation
  /// reads rows it must not make the table hold).
  void peek(const std::uint64_t* ids, std::size_t n, float* out) const;
  /// Applies grads (n x dim) to the rows of ids with the row rule at learning-rate factor
  /// `lr_scale`; a missing row (never pulled, or evicted since) is created first. When
  /// base_versions is not null, returns the summed staleness (row version minus base version)
  /// over the n rows.
  std::int64_t push(const std::uint64_t* ids, std::size_t n, const float* grads,
                    const std::int64_t* base_versions, float lr_scale = 1.f);

  std::size_t size() const { return map_.size(); }  ///< rows held
  std::int64_t evicted() const { return evicted_; }
  int dim() const { return dim_; }
  /// Bytes held by the rows, their state and the map (an estimate of the map's nodes).
  std::size_t memory_bytes() const;
  /// The `k` rows with the most pulls + pushes, most first: (id, count).
  std::vector<std::pair<std::uint64_t, std::int64_t>> hottest(std::size_t k) const;
  /// The row of `id` if held (nullptr otherwise), for tests and evaluation.
  const float* find(std::uint64_t id) const;
  /// Version of a held row (0 if not held).
  std::int64_t version(std::uint64_t id) const;

 private:
  std::uint32_t slot_of(std::uint64_t id);  ///< creates (or evicts for) a missing row
  void touch(std::uint32_t s);              ///< moves s to the front of the LRU list
  void unlink(std::uint32_t s);
  void push_front(std::uint32_t s);  ///< REQUIRES: s is not in the list
  void init_row(std::uint32_t s, std::uint64_t id);
  void apply(std::uint32_t s, const float* g, float lr);

  table_spec t_;
  row_optim_spec o_;
  int dim_;
  int state_slots_;
  std::unordered_map<std::uint64_t, std::uint32_t> map_;
  std::vector<std::uint64_t> ids_;          ///< per slot
  std::vector<float> values_;               ///< slots x dim
  std::vector<float> state_;                ///< slots x dim x state_slots
  std::vector<std::int64_t> versions_;      ///< per slot
  std::vector<std::int64_t> traffic_;       ///< per slot: pulls + pushes
  std::vector<std::uint32_t> prev_, next_;  ///< LRU list (bounded tables only)
  std::uint32_t head_ = none_, tail_ = none_;
  std::int64_t evicted_ = 0;
  static constexpr std::uint32_t none_ = 0xffffffffu;
};

}  // namespace actrain
