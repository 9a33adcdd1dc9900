#pragma once
#include <vector>

#include <actrain/model.hpp>

namespace actrain {

/// The one implementation behind every model kind: dense layers y = x W + b, ReLU between them,
/// softmax cross-entropy (classifiers) or squared error (linear regression) at the end.
/// Uses only backend operations, so the same code runs on the CPU and CUDA backends.
/// Owns its scratch (activations and deltas for max_rows rows) in the backend's memory.
class dense_stack final : public model {
 public:
  dense_stack(const model_spec& spec, backend& b, int max_rows);

  loss_sum forward_backward(const float* params, const batch_view& batch, float* grad) override;
  loss_sum evaluate(const float* params, const batch_view& batch) override;

 private:
  /// Checks the batch against max_rows; returns false for an empty batch.
  bool check_batch(const batch_view& batch) const;
  /// Fills act_[l] for every layer (ReLU applied to all but the last).
  void forward(const float* params, const batch_view& batch);
  loss_sum loss(const batch_view& batch, float* dlast);

  std::vector<buffer> act_;    // act_[l]: output of layer l, max_rows x out_l
  std::vector<buffer> delta_;  // delta_[l]: d(mean loss)/d(pre-activation of layer l)
};

}  // namespace actrain
