// Staleness policies: how much of a late gradient a shard applies.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <actrain/optim.hpp>

namespace actrain {

float staleness_policy::factor(std::int64_t staleness) const {
  staleness = std::max<std::int64_t>(staleness, 0);  // a gradient cannot be from the future
  if (kind == "drop") return staleness > max_staleness ? 0.f : 1.f;
  if (kind == "damped") {
    if (max_staleness > 0 && staleness > max_staleness) return 0.f;
    if (staleness <= tolerance) return 1.f;
    return static_cast<float>(
        std::sqrt(static_cast<double>(tolerance) / static_cast<double>(staleness)));
  }
  if (kind == "inverse") {
    if (max_staleness > 0 && staleness > max_staleness) return 0.f;
    return 1.f / static_cast<float>(1 + staleness);
  }
  return 1.f;  // "none", and "sqrt" (which scales by the mean staleness: staleness_rule)
}

float staleness_policy::corrected_momentum(float configured, double mean_staleness) const {
  if (momentum != "corrected" || mean_staleness <= 0) return configured;
  auto implicit = mean_staleness / (1.0 + mean_staleness);
  return static_cast<float>(std::max(0.0, static_cast<double>(configured) - implicit));
}

void validate(const staleness_policy& p) {
  if (p.kind != "damped" && p.kind != "sqrt" && p.kind != "none" && p.kind != "inverse" &&
      p.kind != "drop")
    throw std::invalid_argument("staleness_policy.kind: unknown policy '" + p.kind +
                                "' (expected damped, sqrt, none, inverse, drop)");
  if (p.tolerance < 1 || p.tolerance > 1000000)
    throw std::invalid_argument("staleness_policy.tolerance: must be in [1, 1000000], got " +
                                std::to_string(p.tolerance));
  if (p.momentum != "corrected" && p.momentum != "explicit")
    throw std::invalid_argument("staleness_policy.momentum: unknown choice '" + p.momentum +
                                "' (expected corrected, explicit)");
  if (!(p.delay_compensation >= 0.f) || !std::isfinite(p.delay_compensation))
    throw std::invalid_argument(
        "staleness_policy.delay_compensation: must be a finite value >= 0, got " +
        std::to_string(p.delay_compensation));
  if (p.history < 1 || p.history > 1024)
    throw std::invalid_argument("staleness_policy.history: must be in [1, 1024], got " +
                                std::to_string(p.history));
  if (p.buffer < 0 || p.buffer > 4096)
    throw std::invalid_argument("staleness_policy.buffer: must be in [0, 4096], got " +
                                std::to_string(p.buffer));
  if (p.average < -1 || p.average > 1000000)
    throw std::invalid_argument(
        "staleness_policy.average: must be -1 (auto), 0 (off) or updates in [1, 1000000], got " +
        std::to_string(p.average));
  if (p.max_staleness < 0)
    throw std::invalid_argument("staleness_policy.max_staleness: must be >= 0, got " +
                                std::to_string(p.max_staleness));
}

}  // namespace actrain
