#pragma once
#include <algorithm>
#include <vector>

namespace actrain {

/// Median of a non-empty sample (mean of the middle two when even). Takes a copy to sort.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace actrain
