#pragma once
// The row-weighted mean that makes several workers' slices one step's gradient (barriers in
// sync mode, local aggregators): sum_i rows_i * g_i / sum_i rows_i, the gradient of one batch
// made of every slice's rows. Summed in double: a float sum would depend on the order the
// slices arrive in (a sync step's mean would differ in its last bits from run to run); K slices
// of floats times row counts sum exactly in double unless their magnitudes are ~2^29 apart.
#include <cstdint>
#include <vector>

#include <actrain/span.hpp>

namespace actrain {

class row_weighted_mean {
 public:
  /// The slice length; 0 until the first add() sets it.
  std::size_t size() const { return sum_.size(); }
  /// Rows added since the last take().
  std::int64_t rows() const { return rows_; }
  /// Sets the slice length if none is set yet: the first slice a caller sees decides it.
  void expect_size(std::size_t n) {
    if (sum_.empty()) sum_.assign(n, 0.0);
  }
  /// Adds g weighted by its row count (below 1 counts as 1). The first slice sets size().
  /// REQUIRES: g.size() == size() once set (callers check and refuse other lengths first).
  void add(span<const float> g, std::int32_t rows);
  /// The mean so far (zeros when nothing was added), and starts over at the same size.
  std::vector<float> take();

 private:
  std::vector<double> sum_;
  std::int64_t rows_ = 0;
};

}  // namespace actrain
