#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <actrain/span.hpp>

namespace actrain {

/// Which update rule and its hyper-parameters; a plain value carried in job configs.
struct optim_spec {
  std::string kind = "sgd";  ///< "sgd", "momentum", "nesterov", "adagrad", "adam", or registered
  float lr = 0.01f;
  float momentum = 0.9f;     ///< momentum / nesterov
  float beta1 = 0.9f;        ///< adam
  float beta2 = 0.999f;      ///< adam
  float eps = 1e-8f;         ///< adam, adagrad
  float weight_decay = 0.f;  ///< L2 term added to the gradient: g + wd * w
  // learning-rate schedule
  std::string schedule = "constant";  ///< "constant", "step", "cosine"
  std::int64_t step_size = 1000;      ///< step: multiply by gamma every step_size steps
  float gamma = 0.1f;                 ///< step
  std::int64_t total_steps = 0;       ///< cosine: steps from lr to min_lr (0: constant)
  float min_lr = 0.f;                 ///< cosine
  /// Further keys of the [optim] group (as text), for registered kinds; built-in kinds take none.
  std::map<std::string, std::string> options;
};

/// Throws std::invalid_argument naming the bad field (unknown kind, lr <= 0, ...).
void validate(const optim_spec& spec);

/// An update rule applied to one slice of the flat parameter vector (a shard's). Holds that
/// slice's state (momentum buffer, accumulators, step count). Not thread-safe: one shard owns
/// one optimizer and calls it from the shard's actor only.
class optimizer {
 public:
  virtual ~optimizer() = default;
  /// w -= update(g) with learning rate `lr` (the caller applies the schedule and any staleness
  /// scaling): the sign convention of every rule, so a positive gradient lowers w.
  /// REQUIRES: w.size() == g.size() == size().
  virtual void step(span<float> w, span<const float> g, float lr) = 0;
  /// Length of the slice this optimizer updates.
  virtual std::size_t size() const = 0;
  /// Updates applied so far (schedules read it).
  virtual std::int64_t steps() const = 0;

  /// The state as named float vectors plus the step count, for checkpoints.
  struct state_t {
    std::int64_t steps = 0;
    std::vector<std::vector<float>> slots;
  };
  /// A copy of the state; never changes the optimizer.
  virtual state_t state() const = 0;
  /// Restores a state taken from an optimizer of the same kind and size; throws
  /// std::invalid_argument if the slot count or sizes differ.
  virtual void restore(const state_t& s) = 0;
};

/// A base for rules whose state is `slot_count` float vectors of the slice's size (all built-in
/// rules, and most user rules): implements size, steps, state and restore. A derived step()
/// reads and writes slots_ and increments steps_.
class slot_optimizer : public optimizer {
 public:
  std::size_t size() const override { return n_; }
  std::int64_t steps() const override { return steps_; }
  state_t state() const override { return {steps_, slots_}; }
  void restore(const state_t& s) override;

 protected:
  slot_optimizer(std::size_t n, std::size_t slot_count);
  std::size_t n_;
  std::int64_t steps_ = 0;
  std::vector<std::vector<float>> slots_;
};

/// Builds an optimizer over a slice of `n` parameters from a spec (its lr, momentum, ... and
/// options). Called on the shard's node for every shard; must be callable from any thread.
using optimizer_factory =
    std::function<std::unique_ptr<optimizer>(const optim_spec& spec, std::size_t n)>;

/// Registers `factory` as the optimizer kind `kind` for as long as this object lives; a job
/// then names it as [optim] kind="...". Every node that runs a shard must register it too.
/// Throws std::invalid_argument when `kind` is empty, built in or registered already.
/// Thread-safe.
class optimizer_registration {
 public:
  optimizer_registration(std::string kind, optimizer_factory factory);
  ~optimizer_registration();
  optimizer_registration(const optimizer_registration&) = delete;
  optimizer_registration& operator=(const optimizer_registration&) = delete;

 private:
  std::string kind_;
};

/// Every kind a spec may name now: the built-in ones, then the registered ones (sorted).
std::vector<std::string> optimizer_kinds();

/// Builds the optimizer for `spec` over a slice of n parameters (built-in or registered kind).
std::unique_ptr<optimizer> make_optimizer(const optim_spec& spec, std::size_t n);

/// Learning rate at update number `step` (0-based) under the spec's schedule.
float scheduled_lr(const optim_spec& spec, std::int64_t step);

/// Scales g so its L2 norm is at most max_norm (no-op when max_norm <= 0 or the norm is
/// smaller). Returns the norm before clipping.
double clip_by_norm(span<float> g, double max_norm);

/// How a shard treats a gradient computed from stale weights.
struct staleness_policy {
  std::string kind = "none";  ///< "none", "inverse" (lr / (1 + staleness)), "drop" (beyond max)
  std::int64_t max_staleness =
      0;  ///< "drop": reject gradients staler than this; "inverse": 0 = no bound
  /// Factor to multiply the learning rate by for a gradient `staleness` versions old;
  /// returns 0 when the gradient must be dropped.
  float factor(std::int64_t staleness) const;
};
void validate(const staleness_policy& p);

}  // namespace actrain
