// The parent's program: uses actrain::core only (a model and an optimizer, no actors).
#include <cstdio>
#include <vector>

#include <actrain/model.hpp>
#include <actrain/optim.hpp>

int main() {
  auto cpu = actrain::make_cpu_backend();
  auto m = actrain::make_model({"mlp", 4, 3, {8}}, *cpu, 2);
  auto opt = actrain::make_optimizer(actrain::optim_spec{}, m->num_params());
  std::printf("parent_app: %zu parameters, optimizer over %zu\n", m->num_params(), opt->size());
  return m->num_params() == 4 * 8 + 8 + 8 * 3 + 3 && opt->size() == m->num_params() ? 0 : 1;
}
