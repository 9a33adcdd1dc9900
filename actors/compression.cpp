#include "actors/compression.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tensor/codec.hpp"

namespace actrain {

bool is_compressed(const gradient& g) {
  return !g.half_values.empty() || !g.indices.empty();
}

caf::error expand_gradient(gradient& g, std::size_t n, const std::string& who) {
  if (!is_compressed(g)) return caf::none;
  auto from = who + ": gradient from worker " + std::to_string(g.worker) + ": ";
  // A receiver that does not know its slice length (n = 0) cannot check a compressed slice.
  if (n == 0)
    return make_error(errc::bad_config, from + "compressed, but the slice length is unknown");
  if (!g.half_values.empty()) {
    if (!g.indices.empty() || !g.values.empty())
      return make_error(errc::bad_message,
                        from + "half-precision values together with other values or indices");
    if (g.half_values.size() != n)
      return make_error(errc::bad_length, from + std::to_string(g.half_values.size()) +
                                              " half-precision values, expected " +
                                              std::to_string(n));
    std::vector<float> out(n);
    decode_half(g.half_values.data(), n, out.data());
    g.values = tensor(std::move(out));
    g.half_values.clear();
    g.length = 0;
    return caf::none;
  }
  if (g.length < 0 || static_cast<std::uint64_t>(g.length) != n)
    return make_error(errc::bad_length, from + "top-k of a slice of " + std::to_string(g.length) +
                                            " values, expected " + std::to_string(n));
  if (g.values.size() != g.indices.size())
    return make_error(errc::bad_length, from + std::to_string(g.values.size()) +
                                            " top-k values for " +
                                            std::to_string(g.indices.size()) + " indices");
  std::int64_t prev = -1;
  for (auto i : g.indices) {
    if (static_cast<std::int64_t>(i) <= prev || i >= n)
      return make_error(errc::bad_message,
                        from + "top-k index " + std::to_string(i) +
                            (i >= n ? " is outside the slice of " + std::to_string(n)
                                    : " does not follow " + std::to_string(prev)));
    prev = i;
  }
  std::vector<float> out(n, 0.f);
  const float* v = g.values.data();
  for (std::size_t j = 0; j < g.indices.size(); ++j) out[g.indices[j]] = v[j];
  g.values = tensor(std::move(out));
  g.indices.clear();
  g.length = 0;
  return caf::none;
}

std::int64_t payload_bytes(const gradient& g) {
  return static_cast<std::int64_t>(g.values.size() * sizeof(float) +
                                   g.half_values.size() * sizeof(std::uint16_t) +
                                   g.indices.size() * sizeof(std::uint32_t));
}

gradient_encoder::gradient_encoder(std::string kind, double fraction, std::size_t num_params)
    : kind_(std::move(kind)), fraction_(fraction) {
  if (kind_ != "none" && kind_ != "fp16" && kind_ != "topk")
    throw std::invalid_argument("compression must be none, fp16 or topk, not '" + kind_ + "'");
  if (kind_ == "topk") {
    if (!(fraction_ > 0 && fraction_ <= 1))
      throw std::invalid_argument("topk fraction must be in (0, 1]");
    residual_.assign(num_params, 0.f);
  }
}

void gradient_encoder::encode(gradient& g, const float* grad, std::size_t begin, std::size_t n) {
  g.values = tensor();
  if (kind_ == "fp16") {
    g.half_values.resize(n);
    encode_half(grad + begin, n, g.half_values.data());
    return;
  }
  // top-k with error feedback: the residual joins this step's gradient, the largest entries go
  // out and leave the residual, the rest wait there for a later step.
  float* r = residual_.data() + begin;
  scores_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i] += grad[begin + i];
    // NaN first (as infinity): it goes out, and the receiver refuses the push as non-finite.
    scores_[i] = std::isnan(r[i]) ? std::numeric_limits<float>::infinity() : std::fabs(r[i]);
  }
  auto k = static_cast<std::size_t>(std::ceil(fraction_ * static_cast<double>(n)));
  g.indices = top_k(scores_, std::max<std::size_t>(1, k));
  std::vector<float> sent(g.indices.size());
  for (std::size_t j = 0; j < g.indices.size(); ++j) {
    sent[j] = r[g.indices[j]];
    r[g.indices[j]] = 0.f;
  }
  g.values = tensor(std::move(sent));
  g.length = static_cast<std::int64_t>(n);
}

}  // namespace actrain
