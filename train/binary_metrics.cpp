// Binary classification metrics over scores and 0/1 labels, in double.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include <actrain/sparse_data.hpp>

namespace actrain {

namespace {

void check_inputs(const char* what, const std::vector<float>& scores,
                  const std::vector<float>& labels) {
  if (scores.size() != labels.size())
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(scores.size()) +
                                " scores but " + std::to_string(labels.size()) + " labels");
  if (scores.empty()) throw std::invalid_argument(std::string(what) + ": no examples");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != 0.f && labels[i] != 1.f)
      throw std::invalid_argument(std::string(what) + ": label " + std::to_string(i) + " is " +
                                  std::to_string(labels[i]) + ", not 0 or 1");
    if (std::isnan(scores[i]))
      throw std::invalid_argument(std::string(what) + ": score " + std::to_string(i) + " is NaN");
  }
}

/// log(1 + exp(t)) without overflow; exact for t = +-infinity.
double softplus(double t) {
  return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t)));
}

}  // namespace

double roc_auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  check_inputs("roc_auc", scores, labels);
  // Mann-Whitney U: walking the scores upwards, each positive beats every negative below it
  // and ties half of those with its own score.
  std::vector<std::pair<float, float>> by_score(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) by_score[i] = {scores[i], labels[i]};
  std::sort(by_score.begin(), by_score.end());
  double negatives_below = 0, wins = 0, positives = 0;
  for (std::size_t i = 0; i < by_score.size();) {
    double pos = 0, neg = 0;
    const float score = by_score[i].first;
    for (; i < by_score.size() && by_score[i].first == score; ++i)
      (by_score[i].second == 1.f ? pos : neg) += 1;
    wins += pos * (negatives_below + 0.5 * neg);
    negatives_below += neg;
    positives += pos;
  }
  if (positives == 0 || negatives_below == 0)
    throw std::invalid_argument(
        "roc_auc: needs both classes, got " + std::to_string(static_cast<long long>(positives)) +
        " positives and " + std::to_string(static_cast<long long>(negatives_below)) + " negatives");
  return wins / (positives * negatives_below);
}

double log_loss_from_logits(const std::vector<float>& logits, const std::vector<float>& labels) {
  check_inputs("log_loss_from_logits", logits, labels);
  // -log sigmoid(z) = softplus(-z) for a positive, -log(1 - sigmoid(z)) = softplus(z) for a
  // negative: max(z, 0) - z y + log1p(exp(-|z|)) without its inf - inf at infinite logits.
  double sum = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double z = logits[i];
    sum += labels[i] == 1.f ? softplus(-z) : softplus(z);
  }
  return sum / static_cast<double>(logits.size());
}

}  // namespace actrain
