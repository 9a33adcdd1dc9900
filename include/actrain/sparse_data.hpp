#pragma once
// Sparse data: rows of (feature id, value) pairs with a binary label, the form of CTR and
// recommendation data (LIBSVM / SVMlight files, hashed categorical features). Core (no CAF).
#include <cstdint>
#include <string>
#include <vector>

namespace actrain {

/// Rows in compressed sparse row form: row r's entries are [offsets[r], offsets[r + 1]) of ids
/// and values. Ids are feature ids (hashed or not); each row's ids are distinct. Labels are 0 or 1.
struct sparse_dataset {
  std::int64_t rows = 0;
  std::vector<std::int64_t> offsets{0};  ///< rows + 1 entries, offsets[0] = 0
  std::vector<std::uint64_t> ids;
  /// One value per id; empty means every value is 1 (one-hot categorical features).
  std::vector<float> values;
  std::vector<float> y;  ///< one label per row, 0 or 1
  /// Ids are < this (the table size the data needs: the largest id + 1, or the hash space).
  std::uint64_t id_space = 0;

  std::int64_t nnz() const { return offsets.back(); }
  float value(std::int64_t entry) const { return values.empty() ? 1.f : values[entry]; }
};

/// Rows [begin, end) of d as a new data set (same id_space).
sparse_dataset slice_rows(const sparse_dataset& d, std::int64_t begin, std::int64_t end);

/// How to read a LIBSVM / SVMlight file: `label id:value id:value ...` per line, `#` comments.
struct libsvm_options {
  /// Ids are taken modulo this when > 0 (feature hashing into a table of that many rows);
  /// ids of one line that collide become one entry, at the first one's place, whose value is
  /// the sum of theirs. 0 keeps them as written (then id_space = largest id + 1).
  std::uint64_t hash_buckets = 0;
  /// Refuse a file with more than this many entries (no input may allocate without bound).
  std::int64_t max_entries = std::int64_t{1} << 31;
};

/// Reads a LIBSVM file. Labels 1 / +1 are positive; 0 and -1 are negative (any other label is
/// refused). Ids are non-negative integers (below 2^63 without hashing), distinct within a line
/// (repeats refused); values finite. Entries keep the file's order. Throws data_error naming
/// file:line and what is wrong (file: alone when it cannot be opened or holds no rows).
sparse_dataset read_libsvm(const std::string& path, const libsvm_options& opts = {});
/// Writes d as a LIBSVM file (labels 0/1, values with 9 significant digits, so every float
/// reads back exactly); throws data_error when the file cannot be written, and
/// std::invalid_argument (before creating the file) when d's vectors disagree or a label is
/// not 0 or 1.
void write_libsvm(const sparse_dataset& d, const std::string& path);

/// A seeded synthetic CTR set with a known logistic ground truth: `fields` categorical fields,
/// field f with `ids_per_field` values whose frequencies follow a power law (Zipf, exponent
/// `zipf`), each row one value per field. The id of value v in field f is f * ids_per_field + v
/// (no collisions; id_space = fields * ids_per_field). Each id has a true weight drawn from
/// N(0, weight_sd^2) by a hash of (seed, id) (so ids never seen cost no memory); a row is
/// positive with probability sigmoid(bias + sum of its ids' weights).
struct ctr_spec {
  std::int64_t rows = 100000;
  int fields = 20;
  std::int64_t ids_per_field = 50000;
  double zipf = 1.1;
  double weight_sd = 0.5;
  double bias = -1.5;  ///< about 28% positives with the defaults
  std::uint64_t seed = 42;
};
/// Throws std::invalid_argument naming the bad field.
void validate(const ctr_spec& s);

/// The data set plus the ground truth's logit for each row (what the best model predicts).
struct ctr_data {
  sparse_dataset data;
  std::vector<float> true_logit;  ///< one per row
};
/// Rows [first_row, first_row + s.rows) of the infinite stream for s.seed: a training set and a
/// test set drawn from the same truth are two calls with disjoint row ranges.
ctr_data make_synthetic_ctr(const ctr_spec& s, std::int64_t first_row = 0);
/// The true weight of `id` under s (bias excluded).
float ctr_true_weight(const ctr_spec& s, std::uint64_t id);

// -- binary classification metrics ---------------------------------------------------------------

/// Area under the ROC curve of `scores` (any monotone score: logits or probabilities) against
/// 0/1 `labels`; ties count one half. O(n log n). Throws std::invalid_argument when the sizes
/// differ, there are none, a label is not 0 or 1, a score is NaN, or one class is absent.
double roc_auc(const std::vector<float>& scores, const std::vector<float>& labels);
/// Mean binary cross-entropy of `logits` (sigmoid applied, computed stably; infinite logits
/// allowed) against 0/1 labels. Throws std::invalid_argument as roc_auc does, except that one
/// class is enough.
double log_loss_from_logits(const std::vector<float>& logits, const std::vector<float>& labels);

}  // namespace actrain
