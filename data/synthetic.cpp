// A synthetic regression problem (the seed's case study) and its closed-form answer, the
// yardstick every trainer's linear-regression MSE is compared against.
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "data/readers.hpp"

namespace actrain {

namespace {

/// Standard normal draws by Box-Muller over mt19937_64, whose output the standard fixes
/// (std::normal_distribution's algorithm is implementation-defined), so a seed gives the same
/// data with any standard library.
class normal_source {
 public:
  explicit normal_source(std::uint64_t seed) : rng_(seed) {}
  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double two_pi = 2 * std::acos(-1.0);
    const double u1 = unit_open_closed(), u2 = unit_open_closed();
    const double r = std::sqrt(-2 * std::log(u1));
    spare_ = r * std::sin(two_pi * u2);
    has_spare_ = true;
    return r * std::cos(two_pi * u2);
  }

 private:
  /// Uniform in (0, 1] from the top 53 bits, so log() never sees 0.
  double unit_open_closed() { return double((rng_() >> 11) + 1) * 0x1.0p-53; }
  std::mt19937_64 rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace

dataset make_linear_regression(std::int64_t rows, int features, float noise_std, std::uint64_t seed,
                               std::vector<float>* true_w, float* true_b) {
  if (rows < 1 || features < 1 || !(noise_std >= 0))
    throw std::invalid_argument(
        "make_linear_regression: need rows >= 1, features >= 1 and "
        "noise_std >= 0, got " +
        std::to_string(rows) + ", " + std::to_string(features) + ", " + std::to_string(noise_std));
  normal_source normal(seed);
  std::vector<float> w(static_cast<std::size_t>(features));
  for (float& v : w) v = static_cast<float>(normal());
  const auto b = static_cast<float>(normal());

  dataset d;
  d.rows = rows;
  d.features = features;
  d.x.resize(static_cast<std::size_t>(rows) * features);
  d.y.resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    float* x = d.x.data() + r * features;
    double y = b;
    for (int j = 0; j < features; ++j) {
      x[j] = static_cast<float>(normal());
      y += double(x[j]) * w[j];
    }
    d.y[r] = static_cast<float>(y + noise_std * normal());
  }
  if (true_w) *true_w = w;
  if (true_b) *true_b = b;
  return d;
}

double least_squares_mse(const dataset& d, std::vector<double>* solution) {
  if (d.rows < 1 || d.features < 1)
    throw std::invalid_argument("least_squares_mse: the data set has no rows or no features");
  // Normal equations A theta = c with A = Z^T Z, Z = [X 1] (the last column is the intercept).
  const std::size_t p = static_cast<std::size_t>(d.features) + 1;
  std::vector<double> a(p * p, 0.0), c(p, 0.0), z(p, 1.0);
  for (std::int64_t r = 0; r < d.rows; ++r) {
    for (std::size_t j = 0; j + 1 < p; ++j) z[j] = d.x[r * (p - 1) + j];
    const double y = d.y[r];
    for (std::size_t i = 0; i < p; ++i) {
      c[i] += z[i] * y;
      for (std::size_t j = 0; j <= i; ++j) a[i * p + j] += z[i] * z[j];  // lower triangle
    }
  }
  // Cholesky A = L L^T in place (lower triangle). A pivot that collapses relative to its
  // original diagonal means a column is (numerically) a combination of the others.
  for (std::size_t j = 0; j < p; ++j) {
    const double original = a[j * p + j];
    double s = original;
    for (std::size_t k = 0; k < j; ++k) s -= a[j * p + k] * a[j * p + k];
    if (!(s > 1e-10 * original))
      throw std::invalid_argument(
          "least_squares_mse: X^T X is singular: " +
          (j + 1 == p ? std::string("the intercept") : "feature " + std::to_string(j)) +
          " is a linear combination of the columns before it (or constant)");
    const double l = std::sqrt(s);
    a[j * p + j] = l;
    for (std::size_t i = j + 1; i < p; ++i) {
      double t = a[i * p + j];
      for (std::size_t k = 0; k < j; ++k) t -= a[i * p + k] * a[j * p + k];
      a[i * p + j] = t / l;
    }
  }
  // Forward (L u = c) then back substitution (L^T theta = u), in place in c.
  for (std::size_t i = 0; i < p; ++i) {
    for (std::size_t k = 0; k < i; ++k) c[i] -= a[i * p + k] * c[k];
    c[i] /= a[i * p + i];
  }
  for (std::size_t i = p; i-- > 0;) {
    for (std::size_t k = i + 1; k < p; ++k) c[i] -= a[k * p + i] * c[k];
    c[i] /= a[i * p + i];
  }
  double sse = 0;
  for (std::int64_t r = 0; r < d.rows; ++r) {
    double pred = c[p - 1];
    for (std::size_t j = 0; j + 1 < p; ++j) pred += c[j] * d.x[r * (p - 1) + j];
    const double e = pred - d.y[r];
    sse += e * e;
  }
  if (solution) *solution = c;
  return sse / static_cast<double>(d.rows);
}

}  // namespace actrain
