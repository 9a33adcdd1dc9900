#pragma once
// A model of the application's own: one tanh hidden layer, a linear output, squared error.
// Flat parameter layout: W1 (in x width), b1 (width), w2 (width), b2 (1). Host memory only.
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include <actrain/model.hpp>

class tanh_net final : public actrain::model {
 public:
  explicit tanh_net(const actrain::model_args& a)
      : in_(a.spec.input_dim), width_(static_cast<int>(a.option_int("width", 16))) {
    if (!a.device || !a.device->is_host())
      throw std::invalid_argument("model.kind: tanh_net computes in host memory only");
    if (a.spec.output_dim != 1)
      throw std::invalid_argument("model.output_dim: tanh_net has one output");
    if (width_ < 1) throw std::invalid_argument("model.width: must be >= 1");
    h_.resize(static_cast<std::size_t>(a.max_rows) * width_);
  }

  std::size_t num_params() const override {
    return static_cast<std::size_t>(in_) * width_ + 2 * width_ + 1;
  }

  void init(float* p, std::uint64_t seed) const override {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n1(0.f, 1.f / std::sqrt(static_cast<float>(in_)));
    std::normal_distribution<float> n2(0.f, 1.f / std::sqrt(static_cast<float>(width_)));
    std::size_t w1 = static_cast<std::size_t>(in_) * width_;
    for (std::size_t i = 0; i < w1; ++i) p[i] = n1(rng);
    for (int j = 0; j < width_; ++j) p[w1 + j] = 0.f;
    for (int j = 0; j < width_; ++j) p[w1 + width_ + j] = n2(rng);
    p[w1 + 2 * width_] = 0.f;
  }

  actrain::loss_sum forward_backward(const float* p, const actrain::batch_view& b,
                                     float* g) override {
    return run(p, b, g);
  }
  actrain::loss_sum evaluate(const float* p, const actrain::batch_view& b) override {
    return run(p, b, nullptr);
  }
  bool is_classifier() const override { return false; }

  /// The network's output for one row x (input_dim floats).
  float predict(const float* p, const float* x) const {
    const std::size_t w1 = static_cast<std::size_t>(in_) * width_;
    float out = p[w1 + 2 * width_];
    for (int j = 0; j < width_; ++j) {
      float z = p[w1 + j];
      for (int i = 0; i < in_; ++i) z += x[i] * p[static_cast<std::size_t>(i) * width_ + j];
      out += std::tanh(z) * p[w1 + width_ + j];
    }
    return out;
  }

 private:
  /// Forward for every row; with g, also the mean-loss gradient (hand-written backward).
  actrain::loss_sum run(const float* p, const actrain::batch_view& b, float* g) {
    const std::size_t w1 = static_cast<std::size_t>(in_) * width_;
    const float* b1 = p + w1;
    const float* w2 = b1 + width_;
    const float b2 = w2[width_];
    if (g) std::fill(g, g + num_params(), 0.f);
    actrain::loss_sum s;
    const float scale = b.rows > 0 ? 2.f / static_cast<float>(b.rows) : 0.f;
    for (int r = 0; r < b.rows; ++r) {
      const float* x = b.x + static_cast<std::size_t>(r) * in_;
      float* h = h_.data() + static_cast<std::size_t>(r) * width_;
      float out = b2;
      for (int j = 0; j < width_; ++j) {
        float z = b1[j];
        for (int i = 0; i < in_; ++i) z += x[i] * p[static_cast<std::size_t>(i) * width_ + j];
        h[j] = std::tanh(z);
        out += h[j] * w2[j];
      }
      const float e = out - b.y[r];
      s.loss += static_cast<double>(e) * e;
      if (!g) continue;
      const float d = scale * e;  // d(mean loss)/d(out)
      float* gw1 = g;
      float* gb1 = g + w1;
      float* gw2 = gb1 + width_;
      gw2[width_] += d;
      for (int j = 0; j < width_; ++j) {
        gw2[j] += d * h[j];
        const float dz = d * w2[j] * (1.f - h[j] * h[j]);
        gb1[j] += dz;
        for (int i = 0; i < in_; ++i) gw1[static_cast<std::size_t>(i) * width_ + j] += dz * x[i];
      }
    }
    return s;
  }

  int in_;
  int width_;
  std::vector<float> h_;  // hidden activations of the current batch
};
