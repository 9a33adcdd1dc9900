// Checks on optimizer specs, so a bad config fails when the job starts rather than as NaNs later.
#include <cmath>
#include <stdexcept>
#include <string>

#include <actrain/optim.hpp>

#include "optim/kinds.hpp"

namespace actrain {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw std::invalid_argument("optim_spec." + field + ": " + what);
}

void require(bool ok, const std::string& field, const std::string& what) {
  if (!ok) bad(field, what);
}

std::string str(float v) {
  return std::to_string(v);
}

}  // namespace

void validate(const optim_spec& s) {
  const bool builtin = is_builtin_optimizer(s.kind);
  if (!builtin && !is_registered_optimizer(s.kind)) {
    std::string list;
    for (const auto& k : optimizer_kinds()) list += (list.empty() ? "" : ", ") + k;
    bad("kind", "unknown optimizer '" + s.kind + "' (expected " + list + ")");
  }
  if (builtin && !s.options.empty())
    bad(s.options.begin()->first, "kind " + s.kind + " takes no such option");
  require(std::isfinite(s.lr) && s.lr > 0.f, "lr", "must be a finite number > 0, got " + str(s.lr));
  require(std::isfinite(s.weight_decay) && s.weight_decay >= 0.f, "weight_decay",
          "must be >= 0, got " + str(s.weight_decay));
  if (s.kind == "momentum" || s.kind == "nesterov")
    require(s.momentum >= 0.f && s.momentum < 1.f, "momentum",
            "must be in [0, 1), got " + str(s.momentum));
  if (s.kind == "adam") {
    require(s.beta1 >= 0.f && s.beta1 < 1.f, "beta1", "must be in [0, 1), got " + str(s.beta1));
    require(s.beta2 >= 0.f && s.beta2 < 1.f, "beta2", "must be in [0, 1), got " + str(s.beta2));
  }
  if (s.kind == "adam" || s.kind == "adagrad")
    require(std::isfinite(s.eps) && s.eps > 0.f, "eps", "must be > 0, got " + str(s.eps));

  if (s.schedule == "constant") return;
  if (s.schedule == "step") {
    require(s.step_size >= 1, "step_size", "must be >= 1, got " + std::to_string(s.step_size));
    require(std::isfinite(s.gamma) && s.gamma > 0.f && s.gamma <= 1.f, "gamma",
            "must be in (0, 1], got " + str(s.gamma));
    return;
  }
  if (s.schedule == "cosine") {
    require(s.total_steps >= 0, "total_steps",
            "must be >= 0, got " + std::to_string(s.total_steps));
    require(std::isfinite(s.min_lr) && s.min_lr >= 0.f && s.min_lr <= s.lr, "min_lr",
            "must be in [0, lr], got " + str(s.min_lr));
    return;
  }
  bad("schedule", "unknown schedule '" + s.schedule + "' (expected constant, step, cosine)");
}

}  // namespace actrain
