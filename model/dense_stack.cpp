#include "model/dense_stack.hpp"

#include <stdexcept>
#include <string>

namespace actrain {

dense_stack::dense_stack(const model_spec& spec, backend& b, int max_rows)
    : model(spec, b, max_rows) {
  for (const auto& L : layers_) {
    auto n = static_cast<std::size_t>(max_rows) * L.out;
    act_.push_back(b.allocate(n));
    delta_.push_back(b.allocate(n));
  }
}

bool dense_stack::check_batch(const batch_view& batch) const {
  if (batch.rows < 0 || batch.rows > max_rows_)
    throw std::invalid_argument("batch.rows: " + std::to_string(batch.rows) +
                                " is outside [0, max_rows = " + std::to_string(max_rows_) +
                                "] of model " + describe(spec_));
  if (batch.rows > 0 && (!batch.x || !batch.y))
    throw std::invalid_argument("batch: x or y is null for " + std::to_string(batch.rows) +
                                " rows");
  return batch.rows > 0;
}

void dense_stack::forward(const float* params, const batch_view& batch) {
  backend& b = *backend_;
  const float* in = batch.x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto& L = layers_[l];
    const float* w = params + L.offset;
    const float* bias = w + static_cast<std::size_t>(L.in) * L.out;
    float* z = act_[l].data();
    b.gemm(false, false, batch.rows, L.out, L.in, 1.0f, in, w, 0.0f, z);
    b.add_row_vector(batch.rows, L.out, bias, z);
    if (l + 1 < layers_.size()) b.relu(static_cast<std::size_t>(batch.rows) * L.out, z, z);
    in = z;
  }
}

loss_sum dense_stack::loss(const batch_view& batch, float* dlast) {
  const float* out = act_.back().data();
  float grad_scale = 1.0f / static_cast<float>(batch.rows);  // gradient of the mean loss
  if (is_classifier())
    return backend_->softmax_xent(batch.rows, layers_.back().out, out, batch.y, grad_scale, dlast);
  return backend_->squared_error(batch.rows, out, batch.y, grad_scale, dlast);
}

loss_sum dense_stack::forward_backward(const float* params, const batch_view& batch, float* grad) {
  backend& b = *backend_;
  if (!check_batch(batch)) {
    b.fill(num_params_, 0.0f, grad);
    return {};
  }
  forward(params, batch);
  loss_sum result = loss(batch, delta_.back().data());
  int rows = batch.rows;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const auto& L = layers_[l];
    const float* w = params + L.offset;
    float* dw = grad + L.offset;
    float* db = dw + static_cast<std::size_t>(L.in) * L.out;
    const float* in = l == 0 ? batch.x : act_[l - 1].data();
    const float* d = delta_[l].data();
    b.gemm(true, false, L.in, L.out, rows, 1.0f, in, d, 0.0f, dw);  // dW = X^T dZ
    b.column_sums(rows, L.out, d, db);                              // db = 1^T dZ
    if (l > 0) {
      float* dprev = delta_[l - 1].data();
      b.gemm(false, true, rows, L.in, L.out, 1.0f, d, w, 0.0f, dprev);  // dX = dZ W^T
      b.relu_backward(static_cast<std::size_t>(rows) * L.in, in, dprev, dprev);
    }
  }
  return result;
}

loss_sum dense_stack::evaluate(const float* params, const batch_view& batch) {
  if (!check_batch(batch)) return {};
  forward(params, batch);
  return loss(batch, nullptr);
}

}  // namespace actrain
