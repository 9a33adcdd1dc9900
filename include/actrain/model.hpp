#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <actrain/backend.hpp>

namespace actrain {

/// What a model is; a plain value that travels in job configs and messages.
struct model_spec {
  std::string kind;  ///< "linear" (regression, MSE), "softmax", or "mlp"
  int input_dim = 0;
  int output_dim = 1;       ///< classes for softmax/mlp; 1 for linear
  std::vector<int> hidden;  ///< mlp only: hidden layer sizes, ReLU after each
};

/// Checks a spec; throws std::invalid_argument naming the bad field.
void validate(const model_spec& spec);
std::string describe(const model_spec& spec);  ///< e.g. "mlp 784-256-10"

/// A mini-batch in backend memory: x is rows x input_dim (row-major); y holds one target per row
/// (the regression target, or the class index stored as a float).
struct batch_view {
  int rows = 0;
  const float* x = nullptr;
  const float* y = nullptr;
};

/// A model as plain code: forward, loss and a hand-written backward over one flat parameter
/// vector. Layout of the flat vector, layer by layer: weights W (in x out, row-major) then bias
/// b (out). Linear regression is one layer with out = 1; softmax regression one layer with out =
/// classes; an MLP is its layers in order.
///
/// A model object owns scratch space in one backend's memory, sized for up to `max_rows` rows;
/// it belongs to one thread. Losses are means over the batch: `forward_backward` writes
/// d(mean loss)/d(params) into grad.
class model {
 public:
  virtual ~model() = default;

  const model_spec& spec() const { return spec_; }
  std::size_t num_params() const { return num_params_; }
  bool is_classifier() const { return spec_.kind != "linear"; }
  backend& device() const { return *backend_; }

  /// Deterministic initial parameters (host vector) from a seed: He/Glorot-style uniform weights
  /// for layers feeding a ReLU or softmax, zeros for biases (linear regression: zeros).
  std::vector<float> init_params(std::uint64_t seed) const;

  /// REQUIRES: params and grad hold num_params() floats in backend memory; batch.rows <= max_rows.
  /// Returns the summed loss (and correct count) over the batch; grad gets the mean-loss gradient.
  virtual loss_sum forward_backward(const float* params, const batch_view& batch, float* grad) = 0;
  /// Forward only; returns the summed loss and correct count.
  virtual loss_sum evaluate(const float* params, const batch_view& batch) = 0;

  /// Where each layer sits in the flat vector: W (in x out) starts at offset, b (out) follows.
  struct layer_layout {
    std::size_t offset;
    int in;
    int out;
  };
  const std::vector<layer_layout>& layers() const { return layers_; }

 protected:
  model(model_spec spec, backend& b, int max_rows);
  model_spec spec_;
  backend* backend_;
  int max_rows_;
  std::vector<layer_layout> layers_;
  std::size_t num_params_ = 0;
};

/// Builds the model for `spec` on backend `b` with scratch for `max_rows` rows.
/// Throws std::invalid_argument for a bad spec.
std::unique_ptr<model> make_model(const model_spec& spec, backend& b, int max_rows);

/// Number of parameters `spec` needs, without building it.
std::size_t num_params(const model_spec& spec);

}  // namespace actrain
