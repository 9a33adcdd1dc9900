// The model base: spec checks, the flat-vector layout and deterministic initialization.
// The arithmetic of every model kind lives in dense_stack.cpp.
#include <actrain/model.hpp>

#include <cmath>
#include <random>
#include <stdexcept>

#include "model/dense_stack.hpp"

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

void validate(const model_spec& spec) {
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

std::string describe(const model_spec& spec) {
  std::string s = spec.kind + " ";
  auto w = widths(spec);
  for (std::size_t i = 0; i < w.size(); ++i) s += (i ? "-" : "") + std::to_string(w[i]);
  return s;
}

std::size_t num_params(const model_spec& spec) {
  validate(spec);
  auto w = widths(spec);
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    n += static_cast<std::size_t>(w[i]) * w[i + 1] + w[i + 1];
  return n;
}

model::model(model_spec spec, backend& b, int max_rows)
    : spec_(std::move(spec)), backend_(&b), max_rows_(max_rows) {
  validate(spec_);
  if (max_rows <= 0)
    throw std::invalid_argument("model: max_rows must be > 0, got " + std::to_string(max_rows));
  auto w = widths(spec_);
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    layers_.push_back({num_params_, w[i], w[i + 1]});
    num_params_ += static_cast<std::size_t>(w[i]) * w[i + 1] + w[i + 1];
  }
}

std::vector<float> model::init_params(std::uint64_t seed) const {
  std::vector<float> p(num_params_, 0.0f);
  if (spec_.kind == "linear") return p;  // convex: zeros are the natural, reproducible start
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
  return p;
}

std::unique_ptr<model> make_model(const model_spec& spec, backend& b, int max_rows) {
  return std::make_unique<dense_stack>(spec, b, max_rows);
}

}  // namespace actrain
