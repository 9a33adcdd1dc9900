#include "optim/row_mean.hpp"

#include <algorithm>

namespace actrain {

void row_weighted_mean::add(span<const float> g, std::int32_t rows) {
  if (sum_.empty()) sum_.assign(g.size(), 0.0);
  const auto r = static_cast<double>(std::max(1, rows));
  for (std::size_t i = 0; i < sum_.size(); ++i) sum_[i] += r * static_cast<double>(g[i]);
  rows_ += std::max(1, rows);
}

std::vector<float> row_weighted_mean::take() {
  const double inv = rows_ > 0 ? 1.0 / static_cast<double>(rows_) : 0.0;
  std::vector<float> mean(sum_.size());
  for (std::size_t i = 0; i < mean.size(); ++i) mean[i] = static_cast<float>(sum_[i] * inv);
  std::fill(sum_.begin(), sum_.end(), 0.0);
  rows_ = 0;
  return mean;
}

}  // namespace actrain
