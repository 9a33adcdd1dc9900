#pragma once
// The model interface and its registry. A model is plain code over one flat parameter vector:
// forward, a mean loss and a hand-written backward. actrain's shards own slices of that vector,
// its workers call forward_backward, its coordinator calls evaluate; none of them knows what the
// model computes. Built-in kinds: "linear" (regression, MSE), "softmax" and "mlp" (one dense
// stack). An application brings its own kind by registering a factory under a name (then an INI
// file can say [model] kind="my_net") or by setting model_spec::factory in code.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <actrain/backend.hpp>

namespace actrain {

class model;
struct model_args;

/// Builds a model. Called once per worker (on the worker's thread), once per evaluation and by
/// the reference trainer, each time for a fresh object. Must be callable from any thread.
/// Throws std::invalid_argument naming the bad field ("model.width: ...") for arguments it
/// cannot work with.
using model_factory = std::function<std::unique_ptr<model>(const model_args&)>;

/// What a model is; a plain value that travels in job configs.
struct model_spec {
  model_spec() = default;
  model_spec(std::string kind_, int input_dim_, int output_dim_, std::vector<int> hidden_ = {})
      : kind(std::move(kind_)),
        input_dim(input_dim_),
        output_dim(output_dim_),
        hidden(std::move(hidden_)) {}

  std::string kind;         ///< a built-in kind ("linear", "softmax", "mlp") or a registered one
  int input_dim = 0;        ///< features per row (0 in a job: taken from the data)
  int output_dim = 1;       ///< classes for classifiers; 1 for regression (0 in a job: from data)
  std::vector<int> hidden;  ///< mlp: hidden layer sizes, ReLU after each; free for own kinds
  /// Further keys of the [model] group (as text, e.g. {"width", "32"}), for registered kinds;
  /// built-in kinds take none.
  std::map<std::string, std::string> options;
  /// Set in code: builds this model instead of looking `kind` up in the registry. Process-local:
  /// nodes of a cluster each find `kind` in their own registry.
  model_factory factory;
};

/// Checks a spec; throws std::invalid_argument naming the bad field. Built-in kinds get their
/// layer checks; other kinds must be registered (or carry a factory) and have dims > 0.
void validate(const model_spec& spec);
std::string describe(const model_spec& spec);  ///< e.g. "mlp 784-256-10"

/// What a factory gets: the spec (dims, hidden sizes, options), the backend whose memory the
/// parameters, gradients and batches will be in, and the most rows a batch will have.
struct model_args {
  model_spec spec;
  /// Not owned; outlives the model. Memory is host memory when device->is_host(); a model whose
  /// arithmetic is host-only should throw std::invalid_argument otherwise.
  backend* device = nullptr;
  int max_rows = 1;

  /// The [model] option `key` as text, or `fallback` when absent.
  std::string option(const std::string& key, const std::string& fallback) const;
  /// The option as an integer / a number; throws std::invalid_argument naming model.<key> when
  /// it is not one.
  std::int64_t option_int(const std::string& key, std::int64_t fallback) const;
  double option_double(const std::string& key, double fallback) const;
};

/// A mini-batch in backend memory: x is rows x input_dim (row-major); y holds one target per row
/// (the regression target, or the class index stored as a float).
struct batch_view {
  int rows = 0;
  const float* x = nullptr;
  const float* y = nullptr;
};

/// A model as plain code over one flat parameter vector. Losses are means over the batch.
/// Threading: one model object belongs to one thread; it may own scratch space sized for
/// max_rows rows in its backend's memory.
class model {
 public:
  virtual ~model() = default;

  /// Length of the flat parameter (and gradient) vector.
  virtual std::size_t num_params() const = 0;
  /// Writes deterministic initial parameters for `seed` into `params` (host memory,
  /// num_params() floats). The same seed must give the same values on every machine.
  virtual void init(float* params, std::uint64_t seed) const = 0;
  /// REQUIRES: params and grad hold num_params() floats in backend memory; batch.rows <=
  /// max_rows. Writes d(mean loss)/d(params) into grad; returns the summed loss over the batch
  /// (and, for classifiers, how many rows it got right).
  virtual loss_sum forward_backward(const float* params, const batch_view& batch, float* grad) = 0;
  /// Forward only; returns the summed loss and correct count.
  virtual loss_sum evaluate(const float* params, const batch_view& batch) = 0;
  /// True when outputs are class scores and y holds class indices (evaluation reports accuracy).
  virtual bool is_classifier() const = 0;
  /// Whether forward_backward queues only device work and reads nothing back but its loss
  /// (through backend::queue_loss / take_loss), so a device backend may record one step and
  /// replay it (backend::record): a GPU worker then launches a step as one CUDA graph. Opt in
  /// only then; the built-in mlp, softmax and linear models do.
  virtual bool recordable() const { return false; }
  /// Forward only: the raw outputs for the batch (rows x output_dim, row-major: class scores
  /// before the softmax, or predictions) into `out_host`, in host memory. Returns false when the
  /// model does not provide them (this default): evaluation then reports loss and accuracy but
  /// no per-class precision, recall and average precision.
  virtual bool outputs(const float* params, const batch_view& batch, float* out_host);

  /// init() into a fresh host vector.
  std::vector<float> init_params(std::uint64_t seed) const;
};

/// What a registered kind's y means: fit_model_to_data sets output_dim to the number of classes
/// for classification, to 1 for regression.
enum class model_task { regression, classification };

/// Registers `factory` under `kind` for as long as this object lives (a file-scope static in
/// the application, or a local in a test). Explicit: no macro, nothing the linker could drop
/// from a static library as long as the object is in a translation unit that is linked.
/// Throws std::invalid_argument when `kind` is empty, built in, or registered already.
/// Thread-safe.
class model_registration {
 public:
  model_registration(std::string kind, model_factory factory,
                     model_task task = model_task::regression);
  ~model_registration();
  model_registration(const model_registration&) = delete;
  model_registration& operator=(const model_registration&) = delete;

 private:
  std::string kind_;
};

/// A factory for `M`, constructed from the model_args: `make_factory<my_net>()`.
template <class M>
model_factory make_factory() {
  return [](const model_args& a) -> std::unique_ptr<model> { return std::make_unique<M>(a); };
}

/// Every kind a spec may name now: the built-in ones, then the registered ones (sorted).
std::vector<std::string> model_kinds();
/// Whether `kind` (built in or registered) is a classifier; throws std::invalid_argument for an
/// unknown kind.
bool is_classifier_kind(const std::string& kind);

/// Builds the model for `spec` on backend `b` with scratch for `max_rows` rows: spec.factory
/// when set, else the built-in or registered kind. Throws std::invalid_argument for a bad spec.
std::unique_ptr<model> make_model(const model_spec& spec, backend& b, int max_rows);

/// Number of parameters `spec` needs (built-in kinds without building them; others are built
/// once on the CPU backend and asked).
std::size_t num_params(const model_spec& spec);

}  // namespace actrain
