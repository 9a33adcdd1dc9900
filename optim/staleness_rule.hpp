#pragma once
// The per-shard state of a staleness policy (staleness_policy in include/actrain/optim.hpp): the
// running mean staleness the momentum correction reads, and for delay compensation the weights
// recently handed out and a running mean of squared gradients.
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include <actrain/optim.hpp>
#include <actrain/tensor.hpp>

namespace actrain {

class staleness_rule {
 public:
  staleness_rule() = default;
  staleness_rule(staleness_policy p, std::size_t n);

  const staleness_policy& policy() const { return policy_; }

  /// Weights at `version` were handed out (a pull): kept while delay compensation is on and the
  /// version is among the newest `history`.
  void handed_out(std::int64_t version, const tensor& w);
  /// Forgets the kept weights (after the shard's values were replaced, e.g. a restore).
  void forget_weights() { kept_.clear(); }

  /// Counts one applied push `staleness` updates old into the running mean (the plain mean of
  /// the first 100, then an exponential mean with weight 1/100).
  void observe(std::int64_t staleness);
  double mean_staleness() const { return mean_; }

  /// The factor "sqrt" takes the step by now: 1 / sqrt(max(1, mean staleness)); 1 otherwise.
  float step_factor() const;

  /// Every push's gradient mass also waited `steps` on its worker before it was sent (top-k
  /// with error feedback): the momentum correction adds it to the mean staleness.
  void hold(double steps) { held_ = steps > 0 ? steps : 0; }

  /// The momentum coefficient a rule configured with `configured` runs with now.
  float momentum_for(float configured) const {
    return policy_.corrected_momentum(configured, mean_ + held_);
  }

  /// The gradient to apply for `g`, computed from the weights at version `base` (`staleness`
  /// updates ago), with the shard's weights `w` now: `g` itself when delay compensation is off,
  /// otherwise g + dc * g * g / sqrt(ms + 1e-12) * (w - w_base), ms updated with g first. A
  /// stale gradient whose weights are no longer kept is returned as is and counted. The returned
  /// span stays valid until the next call. Throws std::invalid_argument unless w and g have the
  /// size given at construction.
  span<const float> compensate(span<const float> w, span<const float> g, std::int64_t base,
                               std::int64_t staleness);

  /// Stale pushes whose weights were no longer kept (applied uncompensated).
  std::int64_t uncompensated() const { return uncompensated_; }
  std::size_t kept() const { return kept_.size(); }

 private:
  staleness_policy policy_;
  std::size_t n_ = 0;
  double mean_ = 0;
  double held_ = 0;
  std::int64_t observed_ = 0;
  std::deque<std::pair<std::int64_t, tensor>> kept_;  ///< (version, weights), oldest first
  std::vector<float> ms_;                             ///< running mean of g * g
  std::vector<float> out_;                            ///< the compensated gradient
  std::int64_t uncompensated_ = 0;
};

}  // namespace actrain
