// The `actrain` command with a model kind and an optimizer kind of this binary's own registered
// ("scaled_linear", "halved_sgd"): what an application that ships its own `actrain` build does.
// user_model_test runs it as `train` and as `node` processes with an INI file naming both.
#include <stdexcept>
#include <vector>

#include <actrain/model.hpp>
#include <actrain/optim.hpp>

#include "apps/commands.hpp"

namespace {

/// y = scale * (x w + b), squared error; `scale` is a [model] option (default 1). Host memory.
class scaled_linear final : public actrain::model {
 public:
  explicit scaled_linear(const actrain::model_args& a)
      : in_(a.spec.input_dim), scale_(static_cast<float>(a.option_double("scale", 1.0))) {
    if (!a.device->is_host()) throw std::invalid_argument("model.kind: host memory only");
  }
  std::size_t num_params() const override { return static_cast<std::size_t>(in_) + 1; }
  void init(float* p, std::uint64_t) const override {
    for (std::size_t i = 0; i < num_params(); ++i) p[i] = 0.f;
  }
  actrain::loss_sum forward_backward(const float* p, const actrain::batch_view& b,
                                     float* g) override {
    return run(p, b, g);
  }
  actrain::loss_sum evaluate(const float* p, const actrain::batch_view& b) override {
    return run(p, b, nullptr);
  }
  bool is_classifier() const override { return false; }

 private:
  actrain::loss_sum run(const float* p, const actrain::batch_view& b, float* g) {
    if (g) std::fill(g, g + num_params(), 0.f);
    actrain::loss_sum s;
    for (int r = 0; r < b.rows; ++r) {
      const float* x = b.x + static_cast<std::size_t>(r) * in_;
      float z = p[in_];
      for (int i = 0; i < in_; ++i) z += x[i] * p[i];
      const float e = scale_ * z - b.y[r];
      s.loss += static_cast<double>(e) * e;
      if (!g) continue;
      const float d = 2.f * e * scale_ / static_cast<float>(b.rows);
      for (int i = 0; i < in_; ++i) g[i] += d * x[i];
      g[in_] += d;
    }
    return s;
  }
  int in_;
  float scale_;
};

/// Plain SGD at half the configured rate.
class halved_sgd final : public actrain::slot_optimizer {
 public:
  explicit halved_sgd(std::size_t n) : slot_optimizer(n, 0) {}
  void step(actrain::span<float> w, actrain::span<const float> g, float lr) override {
    for (std::size_t i = 0; i < n_; ++i) w[i] -= 0.5f * lr * g[i];
    ++steps_;
  }
};

const actrain::model_registration model_kind{"scaled_linear",
                                             actrain::make_factory<scaled_linear>()};
const actrain::optimizer_registration rule_kind{
    "halved_sgd",
    [](const actrain::optim_spec&, std::size_t n) { return std::make_unique<halved_sgd>(n); }};

}  // namespace

int main(int argc, char** argv) {
  return actrain::run_actrain(argc, argv);
}
