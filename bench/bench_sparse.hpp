#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench sparse [--rows=2000000] [--test-rows=200000] [--fields=20]
/// [--ids-per-field=50000] [--zipf=1.6] [--speed-rows=1000000] [--no-torch] [--no-doc]`:
/// sparse models on synthetic CTR data with a known ground truth, side by side in one run:
/// (1) accuracy: async and sync, 4 workers and 2 sparse shards, Adagrad and FTRL, logistic
/// regression and an FM, each against the ground truth's test AUC and log loss; (2) speed: one
/// worker and one shard against PyTorch (EmbeddingBag / Embedding with sparse gradients,
/// Adagrad, 1 thread) on the same rows written as LIBSVM files, in samples/s and samples per
/// CPU-second; (3) the sparse path against the same model pulling its whole table every step, in
/// samples/s and bytes per step; (4) memory: a 10^8 x 16 table declared, 10^6 rows touched.
/// Writes the tables to docs/benchmarks.md (section "sparse"). Returns 0, or 2 for a bad option.
int bench_sparse(const std::vector<std::string>& args);

}  // namespace actrain
