// Sparse data sets in memory and the synthetic CTR generator. Every draw of the generator is a
// function of (seed, row) or (seed, id) alone, so any range of rows can be generated on its own,
// in any order, and agrees with every other range on the rows they share.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <actrain/sparse_data.hpp>
#include "tensor/mix.hpp"

namespace actrain {

namespace {

// Domain constants: the row stream and the weight hash of one seed are independent.
constexpr std::uint64_t rows_domain = 0x726f77735f637472ULL;     // "rows_ctr"
constexpr std::uint64_t weights_domain = 0x7765696768747321ULL;  // "weights!"

/// splitmix64 over one row's own state: the row's draws, in order, whatever rows come before.
class row_stream {
 public:
  row_stream(std::uint64_t key, std::int64_t row)
      : state_(mix64(key ^ static_cast<std::uint64_t>(row))) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }
  double unit() { return unit_double(next()); }  // [0, 1)

 private:
  std::uint64_t state_;
};

/// Zipf ranks 1..n with P(k) proportional to k^-exponent, by rejection-inversion (Hörmann and
/// Derflinger 1996, as in Apache Commons RNG): O(1) expected draws, any n. A uniform u over
/// (H(1.5) - 1, H(n + 0.5)] falls in rank k's interval [H(k - 0.5), H(k + 0.5)), whose last h(k)
/// (proportional to k^-exponent) is accepted. The first 1024 ranks, where most draws land,
/// have their interval ends in a table found through a guide table, which makes them free of
/// transcendental functions. The table is a function of (n, exponent) alone, so a row's ranks
/// never depend on how many rows one call generates.
class zipf_sampler {
 public:
  zipf_sampler(std::int64_t n, double exponent)
      : n_(static_cast<double>(n)),
        q_(exponent),
        h_x1_(h_integral(1.5) - 1),
        h_n_(h_integral(n_ + 0.5)),
        s_(2 - h_integral_inverse(h_integral(2.5) - h(2))) {
    const auto head = static_cast<std::size_t>(std::min<std::int64_t>(n, 1024));
    upper_.resize(head);
    accept_.resize(head);
    for (std::size_t i = 0; i < head; ++i) {
      const double k = static_cast<double>(i + 1);
      upper_[i] = h_integral(k + 0.5);
      accept_[i] = i == 0 ? h_x1_ : upper_[i] - h(k);  // rank 1's interval is accepted whole
    }
    head_end_ = upper_.back();
    guide_.resize(4 * head);
    cell_ = (head_end_ - h_x1_) / static_cast<double>(guide_.size());
    std::size_t i = 0;
    for (std::size_t j = 0; j < guide_.size(); ++j) {
      const double cell_start = h_x1_ + static_cast<double>(j) * cell_;
      while (i + 1 < head && upper_[i] <= cell_start) ++i;
      guide_[j] = static_cast<std::uint32_t>(i);
    }
  }

  /// A rank in [1, n].
  std::int64_t operator()(row_stream& rng) const {
    for (;;) {
      // u is uniform in (h_x1_, h_n_].
      const double u = h_n_ + rng.unit() * (h_x1_ - h_n_);
      if (u < head_end_) {
        const auto j = std::min(static_cast<std::size_t>((u - h_x1_) / cell_), guide_.size() - 1);
        std::size_t i = guide_[j];
        while (i > 0 && upper_[i - 1] > u) --i;  // the cell index rounded past u's cell
        while (upper_[i] <= u) ++i;
        if (u >= accept_[i]) return static_cast<std::int64_t>(i + 1);
        continue;
      }
      const double x = h_integral_inverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1) k = 1;
      if (k > n_) k = n_;
      if (k - x <= s_ || u >= h_integral(k + 0.5) - h(k)) return static_cast<std::int64_t>(k);
    }
  }

 private:
  /// log1p(x) / x and expm1(x) / x, with their series near 0 (where the quotients lose digits).
  static double helper1(double x) {
    return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
  }
  static double helper2(double x) {
    return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
  }
  /// The integral of h from 1 to x: (x^(1-q) - 1) / (1 - q), log(x) at q = 1.
  double h_integral(double x) const {
    const double log_x = std::log(x);
    return helper2((1 - q_) * log_x) * log_x;
  }
  double h(double x) const { return std::exp(-q_ * std::log(x)); }
  double h_integral_inverse(double x) const {
    double t = x * (1 - q_);
    if (t < -1) t = -1;  // rounding near the lower end
    return std::exp(helper1(t) * x);
  }

  double n_;
  double q_;
  double h_x1_;
  double h_n_;
  double s_;
  std::vector<double> upper_;         // H(k + 0.5) for the head's ranks k = 1, 2, ...
  std::vector<double> accept_;        // H(k + 0.5) - h(k): u at or above it accepts rank k
  double head_end_ = 0;               // upper_.back(): u below it is in the head
  double cell_ = 0;                   // the width of one guide cell of u
  std::vector<std::uint32_t> guide_;  // per cell: the head rank's index where its first u falls
};

double sigmoid(double z) {
  return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z));
}

}  // namespace

