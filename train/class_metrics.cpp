// classification_report(): per-class precision, recall and average precision, macro means, and
// binary AUC, in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include <actrain/metrics.hpp>
#include <actrain/sparse_data.hpp>

namespace actrain {

namespace {

/// Average precision of `scores` against the rows where `positive` is set: thresholds at each
/// distinct score, from the highest; AP = sum over thresholds of (recall gained) x precision.
double average_precision(const std::vector<double>& scores, const std::vector<char>& positive,
                         std::int64_t positives) {
  if (positives == 0) return std::numeric_limits<double>::quiet_NaN();
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  double ap = 0;
  std::int64_t tp = 0, seen = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    std::int64_t gained = 0;
    for (; j < order.size() && scores[order[j]] == scores[order[i]]; ++j)
      gained += positive[order[j]];
    tp += gained;
    seen += static_cast<std::int64_t>(j - i);
    if (gained > 0)
      ap += static_cast<double>(gained) / static_cast<double>(positives) *
            (static_cast<double>(tp) / static_cast<double>(seen));
    i = j;
  }
  return ap;
}

}  // namespace

class_report classification_report(const std::vector<float>& logits,
                                   const std::vector<float>& labels, int classes) {
  if (classes < 2)
    throw std::invalid_argument("classification_report: needs 2 or more classes, got " +
                                std::to_string(classes));
  const auto k = static_cast<std::size_t>(classes);
  const std::size_t rows = labels.size();
  if (logits.size() != rows * k)
    throw std::invalid_argument("classification_report: " + std::to_string(logits.size()) +
                                " outputs for " + std::to_string(rows) + " rows of " +
                                std::to_string(classes) + " classes");
  std::vector<int> truth(rows), predicted(rows);
  // Probabilities per class, column by column (the ranking scores of average precision).
  std::vector<std::vector<double>> prob(k, std::vector<double>(rows));
  for (std::size_t r = 0; r < rows; ++r) {
    float y = labels[r];
    if (!(y >= 0) || y >= static_cast<float>(classes) || y != std::floor(y))
      throw std::invalid_argument("classification_report: label of row " + std::to_string(r) +
                                  " is " + std::to_string(y) + ", not a class in [0, " +
                                  std::to_string(classes) + ")");
    truth[r] = static_cast<int>(y);
    const float* z = &logits[r * k];
    std::size_t best = 0;
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c) {
      if (std::isnan(z[c]))
        throw std::invalid_argument("classification_report: output " + std::to_string(c) +
                                    " of row " + std::to_string(r) + " is NaN");
      if (z[c] > top) {
        top = z[c];
        best = c;
      }
    }
    predicted[r] = static_cast<int>(best);
    double sum = 0;
    for (std::size_t c = 0; c < k; ++c) sum += std::exp(static_cast<double>(z[c]) - top);
    for (std::size_t c = 0; c < k; ++c)
      prob[c][r] = std::exp(static_cast<double>(z[c]) - top) / sum;
  }
  class_report out;
  out.precision.assign(k, 0);
  out.recall.assign(k, 0);
  out.average_precision.assign(k, 0);
  out.support.assign(k, 0);
  std::vector<std::int64_t> tp(k, 0), predicted_count(k, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    auto t = static_cast<std::size_t>(truth[r]), p = static_cast<std::size_t>(predicted[r]);
    out.support[t] += 1;
    predicted_count[p] += 1;
    if (t == p) tp[t] += 1;
  }
  int counted = 0, ranked = 0;
  std::vector<char> positive(rows);
  for (std::size_t c = 0; c < k; ++c) {
    if (predicted_count[c] > 0)
      out.precision[c] = static_cast<double>(tp[c]) / static_cast<double>(predicted_count[c]);
    if (out.support[c] > 0)
      out.recall[c] = static_cast<double>(tp[c]) / static_cast<double>(out.support[c]);
    for (std::size_t r = 0; r < rows; ++r) positive[r] = truth[r] == static_cast<int>(c);
    out.average_precision[c] = average_precision(prob[c], positive, out.support[c]);
    if (out.support[c] > 0 || predicted_count[c] > 0) {
      out.macro_precision += out.precision[c];
      out.macro_recall += out.recall[c];
      counted += 1;
    }
    if (out.support[c] > 0) {
      out.macro_average_precision += out.average_precision[c];
      ranked += 1;
    }
  }
  if (counted > 0) {
    out.macro_precision /= counted;
    out.macro_recall /= counted;
  }
  if (ranked > 0) out.macro_average_precision /= ranked;
  out.auc = std::numeric_limits<double>::quiet_NaN();
  if (k == 2 && out.support[0] > 0 && out.support[1] > 0) {
    std::vector<float> score(rows), y(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      score[r] = static_cast<float>(logits[r * 2 + 1] - logits[r * 2]);  // monotone in p(1)
      y[r] = static_cast<float>(truth[r]);
    }
    out.auc = roc_auc(score, y);
  }
  return out;
}

}  // namespace actrain
