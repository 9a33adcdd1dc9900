// Learning-rate schedules and gradient clipping: pure functions of their arguments.
#include <algorithm>
#include <cmath>

#include <actrain/optim.hpp>

namespace actrain {

float scheduled_lr(const optim_spec& spec, std::int64_t step) {
  step = std::max<std::int64_t>(step, 0);
  if (spec.schedule == "step" && spec.step_size > 0) {
    const double k = static_cast<double>(step / spec.step_size);
    return static_cast<float>(spec.lr * std::pow(double(spec.gamma), k));
  }
  if (spec.schedule == "cosine" && spec.total_steps > 0) {
    // Half a cosine from lr at step 0 to min_lr at total_steps, then flat at min_lr.
    const double t = static_cast<double>(std::min(step, spec.total_steps)) / spec.total_steps;
    const double pi = std::acos(-1.0);
    return static_cast<float>(spec.min_lr +
                              0.5 * (double(spec.lr) - spec.min_lr) * (1.0 + std::cos(pi * t)));
  }
  return spec.lr;
}

double clip_by_norm(span<float> g, double max_norm) {
  double sum = 0;  // double: a float sum over millions of squares loses digits
  for (float v : g) sum += double(v) * v;
  const double norm = std::sqrt(sum);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / norm);
    for (float& v : g) v *= scale;
  }
  return norm;
}

}  // namespace actrain
