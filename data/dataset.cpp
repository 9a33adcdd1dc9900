// Row slicing and the contiguous split of a data set across workers.
#include <algorithm>
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
