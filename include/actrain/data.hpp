#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace actrain {

/// A bad data file: the message names the file and what is wrong with it.
class data_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A data set in host memory: x is rows x features (row-major); y has one target per row (a
/// regression target, or a class index stored as a float when num_classes > 0).
struct dataset {
  std::int64_t rows = 0;
  int features = 0;
  int num_classes = 0;  ///< 0 for regression
  std::vector<float> x;
  std::vector<float> y;
};

/// The rows [begin, end) of d as a new data set.
dataset slice_rows(const dataset& d, std::int64_t begin, std::int64_t end);

/// Per-column standardization fitted on a training set: each feature becomes (x - mean) / scale,
/// and with `target` (regression) the label too. scale is the population standard deviation, 1
/// for a constant column. Saved in the model file, so a trained model is evaluated on data
/// scaled the same way.
struct standardization {
  std::vector<float> mean;   ///< per feature; empty = no standardization
  std::vector<float> scale;  ///< per feature
  bool target = false;       ///< the label is standardized too
  float y_mean = 0;
  float y_scale = 1;
  bool empty() const { return mean.empty(); }
};
/// Fits on every row of d (in double); throws std::invalid_argument when d has no rows, or
/// `target` on a classification set.
standardization fit_standardization(const dataset& d, bool target);
/// Applies s to d in place; throws std::invalid_argument when d's feature count differs.
void apply(const standardization& s, dataset& d);

/// Splits d into n disjoint, contiguous shards that cover every row; sizes differ by at most 1.
/// Throws std::invalid_argument when n < 1 or n > rows.
std::vector<dataset> split_shards(const dataset& d, int n);
/// The range [first, second) of part i of n of `rows` items: the first rows % n parts get one
/// more, so sizes differ by at most one. Data shards (split_shards) and parameter shards
/// (param_range) are both cut by it.
std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t rows, int n, int i);

/// Walks a data set in mini-batches, reshuffling the row order each epoch with a seeded RNG
/// (the same seed gives the same batches). The last batch of an epoch may be short; with
/// drop_last it is skipped.
class batch_iterator {
 public:
  batch_iterator(const dataset& d, int batch_size, std::uint64_t seed, bool shuffle = true,
                 bool drop_last = false);
  /// Rows [begin, end) of `d`, read in place (no copy): the same batches as an iterator over
  /// slice_rows(d, begin, end) with the same seed. Throws std::out_of_range for a range
  /// outside `d`.
  static batch_iterator over_rows(const dataset& d, std::int64_t begin, std::int64_t end,
                                  int batch_size, std::uint64_t seed, bool shuffle = true,
                                  bool drop_last = false);
  /// Copies the next batch into x (rows x features) and y; returns its row count, or 0 at the
  /// end of the epoch (the next call starts a new epoch).
  int next(std::vector<float>& x, std::vector<float>& y);
  std::int64_t epoch() const { return epoch_; }
  std::int64_t batches_per_epoch() const;

 private:
  struct rows_tag {};
  batch_iterator(rows_tag, const dataset& d, std::int64_t begin, std::int64_t end, int batch_size,
                 std::uint64_t seed, bool shuffle, bool drop_last);
  void reshuffle();
  const dataset* d_;
  std::int64_t begin_ = 0;  ///< first row of d_ this iterator reads
  std::int64_t rows_ = 0;   ///< rows it reads, from begin_
  int batch_;
  bool shuffle_;
  bool drop_last_;
  std::mt19937_64 rng_;
  std::vector<std::int64_t> order_;
  std::int64_t pos_ = 0;
  std::int64_t epoch_ = 0;
};

/// Reads one worker's rows in mini-batches, epoch after epoch. Belongs to one worker's thread.
class batch_reader {
 public:
  virtual ~batch_reader() = default;
  /// Writes the next batch into x (rows x features, row-major) and y (one target per row; a
  /// class index stored as a float for classification) and returns its row count, at most the
  /// batch size; 0 at the end of an epoch (the next call starts the next one).
  virtual int next(std::vector<float>& x, std::vector<float>& y) = 0;
};

/// Where workers' training rows come from: the data set in memory (in_memory), or rows an
/// application produces or reads itself, so the training set need not fit in one process (each
/// worker opens only the rows it is assigned). Shared by every worker of a process: const and
/// thread-safe.
class data_source {
 public:
  virtual ~data_source() = default;
  virtual std::int64_t rows() const = 0;  ///< rows of the whole training set
  virtual int features() const = 0;
  virtual int num_classes() const = 0;  ///< 0 for regression
  /// A reader of rows [begin, end) in batches of `batch`; `seed` decides a shuffle, if the source
  /// shuffles. Called on the worker's thread once per assignment; may throw std::runtime_error
  /// (a file that cannot be read), which fails that worker naming the error.
  virtual std::unique_ptr<batch_reader> open(std::int64_t begin, std::int64_t end, int batch,
                                             std::uint64_t seed, bool shuffle) const = 0;
};

/// The data set in memory as a source: its rows reshuffled every epoch by batch_iterator (the
/// reference trainer's order for the same seed). Every worker reads its assigned range in place
/// (batch_iterator::over_rows): N workers in one process hold one copy of the set, not N + 1.
std::shared_ptr<const data_source> in_memory(std::shared_ptr<const dataset> d);

}  // namespace actrain
