// Per-shard state of a staleness policy: momentum correction and delay compensation.
#include "optim/staleness_rule.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace actrain {

staleness_rule::staleness_rule(staleness_policy p, std::size_t n) : policy_(std::move(p)), n_(n) {
  validate(policy_);
  if (policy_.delay_compensation > 0.f) {
    ms_.assign(n_, 0.f);
    out_.assign(n_, 0.f);
  }
}

float staleness_rule::step_factor() const {
  if (policy_.kind != "sqrt") return 1.f;
  return static_cast<float>(1.0 / std::sqrt(std::max(1.0, mean_)));
}

void staleness_rule::handed_out(std::int64_t version, const tensor& w) {
  if (policy_.delay_compensation <= 0.f || w.size() != n_) return;
  if (!kept_.empty() && kept_.back().first >= version) return;  // kept already
  kept_.emplace_back(version, w);
  while (static_cast<std::int64_t>(kept_.size()) > policy_.history) kept_.pop_front();
}

void staleness_rule::observe(std::int64_t staleness) {
  constexpr std::int64_t window = 100;
  observed_ += 1;
  double weight = 1.0 / static_cast<double>(std::min(observed_, window));
  mean_ += weight * (static_cast<double>(std::max<std::int64_t>(staleness, 0)) - mean_);
}

span<const float> staleness_rule::compensate(span<const float> w, span<const float> g,
                                             std::int64_t base, std::int64_t staleness) {
  const float dc = policy_.delay_compensation;
  if (dc <= 0.f) return g;
  if (w.size() != n_ || g.size() != n_)
    throw std::invalid_argument("staleness_rule: weights have " + std::to_string(w.size()) +
                                " values and gradient " + std::to_string(g.size()) +
                                ", the shard owns " + std::to_string(n_));
  constexpr float decay = 0.95f;
  float* __restrict ms = ms_.data();
  const float* __restrict gp = g.data();
  for (std::size_t i = 0; i < n_; ++i) ms[i] = decay * ms[i] + (1.f - decay) * gp[i] * gp[i];
  const tensor* then = nullptr;
  for (auto& k : kept_)
    if (k.first == base) then = &k.second;
  if (then == nullptr) {
    if (staleness > 0) uncompensated_ += 1;
    return g;  // fresh (w is w_base), or its weights are no longer kept
  }
  const float* __restrict wb = then->data();
  const float* __restrict wp = w.data();
  float* __restrict out = out_.data();
  for (std::size_t i = 0; i < n_; ++i)
    out[i] = gp[i] + dc * gp[i] * gp[i] / std::sqrt(ms[i] + 1e-12f) * (wp[i] - wb[i]);
  return {out_.data(), n_};
}

}  // namespace actrain
