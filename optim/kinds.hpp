#pragma once
// Which optimizer kinds exist: the built-in rules and the registry (optimizer.cpp).
#include <string>
#include <vector>

namespace actrain {

inline std::vector<std::string> builtin_optimizers() {
  return {"sgd", "momentum", "nesterov", "adagrad", "adam"};
}
inline bool is_builtin_optimizer(const std::string& kind) {
  for (const auto& k : builtin_optimizers())
    if (k == kind) return true;
  return false;
}
/// Whether `kind` is registered now (optimizer_registration).
bool is_registered_optimizer(const std::string& kind);

}  // namespace actrain
