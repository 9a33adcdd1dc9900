// Mini-batches in a seeded, reshuffled order. The shuffle is our own Fisher-Yates over
// std::mt19937_64 (whose output the standard fixes) rather than std::shuffle (whose use of the
// engine is implementation-defined), so a seed gives the same batches with any standard library.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include <actrain/data.hpp>

namespace actrain {

namespace {

/// Uniform in [0, bound) without modulo bias: reject draws from the incomplete last block.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t r;
  do r = rng();
  while (r >= limit);
  return r % bound;
}

}  // namespace

batch_iterator::batch_iterator(const dataset& d, int batch_size, std::uint64_t seed, bool shuffle,
                               bool drop_last)
    : batch_iterator(rows_tag{}, d, 0, d.rows, batch_size, seed, shuffle, drop_last) {}

batch_iterator batch_iterator::over_rows(const dataset& d, std::int64_t begin, std::int64_t end,
                                         int batch_size, std::uint64_t seed, bool shuffle,
                                         bool drop_last) {
  return batch_iterator(rows_tag{}, d, begin, end, batch_size, seed, shuffle, drop_last);
}

batch_iterator::batch_iterator(rows_tag, const dataset& d, std::int64_t begin, std::int64_t end,
                               int batch_size, std::uint64_t seed, bool shuffle, bool drop_last)
    : d_(&d),
      begin_(begin),
      rows_(end - begin),
      batch_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      rng_(seed) {
  if (batch_size < 1)
    throw std::invalid_argument("batch_iterator: batch_size must be >= 1, got " +
                                std::to_string(batch_size));
  if (begin < 0 || begin > end || end > d.rows)
    throw std::out_of_range("batch_iterator: rows [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") are not within the data set's " +
                            std::to_string(d.rows));
  order_.resize(static_cast<std::size_t>(rows_));
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
  reshuffle();
}

void batch_iterator::reshuffle() {
  if (!shuffle_) return;
  for (std::size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[uniform_below(rng_, i)]);
}

std::int64_t batch_iterator::batches_per_epoch() const {
  return drop_last_ ? rows_ / batch_ : (rows_ + batch_ - 1) / batch_;
}

int batch_iterator::next(std::vector<float>& x, std::vector<float>& y) {
  const std::int64_t left = rows_ - pos_;
  if (left <= 0 || (drop_last_ && left < batch_)) {
    ++epoch_;
    pos_ = 0;
    reshuffle();
    return 0;
  }
  const int n = static_cast<int>(std::min<std::int64_t>(left, batch_));
  const auto f = static_cast<std::size_t>(d_->features);
  x.resize(n * f);
  y.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const std::int64_t row = begin_ + order_[static_cast<std::size_t>(pos_ + r)];
    std::copy_n(d_->x.data() + row * f, f, x.data() + r * f);
    y[r] = d_->y[static_cast<std::size_t>(row)];
  }
  pos_ += n;
  return n;
}

namespace {

/// A batch_iterator over a range of rows of a data set the reader keeps alive, read in place:
/// a worker's share costs no copy of its rows.
class dataset_reader final : public batch_reader {
 public:
  dataset_reader(std::shared_ptr<const dataset> d, std::int64_t begin, std::int64_t end, int batch,
                 std::uint64_t seed, bool shuffle)
      : d_(std::move(d)), it_(batch_iterator::over_rows(*d_, begin, end, batch, seed, shuffle)) {}
  int next(std::vector<float>& x, std::vector<float>& y) override { return it_.next(x, y); }

 private:
  std::shared_ptr<const dataset> d_;  // before it_: the iterator points into it
  batch_iterator it_;
};

class dataset_source final : public data_source {
 public:
  explicit dataset_source(std::shared_ptr<const dataset> d) : d_(std::move(d)) {}
  std::int64_t rows() const override { return d_->rows; }
  int features() const override { return d_->features; }
  int num_classes() const override { return d_->num_classes; }
  std::unique_ptr<batch_reader> open(std::int64_t begin, std::int64_t end, int batch,
                                     std::uint64_t seed, bool shuffle) const override {
    return std::make_unique<dataset_reader>(d_, begin, end, batch, seed, shuffle);
  }

 private:
  std::shared_ptr<const dataset> d_;
};

}  // namespace

std::shared_ptr<const data_source> in_memory(std::shared_ptr<const dataset> d) {
  if (!d) throw std::invalid_argument("in_memory: no data set");
  return std::make_shared<dataset_source>(std::move(d));
}

}  // namespace actrain
