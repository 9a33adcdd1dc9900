// The update rules. Each optimizer keeps its per-parameter state in slots_ (owned by the base
// class so state()/restore() work for every kind); arithmetic is element-wise in float, with
// Adam's bias corrections in double because beta^t underflows float precision late in training.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <actrain/optim.hpp>

#include "optim/kinds.hpp"
#include "tensor/vector_clones.hpp"
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

void optimizer::step_into(span<const float> w, span<const float> g, float lr, span<float> out) {
  if (out.size() != w.size())
    throw std::invalid_argument("optimizer::step_into: weights have " + std::to_string(w.size()) +
                                " values, the output " + std::to_string(out.size()));
  std::copy(w.begin(), w.end(), out.begin());
  step(out, g, lr);
}

namespace {

void check_sizes(std::size_t n, span<const float> w, span<const float> g, span<float> out) {
  if (w.size() != n || g.size() != n || out.size() != n)
    throw std::invalid_argument("optimizer::step: weights have " + std::to_string(w.size()) +
                                " values, gradient " + std::to_string(g.size()) + " and output " +
                                std::to_string(out.size()) + ", optimizer slice has " +
                                std::to_string(n));
}

/// Shared by every rule: the gradient with the L2 term, read before w changes.
inline float decayed(float g, float w, float wd) {
  return g + wd * w;  // branch-free so update loops vectorize (wd = 0 adds exactly 0)
}

/// out[i] = next(i, w[i]) for every i: in place when out is w (step), else from w into a buffer
/// of its own (step_into). Each form is one loop the compiler vectorizes: restrict-qualified
/// where the two do not overlap.
template <class Next>
inline void each(std::size_t n, const float* w, float* out, Next next) {
  if (w == out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = next(i, out[i]);
  } else {
    const float* __restrict from = w;
    float* __restrict to = out;
    for (std::size_t i = 0; i < n; ++i) to[i] = next(i, from[i]);
  }
}

/// A rule written once for both forms: Derived::update(w, g, lr, out), out == w in place.
template <class Derived>
class rule : public slot_optimizer {
 public:
  using slot_optimizer::slot_optimizer;
  void step(span<float> w, span<const float> g, float lr) override {
    check_sizes(n_, w, g, w);
    static_cast<Derived*>(this)->update(w.data(), g.data(), lr, w.data());
    ++steps_;
  }
  void step_into(span<const float> w, span<const float> g, float lr, span<float> out) override {
    check_sizes(n_, w, g, out);
    static_cast<Derived*>(this)->update(w.data(), g.data(), lr, out.data());
    ++steps_;
  }
};

/// SGD's pass, in both forms: the one every async step of the cluster benchmarks runs.
ACTRAIN_AVX2_CLONES
void sgd_pass(std::size_t n, const float* w, const float* __restrict g, float lr, float wd,
              float* out) {
  each(n, w, out, [=](std::size_t i, float wi) { return wi - lr * decayed(g[i], wi, wd); });
}

/// w -= lr * (g + wd * w).
class sgd final : public rule<sgd> {
 public:
  sgd(std::size_t n, float wd) : rule(n, 0), wd_(wd) {}
  void update(const float* w, const float* __restrict g, float lr, float* out) const {
    sgd_pass(n_, w, g, lr, wd_, out);
  }

 private:
  float wd_;
};

/// v = mu * v + g; w -= lr * v (heavy ball), or w -= lr * (g + mu * v) (Nesterov, the form
/// PyTorch uses). Slot 0 is v.
class heavy_ball final : public rule<heavy_ball> {
 public:
  heavy_ball(std::size_t n, float mu, float wd, bool nesterov)
      : rule(n, 1), configured_(mu), mu_(mu), wd_(wd), nesterov_(nesterov) {}
  float momentum() const override { return configured_; }
  void set_momentum(float mu) override { mu_ = std::min(std::max(mu, 0.f), configured_); }
  void update(const float* w, const float* __restrict g, float lr, float* out) {
    float* __restrict v = slots_[0].data();
    const float mu = mu_, wd = wd_;
    const bool nesterov = nesterov_;
    each(n_, w, out, [=](std::size_t i, float wi) {
      const float gi = decayed(g[i], wi, wd);
      const float vi = mu * v[i] + gi;
      v[i] = vi;
      return wi - lr * (nesterov ? gi + mu * vi : vi);
    });
  }

 private:
  float configured_, mu_, wd_;
  bool nesterov_;
};

/// a += g^2; w -= lr * g / (sqrt(a) + eps). Slot 0 is a.
class adagrad final : public rule<adagrad> {
 public:
  adagrad(std::size_t n, float eps, float wd) : rule(n, 1), eps_(eps), wd_(wd) {}
  void update(const float* w, const float* __restrict g, float lr, float* out) {
    float* __restrict a = slots_[0].data();
    const float eps = eps_, wd = wd_;
    each(n_, w, out, [=](std::size_t i, float wi) {
      const float gi = decayed(g[i], wi, wd);
      const float ai = a[i] + gi * gi;
      a[i] = ai;
      return wi - lr * gi / (std::sqrt(ai) + eps);
    });
  }

 private:
  float eps_, wd_;
};

/// Kingma & Ba, Algorithm 1: m and v with bias correction, eps added outside the square root.
/// Slot 0 is m, slot 1 is v.
class adam final : public rule<adam> {
 public:
  adam(std::size_t n, float b1, float b2, float eps, float wd)
      : rule(n, 2), configured_b1_(b1), b1_(b1), b2_(b2), eps_(eps), wd_(wd) {}
  float momentum() const override { return configured_b1_; }
  void set_momentum(float b1) override { b1_ = std::min(std::max(b1, 0.f), configured_b1_); }
  void update(const float* w, const float* __restrict g, float lr, float* out) {
    // Restrict-qualified slots: they never alias w, out or g, and telling the compiler so lets it
    // vectorize the loop (with -fno-math-errno for sqrt); Adam is the costliest shard update.
    float* __restrict m = slots_[0].data();
    float* __restrict v = slots_[1].data();
    const double t = static_cast<double>(steps_ + 1);
    const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(double(b1_), t)));
    const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(double(b2_), t)));
    const float b1 = b1_, b2 = b2_, eps = eps_, wd = wd_;
    each(n_, w, out, [=](std::size_t i, float wi) {
      const float gi = decayed(g[i], wi, wd);
      const float mi = b1 * m[i] + (1.f - b1) * gi;
      const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      return wi - lr * (mi * c1) / (std::sqrt(vi * c2) + eps);
    });
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
