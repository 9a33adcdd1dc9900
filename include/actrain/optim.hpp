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
  /// The same step written elsewhere: out = w after step(w, g, lr), w left as it was. A shard
  /// steps this way so that the weights it handed out stay valid without a copy (its next
  /// version goes into a recycled buffer). The default copies w into out and calls step(out,
  /// g, lr); the built-in rules read w and write out in one pass.
  /// REQUIRES: out.size() == w.size() == g.size() == size(); out does not overlap w or g.
  virtual void step_into(span<const float> w, span<const float> g, float lr, span<float> out);
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

  /// The rule's momentum coefficient as configured (heavy ball's mu, Adam's beta1), or 0 for a
  /// rule without one. A shard lowers it by the momentum that asynchrony adds
  /// (staleness_policy::momentum); rules that return 0 are never adjusted.
  virtual float momentum() const { return 0.f; }
  /// The coefficient the next steps use, in [0, momentum()]; ignored by rules without one.
  virtual void set_momentum(float) {}
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

/// How a shard treats a gradient computed from stale weights: "staleness" is the number of
/// updates the shard applied since the weights the gradient was computed from. The three parts
/// compose with each other and with every optimizer.
struct staleness_policy {
  /// How much of a stale gradient's step is taken: "damped" (the default: all of it for a push
  /// at most `tolerance` updates stale, lr * sqrt(tolerance / staleness) beyond: the few pushes a
  /// descheduled worker sends very late move the weights little, the fresh ones at full rate),
  /// "none" (all of it), "sqrt" (lr / sqrt(max(1, s)), s being the shard's running mean
  /// staleness: every step shrinks as more workers share the model, and a single worker, 1
  /// update stale from its prefetched pull, keeps its full rate), "inverse" (lr / (1 +
  /// staleness) of each push, Zhang et al. 2016), "drop" (none beyond max_staleness). The
  /// defaults are measured in docs/benchmarks.md (staleness study).
  std::string kind = "damped";
  std::int64_t max_staleness =
      0;  ///< "drop": reject gradients staler than this; "inverse", "damped": 0 = no bound
  /// "damped": the staleness a push may have and still take its full step (>= 1).
  std::int64_t tolerance = 2;
  /// "corrected": a rule with a momentum term (momentum, nesterov, Adam's beta1, or a registered
  /// rule that exposes one) runs with mu - s / (1 + s) (at least 0), s being the mean staleness
  /// of the shard's recent pushes: asynchrony adds about that much momentum of its own
  /// (Mitliagkas et al. 2016), and the two together overshoot. "explicit": mu as configured.
  std::string momentum = "corrected";
  /// Delay compensation (DC-ASGD-a, Zheng et al. 2017): the gradient g computed at weights w_b
  /// is applied as g + dc * g * g / sqrt(ms) * (w - w_b), a first-order correction towards the
  /// current weights w, ms being a running mean of g * g (decay 0.95). 0 (the default) turns it
  /// off; it costs two passes over every pushed slice and keeps `history` weight versions.
  float delay_compensation = 0.f;
  /// Weight versions a shard keeps for delay compensation (the weights pending gradients were
  /// computed from, shared with the pulls that handed them out); a gradient whose weights are
  /// older is applied uncompensated and counted.
  std::int64_t history = 16;
  /// Buffered aggregation (FedBuff, Nguyen et al. 2022), async only: a shard sums this many
  /// pushes, from whichever workers send them (none waits), and applies their mean as one
  /// update (each push scaled by its own step factor). 1: every push is its own update; 0: as
  /// many as the job has workers; never more than the job's workers, so one async worker steps
  /// on every push. Measured in docs/benchmarks.md (staleness study): 2 helps at 4-8 workers but
  /// halves the updates, so it is not the default. Pushes still buffered when a job stops or
  /// checkpoints are not applied (like pushes in flight).
  int buffer = 1;
  /// Polyak averaging: a shard also keeps an exponential moving average of its weights over
  /// about this many updates (decay min(1 - 1 / average, (1 + k) / (10 + k)) after k updates),
  /// and the job evaluates and yields the average; workers still pull the live weights, and a
  /// checkpoint holds the live weights (a restored shard starts its average over from them).
  /// It smooths out the noise stale steps add at the end of a job. -1 (the default): 100 in
  /// async and ssp jobs, off in sync; 0: off. Measured in docs/benchmarks.md (staleness study).
  std::int64_t average = -1;
  /// Factor to multiply the learning rate by for a gradient `staleness` versions old;
  /// returns 0 when the gradient must be dropped.
  float factor(std::int64_t staleness) const;
  /// The momentum coefficient to use for `configured` when pushes are `mean_staleness` stale.
  float corrected_momentum(float configured, double mean_staleness) const;
};
void validate(const staleness_policy& p);

}  // namespace actrain
