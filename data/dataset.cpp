// Row slicing, standardization and the contiguous split of a data set across workers.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <actrain/data.hpp>

namespace actrain {

dataset slice_rows(const dataset& d, std::int64_t begin, std::int64_t end) {
  if (begin < 0 || begin > end || end > d.rows)
    throw std::out_of_range("slice_rows: [" + std::to_string(begin) + ", " + std::to_string(end) +
                            ") is not inside [0, " + std::to_string(d.rows) + ")");
  dataset out;
  out.rows = end - begin;
  out.features = d.features;
  out.num_classes = d.num_classes;
  const auto f = static_cast<std::size_t>(d.features);
  out.x.assign(d.x.begin() + begin * f, d.x.begin() + end * f);
  out.y.assign(d.y.begin() + begin, d.y.begin() + end);
  return out;
}

standardization fit_standardization(const dataset& d, bool target) {
  if (d.rows < 1) throw std::invalid_argument("standardization needs at least one row");
  if (target && d.num_classes > 0)
    throw std::invalid_argument("class labels are not standardized (only a regression target)");
  const auto f = static_cast<std::size_t>(d.features);
  const auto n = static_cast<double>(d.rows);
  std::vector<double> sum(f, 0.0), sq(f, 0.0);
  for (std::int64_t r = 0; r < d.rows; ++r)
    for (std::size_t c = 0; c < f; ++c) sum[c] += d.x[static_cast<std::size_t>(r) * f + c];
  for (std::size_t c = 0; c < f; ++c) sum[c] /= n;
  for (std::int64_t r = 0; r < d.rows; ++r)
    for (std::size_t c = 0; c < f; ++c) {
      const double e = d.x[static_cast<std::size_t>(r) * f + c] - sum[c];
      sq[c] += e * e;
    }
  // A constant column keeps scale 1: it becomes 0 everywhere instead of NaN.
  auto scale_of = [&](double var) {
    const double sd = std::sqrt(var / n);
    return sd > 0 && std::isfinite(sd) ? static_cast<float>(sd) : 1.0f;
  };
  standardization s;
  for (std::size_t c = 0; c < f; ++c) {
    s.mean.push_back(static_cast<float>(sum[c]));
    s.scale.push_back(scale_of(sq[c]));
  }
  if (target) {
    double m = 0, v = 0;
    for (float y : d.y) m += y;
    m /= n;
    for (float y : d.y) v += (y - m) * (y - m);
    s.target = true;
    s.y_mean = static_cast<float>(m);
    s.y_scale = scale_of(v);
  }
  return s;
}

void apply(const standardization& s, dataset& d) {
  if (s.empty()) return;
  if (s.mean.size() != static_cast<std::size_t>(d.features) || s.scale.size() != s.mean.size())
    throw std::invalid_argument("the standardization has " + std::to_string(s.mean.size()) +
                                " features, the data set " + std::to_string(d.features));
  const auto f = s.mean.size();
  for (std::size_t i = 0; i < d.x.size(); ++i) d.x[i] = (d.x[i] - s.mean[i % f]) / s.scale[i % f];
  if (s.target)
    for (float& y : d.y) y = (y - s.y_mean) / s.y_scale;
}

std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t rows, int n, int i) {
  if (n < 1 || i < 0 || i >= n)
    throw std::invalid_argument("shard_range: shard " + std::to_string(i) + " of " +
                                std::to_string(n) + " does not exist");
  // The first rows % n shards get one extra row, so sizes differ by at most one.
  const std::int64_t base = rows / n, extra = rows % n;
  const std::int64_t begin = i * base + std::min<std::int64_t>(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

std::vector<dataset> split_shards(const dataset& d, int n) {
  if (n < 1 || n > d.rows)
    throw std::invalid_argument("split_shards: cannot split " + std::to_string(d.rows) +
                                " rows into " + std::to_string(n) + " non-empty shards");
  std::vector<dataset> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto r = shard_range(d.rows, n, i);
    out.push_back(slice_rows(d, r.first, r.second));
  }
  return out;
}

}  // namespace actrain
