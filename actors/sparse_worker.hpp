#pragma once
// A worker of a sparse model. Each step it deduplicates its mini-batch's ids, pulls only those
// rows (one request per table shard, plus the dense parameters), computes, and pushes one row
// gradient per shard. The next batch's rows are in flight while it computes (prefetch), and at
// most `window` pushes are outstanding per shard (back-pressure), as in the dense worker.
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <actrain/protocol.hpp>
#include <actrain/sparse.hpp>
#include <actrain/sparse_data.hpp>

namespace actrain {

struct sparse_worker_config {
  std::int32_t id = 0;
  sparse_model_spec model;
  table_spec table;
  std::shared_ptr<const sparse_dataset> train;
  int batch = 256;
  std::uint64_t seed = 42;
  int window = 2;
  bool prefetch = true;
  bool shuffle = true;
  int report_every = 10;
  /// Pull and push every row of the table each step, as a dense parameter server would (the
  /// baseline the sparse path is measured against). For small tables only.
  bool whole_table = false;
  /// How row gradients travel: "none" (float32), "fp16" (half precision), "topk" (only the
  /// topk_fraction of the step's rows with the largest gradient norm; the rest is kept and added
  /// to the row's next gradient: error feedback).
  std::string compression = "none";
  double topk_fraction = 0.01;
  /// Fault injection (tests, chaos runs): >= 0 makes the worker fail at that step.
  std::int64_t fail_after_steps = -1;
};

/// One mini-batch with its gathered rows: filled by the reader, then by the replies.
struct sparse_step {
  std::int64_t step = -1;
  int rows = 0;
  std::vector<std::int64_t> offsets;
  std::vector<std::uint32_t> slots;
  std::vector<float> values, y;
  std::vector<std::uint64_t> unique;                 ///< the batch's ids, by slot
  std::vector<std::vector<std::uint32_t>> by_shard;  ///< per table shard: its slots, in order
  std::vector<float> gathered;                       ///< unique x dim
  std::vector<std::int64_t> base;                    ///< per slot: the row's version
  std::vector<float> dense;
  std::int64_t dense_version = 0;
  std::size_t pending = 0;  ///< replies still to come
  bool ready() const { return step >= 0 && pending == 0; }
};

struct sparse_worker_state {
  static inline const char* name = "actrain.sparse_worker";
  sparse_worker_config cfg;
  sparse_assignment assignment;
  std::unique_ptr<sparse_model> net;
  struct range_walk {
    std::int64_t epochs_left = 0;
    std::vector<std::int64_t> order;
    std::size_t pos = 0;
  };
  std::vector<range_walk> work;
  std::mt19937_64 rng;
  sparse_step buf[2];
  int fetching = 0;  ///< the buffer whose replies are awaited
  std::int64_t step = 0;
  std::vector<int> in_flight;  ///< pushes outstanding per table shard; last: the dense shard
  std::unordered_map<std::uint64_t, std::uint32_t> dedup;
  std::vector<float> dense_grad, row_grad;
  /// topk: per row id, the gradient not sent yet (error feedback) and the row version it was
  /// last pulled at; only rows touched and unsent. Flushed when the worker runs out of work.
  struct unsent_row {
    std::vector<float> g;
    std::int64_t base = 0;
  };
  std::unordered_map<std::uint64_t, unsent_row> residual;
  std::vector<char> send;  ///< per slot of the step being pushed: selected by topk
  bool out_of_work = false;
  bool finished_reported = false;
  progress_report pending;
};

sparse_worker_actor::behavior_type sparse_worker(
    sparse_worker_actor::stateful_pointer<sparse_worker_state> self, sparse_worker_config cfg);

}  // namespace actrain