sparse_dataset slice_rows(const sparse_dataset& d, std::int64_t begin, std::int64_t end) {
  if (begin < 0 || begin > end || end > d.rows)
    throw std::invalid_argument("slice_rows: [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") is not inside [0, " +
                                std::to_string(d.rows) + ")");
  sparse_dataset out;
  out.rows = end - begin;
  out.id_space = d.id_space;
  const std::int64_t first = d.offsets[static_cast<std::size_t>(begin)];
  const std::int64_t last = d.offsets[static_cast<std::size_t>(end)];
  out.offsets.resize(static_cast<std::size_t>(out.rows) + 1);
  for (std::int64_t r = 0; r <= out.rows; ++r)
    out.offsets[static_cast<std::size_t>(r)] =
        d.offsets[static_cast<std::size_t>(begin + r)] - first;
  out.ids.assign(d.ids.begin() + first, d.ids.begin() + last);
  if (!d.values.empty()) out.values.assign(d.values.begin() + first, d.values.begin() + last);
  out.y.assign(d.y.begin() + begin, d.y.begin() + end);
  return out;
}

void validate(const ctr_spec& s) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("ctr." + what); };
  if (s.rows <= 0) bad("rows: must be > 0, got " + std::to_string(s.rows));
  if (s.fields < 1) bad("fields: must be >= 1, got " + std::to_string(s.fields));
  if (s.ids_per_field < 1)
    bad("ids_per_field: must be >= 1, got " + std::to_string(s.ids_per_field));
  // Ids are f * ids_per_field + v, and rows * fields entries are allocated: both must fit.
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  if (s.ids_per_field > max / s.fields)
    bad("ids_per_field: fields * ids_per_field must be < 2^63, got " + std::to_string(s.fields) +
        " * " + std::to_string(s.ids_per_field));
  if (s.rows > max / s.fields)
    bad("rows: rows * fields must be < 2^63, got " + std::to_string(s.rows) + " * " +
        std::to_string(s.fields));
  if (!std::isfinite(s.zipf) || !(s.zipf > 0)) bad("zipf: must be > 0 (and finite)");
  if (!std::isfinite(s.weight_sd) || !(s.weight_sd >= 0))
    bad("weight_sd: must be >= 0 (and finite)");
  if (!std::isfinite(s.bias)) bad("bias: must be finite");
}

float ctr_true_weight(const ctr_spec& s, std::uint64_t id) {
  // Box-Muller on two uniforms hashed from (seed, id): u1 in (0, 1] so the log is finite.
  const std::uint64_t z = mix64(mix64(s.seed ^ weights_domain) ^ mix64(id));
  const double u1 = static_cast<double>((z >> 11) + 1) * 0x1.0p-53;
  const double u2 = unit_double(mix64(z));
  const double two_pi = 2 * std::acos(-1.0);
  return static_cast<float>(s.weight_sd * std::sqrt(-2 * std::log(u1)) * std::cos(two_pi * u2));
}

ctr_data make_synthetic_ctr(const ctr_spec& s, std::int64_t first_row) {
  validate(s);
  if (first_row < 0 || first_row > std::numeric_limits<std::int64_t>::max() - s.rows)
    throw std::invalid_argument(
        "make_synthetic_ctr: first_row must be >= 0 and first_row + rows "
        "< 2^63, got " +
        std::to_string(first_row));
  const auto rows = static_cast<std::size_t>(s.rows);
  const auto fields = static_cast<std::size_t>(s.fields);
  const auto per_field = static_cast<std::uint64_t>(s.ids_per_field);
  ctr_data out;
  sparse_dataset& d = out.data;
  d.rows = s.rows;
  d.id_space = per_field * fields;
  d.offsets.resize(rows + 1);
  d.ids.resize(rows * fields);
  d.y.resize(rows);
  out.true_logit.resize(rows);
  // The weights of each field's most frequent values (the lowest ranks), hashed once instead of
  // at every draw: Zipf draws mostly land there. At most 16384 per field (64 KiB, cache-sized)
  // and one per 8 rows, so the table costs a fraction of what the rows do. The values are
  // ctr_true_weight's, so the table's size never changes the data.
  const std::uint64_t head =
      std::min<std::uint64_t>({per_field, std::max<std::uint64_t>(rows / 8, 1), 16384});
  std::vector<float> head_weight(fields * head);
  for (std::size_t f = 0; f < fields; ++f)
    for (std::uint64_t v = 0; v < head; ++v)
      head_weight[f * head + v] = ctr_true_weight(s, f * per_field + v);
  const zipf_sampler zipf(s.ids_per_field, s.zipf);
  const std::uint64_t key = mix64(s.seed ^ rows_domain);
  for (std::size_t r = 0; r < rows; ++r) {
    row_stream rng(key, first_row + static_cast<std::int64_t>(r));
    std::uint64_t* ids = d.ids.data() + r * fields;
    // Summed in double in field order: the logit is reproducible from ctr_true_weight alone.
    double logit = s.bias;
    for (std::size_t f = 0; f < fields; ++f) {
      const auto v = static_cast<std::uint64_t>(zipf(rng) - 1);  // rank 1 is value 0
      ids[f] = f * per_field + v;
      logit += v < head ? head_weight[f * head + v] : ctr_true_weight(s, ids[f]);
    }
    d.offsets[r + 1] = static_cast<std::int64_t>((r + 1) * fields);
    out.true_logit[r] = static_cast<float>(logit);
    d.y[r] = rng.unit() < sigmoid(out.true_logit[r]) ? 1.f : 0.f;
  }
  return out;
}

}  // namespace actrain
