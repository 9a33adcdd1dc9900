#pragma once
// Sparse parameters (core, no CAF): embedding tables whose rows are created on first touch,
// per-row update rules with lazy state, and models over them (sparse logistic regression, a
// factorization machine). The engine's sparse shards own the rows whose ids map to them
// (actors/sparse_shard.hpp); workers pull and push only the rows of their mini-batch.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <actrain/backend.hpp>

namespace actrain {

/// An embedding table: `rows` ids (declared: a row costs memory only once touched) of `dim`
/// floats each.
struct table_spec {
  std::uint64_t rows = 0;  ///< ids are < rows
  int dim = 1;
  /// Each value of a new row is uniform in [-init_scale, init_scale), drawn from a hash of
  /// (seed, id, column): the same on every shard and in every order. 0: rows start at zero.
  float init_scale = 0.f;
  std::uint64_t seed = 42;
  /// Rows one shard holds at most; a new row beyond it replaces the least recently used one
  /// (whose learned values and state are forgotten). 0: unbounded.
  std::int64_t max_rows = 0;
  /// How ids map to shards: "hash" (a mixed hash of the id, even for skewed ids) or "range"
  /// (contiguous id ranges, shard_range of `rows`).
  std::string partition = "hash";
};
/// Throws std::invalid_argument naming the bad field ("table.dim: ...").
void validate(const table_spec& t);

/// The shard (of `shards`) that owns row `id` under t's partition. REQUIRES: id < t.rows.
int table_shard_of(const table_spec& t, int shards, std::uint64_t id);
/// The initial value of column `col` of row `id`.
float table_init_value(const table_spec& t, std::uint64_t id, int col);

/// A per-row update rule; its state exists only for rows that exist.
///  sgd:     w -= lr * (g + weight_decay * w)
///  adagrad: a += g^2; w -= lr * g / (sqrt(a) + eps), a starting at initial_accumulator
///           (PyTorch's Adagrad: 0 and 1e-10)
///  ftrl:    FTRL-proximal (McMahan et al. 2013) per coordinate with alpha = lr, beta, l1, l2:
///           sigma = (sqrt(n + g^2) - sqrt(n)) / alpha; z += g - sigma * w; n += g^2;
///           w = 0 if |z| <= l1, else -(z - sign(z) * l1) / ((beta + sqrt(n)) / alpha + l2).
///           A new row's z is set so that this w equals its initial value.
struct row_optim_spec {
  std::string kind = "adagrad";
  float lr = 0.05f;
  float weight_decay = 0.f;  ///< sgd, adagrad
  float initial_accumulator = 0.f;
  float eps = 1e-10f;
  /// ftrl. Gradients are means over a batch (small): a beta of 1 would hold every step near
  /// alpha / beta; 1e-3 lets sqrt(n) set the rate, as Adagrad's accumulator does.
  float beta = 1e-3f;
  float l1 = 0.f;  ///< ftrl
  float l2 = 0.f;  ///< ftrl
};
/// Throws std::invalid_argument naming the bad field ("sparse.optim: ...").
void validate(const row_optim_spec& o);
/// Float slots of state per value a rule keeps (sgd 0, adagrad 1, ftrl 2).
int row_state_slots(const row_optim_spec& o);

/// The rows of one mini-batch, gathered: the worker deduplicates the batch's ids and hands the
/// model one row of `dim` floats per distinct id; entries refer to them by slot.
struct sparse_batch_view {
  int rows = 0;
  const std::int64_t* offsets = nullptr;  ///< rows + 1; row r's entries: [offsets[r], offsets[r+1])
  const std::uint32_t* slots = nullptr;   ///< per entry: its gathered row, < unique
  const float* values = nullptr;          ///< per entry; nullptr: every value is 1
  const float* y = nullptr;               ///< 0/1 labels, one per row
  std::size_t unique = 0;                 ///< gathered rows
};

/// A model over one embedding table (`dim` floats per id) plus a few dense parameters (biases).
/// Outputs one logit per row, trained with the mean binary cross-entropy. Host memory; one
/// object belongs to one thread.
class sparse_model {
 public:
  virtual ~sparse_model() = default;
  virtual int dim() const = 0;                ///< floats per table row
  virtual std::size_t num_dense() const = 0;  ///< dense parameters
  /// Deterministic initial dense parameters for `seed` (num_dense() floats).
  virtual void init_dense(float* dense, std::uint64_t seed) const = 0;
  /// REQUIRES: rows holds b.unique x dim() floats; dense_grad num_dense(); row_grad b.unique x
  /// dim(). Writes d(mean loss)/d(dense) and d(mean loss)/d(rows); returns the summed loss and
  /// the rows classified right (logit > 0 for label 1).
  virtual loss_sum forward_backward(const float* dense, const float* rows,
                                    const sparse_batch_view& b, float* dense_grad,
                                    float* row_grad) = 0;
  /// One logit per row into `logits` (b.rows floats).
  virtual void predict(const float* dense, const float* rows, const sparse_batch_view& b,
                       float* logits) = 0;
};

/// Which sparse model: "sparse_lr" (logistic regression: one weight per id, a bias; dim 1) or
/// "fm" (factorization machine of `factors` factors: a weight and `factors` factors per id,
/// dim = 1 + factors, and a bias). A factory set in code builds an own model instead.
struct sparse_model_spec {
  std::string kind = "sparse_lr";
  int factors = 8;  ///< fm
  std::function<std::unique_ptr<sparse_model>(const sparse_model_spec&)> factory;
};
/// Throws std::invalid_argument naming the bad field.
void validate(const sparse_model_spec& s);
/// Floats per table row the model needs.
int sparse_model_dim(const sparse_model_spec& s);
std::unique_ptr<sparse_model> make_sparse_model(const sparse_model_spec& s);
std::string describe(const sparse_model_spec& s);  ///< e.g. "fm k=8"

}  // namespace actrain
