// The built-in sparse models: logistic regression over hashed ids and a factorization machine
// (Rendle 2010), both with a hand-written backward over the batch's gathered rows.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <actrain/sparse.hpp>

namespace actrain {

namespace {

/// Mean binary cross-entropy of one logit against label y, and its derivative.
inline double bce(float z, float y) {
  return std::max(z, 0.f) - z * y + std::log1p(std::exp(-std::fabs(z)));
}
inline float sigmoid(float z) {
  return z >= 0 ? 1.f / (1.f + std::exp(-z)) : std::exp(z) / (1.f + std::exp(z));
}

/// logit = b + sum_i w_i x_i; table rows hold w (dim 1); dense holds b.
class sparse_lr final : public sparse_model {
 public:
  int dim() const override { return 1; }
  std::size_t num_dense() const override { return 1; }
  void init_dense(float* dense, std::uint64_t) const override { dense[0] = 0; }

  void predict(const float* dense, const float* rows, const sparse_batch_view& b,
               float* logits) override {
    for (int r = 0; r < b.rows; ++r) {
      float z = dense[0];
      for (auto e = b.offsets[r]; e < b.offsets[r + 1]; ++e)
        z += rows[b.slots[e]] * (b.values ? b.values[e] : 1.f);
      logits[r] = z;
    }
  }

  loss_sum forward_backward(const float* dense, const float* rows, const sparse_batch_view& b,
                            float* dense_grad, float* row_grad) override {
    loss_sum out;
    std::fill(row_grad, row_grad + b.unique, 0.f);
    double db = 0;
    float inv = 1.f / static_cast<float>(std::max(1, b.rows));
    for (int r = 0; r < b.rows; ++r) {
      float z = dense[0];
      for (auto e = b.offsets[r]; e < b.offsets[r + 1]; ++e)
        z += rows[b.slots[e]] * (b.values ? b.values[e] : 1.f);
      out.loss += bce(z, b.y[r]);
      out.correct += (z > 0) == (b.y[r] > 0.5f);
      float d = (sigmoid(z) - b.y[r]) * inv;
      db += d;
      for (auto e = b.offsets[r]; e < b.offsets[r + 1]; ++e)
        row_grad[b.slots[e]] += d * (b.values ? b.values[e] : 1.f);
    }
    dense_grad[0] = static_cast<float>(db);
    return out;
  }
};

/// logit = b + sum_i w_i x_i + 1/2 sum_f ((sum_i v_if x_i)^2 - sum_i v_if^2 x_i^2): the pairwise
/// interactions <v_i, v_j> x_i x_j in O(k * entries). A table row is (w_i, v_i1..v_ik).
class factorization_machine final : public sparse_model {
 public:
  explicit factorization_machine(int k) : k_(k), s_(static_cast<std::size_t>(k)) {}
  int dim() const override { return 1 + k_; }
  std::size_t num_dense() const override { return 1; }
  void init_dense(float* dense, std::uint64_t) const override { dense[0] = 0; }

  void predict(const float* dense, const float* rows, const sparse_batch_view& b,
               float* logits) override {
    for (int r = 0; r < b.rows; ++r) logits[r] = logit(dense, rows, b, r);
  }

  loss_sum forward_backward(const float* dense, const float* rows, const sparse_batch_view& b,
                            float* dense_grad, float* row_grad) override {
    loss_sum out;
    const int d = dim();
    std::fill(row_grad, row_grad + b.unique * static_cast<std::size_t>(d), 0.f);
    double db = 0;
    float inv = 1.f / static_cast<float>(std::max(1, b.rows));
    for (int r = 0; r < b.rows; ++r) {
      float z = logit(dense, rows, b, r);  // leaves s_ = sum_i v_i x_i of row r
      out.loss += bce(z, b.y[r]);
      out.correct += (z > 0) == (b.y[r] > 0.5f);
      float g = (sigmoid(z) - b.y[r]) * inv;
      db += g;
      for (auto e = b.offsets[r]; e < b.offsets[r + 1]; ++e) {
        float x = b.values ? b.values[e] : 1.f;
        const float* row = rows + static_cast<std::size_t>(b.slots[e]) * d;
        float* grad = row_grad + static_cast<std::size_t>(b.slots[e]) * d;
        grad[0] += g * x;
        // d/dv_if = x_i * (s_f - v_if x_i)
        for (int f = 0; f < k_; ++f) grad[1 + f] += g * x * (s_[f] - row[1 + f] * x);
      }
    }
    dense_grad[0] = static_cast<float>(db);
    return out;
  }

 private:
  float logit(const float* dense, const float* rows, const sparse_batch_view& b, int r) {
    const int d = dim();
    std::fill(s_.begin(), s_.end(), 0.f);
    float linear = 0, squares = 0;
    for (auto e = b.offsets[r]; e < b.offsets[r + 1]; ++e) {
      float x = b.values ? b.values[e] : 1.f;
      const float* row = rows + static_cast<std::size_t>(b.slots[e]) * d;
      linear += row[0] * x;
      for (int f = 0; f < k_; ++f) {
        float vx = row[1 + f] * x;
        s_[f] += vx;
        squares += vx * vx;
      }
    }
    float pair = 0;
    for (int f = 0; f < k_; ++f) pair += s_[f] * s_[f];
    return dense[0] + linear + 0.5f * (pair - squares);
  }

  int k_;
  std::vector<float> s_;  ///< per factor: sum_i v_if x_i of the current row
};

}  // namespace

void validate(const sparse_model_spec& s) {
  if (s.factory) return;
  if (s.kind == "sparse_lr") return;
  if (s.kind == "fm") {
    if (s.factors < 1 || s.factors > 1024)
      throw std::invalid_argument("model.factors: must be in 1..1024, got " +
                                  std::to_string(s.factors));
    return;
  }
  throw std::invalid_argument("model.kind: \"" + s.kind +
                              "\" is not a sparse model (sparse_lr, fm)");
}

int sparse_model_dim(const sparse_model_spec& s) {
  if (s.factory) return s.factory(s)->dim();
  return s.kind == "fm" ? 1 + s.factors : 1;
}

std::unique_ptr<sparse_model> make_sparse_model(const sparse_model_spec& s) {
  validate(s);
  if (s.factory) return s.factory(s);
  if (s.kind == "fm") return std::make_unique<factorization_machine>(s.factors);
  return std::make_unique<sparse_lr>();
}

std::string describe(const sparse_model_spec& s) {
  if (s.factory) return s.kind.empty() ? "own sparse model" : s.kind;
  if (s.kind == "fm") return "fm k=" + std::to_string(s.factors);
  return s.kind;
}

}  // namespace actrain
