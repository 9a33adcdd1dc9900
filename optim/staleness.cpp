// Staleness policies: how much of a late gradient a shard applies.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <actrain/optim.hpp>

namespace actrain {

float staleness_policy::factor(std::int64_t staleness) const {
  staleness = std::max<std::int64_t>(staleness, 0);  // a gradient cannot be from the future
  if (kind == "drop") return staleness > max_staleness ? 0.f : 1.f;
  if (kind == "inverse") {
    if (max_staleness > 0 && staleness > max_staleness) return 0.f;
    return 1.f / static_cast<float>(1 + staleness);
  }
  return 1.f;  // "none"
}

void validate(const staleness_policy& p) {
  if (p.kind != "none" && p.kind != "inverse" && p.kind != "drop")
    throw std::invalid_argument("staleness_policy.kind: unknown policy '" + p.kind +
                                "' (expected none, inverse, drop)");
  if (p.max_staleness < 0)
    throw std::invalid_argument("staleness_policy.max_staleness: must be >= 0, got " +
                                std::to_string(p.max_staleness));
}

}  // namespace actrain
