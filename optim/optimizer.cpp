// The update rules. Each optimizer keeps its per-parameter state in slots_ (owned by the base
// class so state()/restore() work for every kind); arithmetic is element-wise in float, with
// Adam's bias corrections in double because beta^t underflows float precision late in training.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <actrain/optim.hpp>

#include "optim/kinds.hpp"
#include "tensor/named_registry.hpp"

namespace actrain {

slot_optimizer::slot_optimizer(std::size_t n, std::size_t slot_count)
    : n_(n), slots_(slot_count, std::vector<float>(n, 0.f)) {}

void slot_optimizer::restore(const state_t& s) {
  if (s.slots.size() != slots_.size())
    throw std::invalid_argument("optimizer::restore: state has " + std::to_string(s.slots.size()) +
                                " slots, this optimizer has " + std::to_string(slots_.size()));
  for (std::size_t i = 0; i < s.slots.size(); ++i)
    if (s.slots[i].size() != n_)
      throw std::invalid_argument("optimizer::restore: slot " + std::to_string(i) + " has " +
                                  std::to_string(s.slots[i].size()) + " values, expected " +
                                  std::to_string(n_));
  if (s.steps < 0)
    throw std::invalid_argument("optimizer::restore: negative step count " +
                                std::to_string(s.steps));
  steps_ = s.steps;
  slots_ = s.slots;
}

namespace {

void check_sizes(std::size_t n, span<float> w, span<const float> g) {
  if (w.size() != n || g.size() != n)
    throw std::invalid_argument("optimizer::step: weights have " + std::to_string(w.size()) +
                                " values and gradient " + std::to_string(g.size()) +
                                ", optimizer slice has " + std::to_string(n));
}

/// Shared by every rule: the gradient with the L2 term, read before w changes.
inline float decayed(float g, float w, float wd) {
  return g + wd * w;  // branch-free so update loops vectorize (wd = 0 adds exactly 0)
}

/// w -= lr * (g + wd * w).
class sgd final : public slot_optimizer {
 public:
  sgd(std::size_t n, float wd) : slot_optimizer(n, 0), wd_(wd) {}
  void step(span<float> w, span<const float> g, float lr) override {
    check_sizes(n_, w, g);
    for (std::size_t i = 0; i < n_; ++i) w[i] -= lr * decayed(g[i], w[i], wd_);
    ++steps_;
  }

 private:
  float wd_;
};

/// v = mu * v + g; w -= lr * v (heavy ball), or w -= lr * (g + mu * v) (Nesterov, the form
/// PyTorch uses). Slot 0 is v.
class heavy_ball final : public slot_optimizer {
 public:
  heavy_ball(std::size_t n, float mu, float wd, bool nesterov)
      : slot_optimizer(n, 1), configured_(mu), mu_(mu), wd_(wd), nesterov_(nesterov) {}
  float momentum() const override { return configured_; }
  void set_momentum(float mu) override { mu_ = std::min(std::max(mu, 0.f), configured_); }
  void step(span<float> w, span<const float> g, float lr) override {
    check_sizes(n_, w, g);
    float* v = slots_[0].data();
    for (std::size_t i = 0; i < n_; ++i) {
      const float gi = decayed(g[i], w[i], wd_);
      v[i] = mu_ * v[i] + gi;
      w[i] -= lr * (nesterov_ ? gi + mu_ * v[i] : v[i]);
    }
    ++steps_;
  }

 private:
  float configured_, mu_, wd_;
  bool nesterov_;
};

/// a += g^2; w -= lr * g / (sqrt(a) + eps). Slot 0 is a.
class adagrad final : public slot_optimizer {
 public:
  adagrad(std::size_t n, float eps, float wd) : slot_optimizer(n, 1), eps_(eps), wd_(wd) {}
  void step(span<float> w, span<const float> g, float lr) override {
    check_sizes(n_, w, g);
    float* a = slots_[0].data();
    for (std::size_t i = 0; i < n_; ++i) {
      const float gi = decayed(g[i], w[i], wd_);
      a[i] += gi * gi;
      w[i] -= lr * gi / (std::sqrt(a[i]) + eps_);
    }
    ++steps_;
  }

