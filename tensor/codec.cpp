#include "tensor/codec.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace actrain {

static_assert(sizeof(_Float16) == sizeof(std::uint16_t), "half is 16 bits");

void encode_half(const float* x, std::size_t n, std::uint16_t* out) {
  for (std::size_t i = 0; i < n; ++i) {
    auto h = static_cast<_Float16>(x[i]);
    std::memcpy(&out[i], &h, sizeof h);
  }
}

void decode_half(const std::uint16_t* h, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    _Float16 v;
    std::memcpy(&v, &h[i], sizeof v);
    out[i] = static_cast<float>(v);
  }
}

std::vector<std::uint32_t> top_k(const std::vector<float>& scores, std::size_t k) {
  std::vector<std::uint32_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0u);
  k = std::min(k, idx.size());
  auto larger = [&](std::uint32_t a, std::uint32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  };
  std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), larger);
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace actrain
