// The built-in kinds: a stack of dense layers with ReLU between them, forward and hand-written
// backward written once against the backend seam.
#include "model/dense_stack.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace actrain {
namespace {

/// Layer widths in order: input, hidden..., output.
std::vector<int> widths(const model_spec& spec) {
  std::vector<int> w{spec.input_dim};
  w.insert(w.end(), spec.hidden.begin(), spec.hidden.end());
  w.push_back(spec.output_dim);
  return w;
}

/// Uniform in [-a, a) from the raw 64-bit stream: bit-identical on every standard library
/// (std::uniform_real_distribution's algorithm is implementation-defined).
float uniform_pm(std::mt19937_64& rng, double a) {
  double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
  return static_cast<float>((2.0 * u - 1.0) * a);
}

}  // namespace

void validate_dense_stack(const model_spec& spec) {
  const std::string& k = spec.kind;
  if (k != "linear" && k != "softmax" && k != "mlp")
    throw std::invalid_argument("model.kind: \"" + k + "\" is not one of linear, softmax, mlp");
  if (spec.input_dim <= 0)
    throw std::invalid_argument("model.input_dim: must be > 0, got " +
                                std::to_string(spec.input_dim));
  if (k == "linear" && spec.output_dim != 1)
    throw std::invalid_argument("model.output_dim: linear regression has 1 output, got " +
                                std::to_string(spec.output_dim));
  if (k != "linear" && spec.output_dim < 2)
    throw std::invalid_argument("model.output_dim: " + k + " needs >= 2 classes, got " +
                                std::to_string(spec.output_dim));
  if (k == "mlp" && spec.hidden.empty())
    throw std::invalid_argument("model.hidden: mlp needs at least one hidden layer");
  if (k != "mlp" && !spec.hidden.empty())
    throw std::invalid_argument("model.hidden: only mlp has hidden layers, " + k + " got " +
                                std::to_string(spec.hidden.size()));
  for (std::size_t i = 0; i < spec.hidden.size(); ++i)
    if (spec.hidden[i] <= 0)
      throw std::invalid_argument("model.hidden[" + std::to_string(i) + "]: must be > 0, got " +
                                  std::to_string(spec.hidden[i]));
  // A weight matrix is addressed with int dimensions by BLAS; keep each one indexable.
  auto w = widths(spec);
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (static_cast<long long>(w[i]) * w[i + 1] > (1LL << 31) - 1)
      throw std::invalid_argument("model: layer " + std::to_string(i) + " (" +
                                  std::to_string(w[i]) + "x" + std::to_string(w[i + 1]) +
                                  ") has more than 2^31-1 weights");
}

std::size_t dense_stack_params(const model_spec& spec) {
  validate_dense_stack(spec);
  auto w = widths(spec);
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    n += static_cast<std::size_t>(w[i]) * w[i + 1] + w[i + 1];
  return n;
}

dense_stack::dense_stack(const model_spec& spec, backend& b, int max_rows)
    : spec_(spec), backend_(&b), max_rows_(max_rows) {
  validate_dense_stack(spec_);
  if (max_rows <= 0)
    throw std::invalid_argument("model: max_rows must be > 0, got " + std::to_string(max_rows));
  auto w = widths(spec_);
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    layers_.push_back({num_params_, w[i], w[i + 1]});
    num_params_ += static_cast<std::size_t>(w[i]) * w[i + 1] + w[i + 1];
  }
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

void dense_stack::queue_loss(const batch_view& batch, float* dlast) {
  float grad_scale = 1.0f / static_cast<float>(batch.rows);  // gradient of the mean loss
  backend_->queue_loss(is_classifier(), batch.rows, layers_.back().out, act_.back().data(),
                       batch.y, grad_scale, dlast);
}

loss_sum dense_stack::forward_backward(const float* params, const batch_view& batch, float* grad) {
  backend& b = *backend_;
  if (!check_batch(batch)) {
    b.fill(num_params_, 0.0f, grad);
    return {};
  }
  forward(params, batch);
  // The loss is queued and read after the backward pass is queued: on a GPU the step then
  // runs to its end without a wait in the middle.
  queue_loss(batch, delta_.back().data());
  try {
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
  } catch (...) {
    // A failed backward pass leaves no loss queued for the next step to trip over.
    try {
      backend_->take_loss();
    } catch (...) {
    }
    throw;
  }
  return backend_->take_loss();
}

loss_sum dense_stack::evaluate(const float* params, const batch_view& batch) {
  if (!check_batch(batch)) return {};
  forward(params, batch);
  queue_loss(batch, nullptr);
  return backend_->take_loss();
}

bool dense_stack::outputs(const float* params, const batch_view& batch, float* out_host) {
  if (!check_batch(batch)) return true;
  forward(params, batch);
  backend_->download(out_host, act_.back().data(),
                     static_cast<std::size_t>(batch.rows) * layers_.back().out);
  return true;
}

void dense_stack::init(float* p, std::uint64_t seed) const {
  std::fill(p, p + num_params_, 0.0f);
  if (spec_.kind == "linear") return;  // convex: zeros are the natural, reproducible start
  std::mt19937_64 rng(seed);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const auto& L = layers_[l];
    bool feeds_relu = l + 1 < layers_.size();
    // He-uniform keeps activation variance through ReLUs; Glorot-uniform for the classifier.
    double a = feeds_relu ? std::sqrt(6.0 / L.in) : std::sqrt(6.0 / (L.in + L.out));
    std::size_t nw = static_cast<std::size_t>(L.in) * L.out;
    for (std::size_t i = 0; i < nw; ++i) p[L.offset + i] = uniform_pm(rng, a);
    // biases (the next L.out values) stay zero
  }
}

}  // namespace actrain