 private:
  float eps_, wd_;
};

/// Kingma & Ba, Algorithm 1: m and v with bias correction, eps added outside the square root.
/// Slot 0 is m, slot 1 is v.
class adam final : public slot_optimizer {
 public:
  adam(std::size_t n, float b1, float b2, float eps, float wd)
      : slot_optimizer(n, 2), configured_b1_(b1), b1_(b1), b2_(b2), eps_(eps), wd_(wd) {}
  float momentum() const override { return configured_b1_; }
  void set_momentum(float b1) override { b1_ = std::min(std::max(b1, 0.f), configured_b1_); }
  void step(span<float> w, span<const float> g, float lr) override {
    check_sizes(n_, w, g);
    // Restrict-qualified locals: the slots never alias w or g, and telling the compiler so lets
    // it vectorize the loop (with -fno-math-errno for sqrt); Adam is the costliest shard update.
    float* __restrict m = slots_[0].data();
    float* __restrict v = slots_[1].data();
    float* __restrict wp = w.data();
    const float* __restrict gp = g.data();
    const double t = static_cast<double>(steps_ + 1);
    const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(double(b1_), t)));
    const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(double(b2_), t)));
    const float b1 = b1_, b2 = b2_, eps = eps_, wd = wd_;
    for (std::size_t i = 0; i < n_; ++i) {
      const float gi = decayed(gp[i], wp[i], wd);
      const float mi = b1 * m[i] + (1.f - b1) * gi;
      const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      wp[i] -= lr * (mi * c1) / (std::sqrt(vi * c2) + eps);
    }
    ++steps_;
  }

 private:
  float configured_b1_, b1_, b2_, eps_, wd_;
};

named_registry<optimizer_factory>& the_registry() {
  static named_registry<optimizer_factory> r;
  return r;
}

}  // namespace

optimizer_registration::optimizer_registration(std::string kind, optimizer_factory factory)
    : kind_(std::move(kind)) {
  if (kind_.empty()) throw std::invalid_argument("optimizer_registration: the kind name is empty");
  if (is_builtin_optimizer(kind_))
    throw std::invalid_argument("optimizer_registration: \"" + kind_ + "\" is a built-in kind");
  if (!factory)
    throw std::invalid_argument("optimizer_registration: \"" + kind_ + "\" has no factory");
  the_registry().add("optimizer_registration", kind_, std::move(factory));
}

optimizer_registration::~optimizer_registration() {
  the_registry().remove(kind_);
}

std::vector<std::string> optimizer_kinds() {
  std::vector<std::string> out = builtin_optimizers();
  for (auto& k : the_registry().names()) out.push_back(std::move(k));
  return out;
}

bool is_registered_optimizer(const std::string& kind) {
  return the_registry().find(kind).has_value();
}

std::unique_ptr<optimizer> make_optimizer(const optim_spec& spec, std::size_t n) {
  validate(spec);
  if (!is_builtin_optimizer(spec.kind)) {
    auto f = the_registry().find(spec.kind);
    if (!f) throw std::invalid_argument("optim_spec.kind: unknown optimizer '" + spec.kind + "'");
    auto opt = (*f)(spec, n);
    if (!opt || opt->size() != n)
      throw std::invalid_argument("optim_spec.kind: the factory of '" + spec.kind +
                                  "' made no optimizer over " + std::to_string(n) + " values");
    return opt;
  }
  const float wd = spec.weight_decay;
  if (spec.kind == "sgd") return std::make_unique<sgd>(n, wd);
  if (spec.kind == "momentum") return std::make_unique<heavy_ball>(n, spec.momentum, wd, false);
  if (spec.kind == "nesterov") return std::make_unique<heavy_ball>(n, spec.momentum, wd, true);
  if (spec.kind == "adagrad") return std::make_unique<adagrad>(n, spec.eps, wd);
  return std::make_unique<adam>(n, spec.beta1, spec.beta2, spec.eps, wd);  // validated: "adam"
}

}  // namespace actrain
