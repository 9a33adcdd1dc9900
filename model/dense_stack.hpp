#pragma once
#include <vector>

#include <actrain/model.hpp>

namespace actrain {

/// Checks a built-in kind's spec (linear, softmax, mlp); throws std::invalid_argument naming the
/// bad field.
void validate_dense_stack(const model_spec& spec);
/// Parameter count of a built-in kind, without building it.
std::size_t dense_stack_params(const model_spec& spec);

/// The one implementation behind every built-in kind: dense layers y = x W + b, ReLU between
/// them, softmax cross-entropy (classifiers) or squared error (linear regression) at the end.
/// Layout of the flat vector, layer by layer: weights W (in x out, row-major) then bias b (out).
/// Uses only backend operations, so the same code runs on the CPU and CUDA backends.
/// Owns its scratch (activations and deltas for max_rows rows) in the backend's memory.
class dense_stack final : public model {
 public:
  dense_stack(const model_spec& spec, backend& b, int max_rows);

  std::size_t num_params() const override { return num_params_; }
  /// He-uniform weights for layers feeding a ReLU, Glorot-uniform for the classifier layer,
  /// zero biases; linear regression starts at zero.
  void init(float* params, std::uint64_t seed) const override;
  loss_sum forward_backward(const float* params, const batch_view& batch, float* grad) override;
  loss_sum evaluate(const float* params, const batch_view& batch) override;
  bool outputs(const float* params, const batch_view& batch, float* out_host) override;
  bool is_classifier() const override { return spec_.kind != "linear"; }
  bool recordable() const override { return true; }

  const model_spec& spec() const { return spec_; }
  backend& device() const { return *backend_; }
  /// Where each layer sits in the flat vector: W (in x out) starts at offset, b (out) follows.
  struct layer_layout {
    std::size_t offset;
    int in;
    int out;
  };
  const std::vector<layer_layout>& layers() const { return layers_; }

 private:
  /// Checks the batch against max_rows; returns false for an empty batch.
  bool check_batch(const batch_view& batch) const;
  /// Fills act_[l] for every layer (ReLU applied to all but the last).
  void forward(const float* params, const batch_view& batch);
  /// Queues the loss of the last forward (and its gradient into dlast, when not null); the
  /// backend's take_loss reads it.
  void queue_loss(const batch_view& batch, float* dlast);

  model_spec spec_;
  backend* backend_;
  int max_rows_;
  std::vector<layer_layout> layers_;
  std::size_t num_params_ = 0;
  std::vector<buffer> act_;    // act_[l]: output of layer l, max_rows x out_l
  std::vector<buffer> delta_;  // delta_[l]: d(mean loss)/d(pre-activation of layer l)
};

}  // namespace actrain
