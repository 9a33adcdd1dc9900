#pragma once
// Classification metrics of an evaluation: precision, recall and average precision per class and
// macro-averaged, and ROC AUC for two classes. Computed in double on the host. No CAF.
#include <cstdint>
#include <vector>

namespace actrain {

/// What a classifier's outputs on a labelled set say, class by class. Empty vectors (and zero
/// macro figures) when no report was computed: a regression model, or a registered model that
/// does not provide its outputs (model::outputs).
struct class_report {
  /// Per class c: precision = TP / (TP + FP) of the arg-max predictions (0 when c was never
  /// predicted), recall = TP / (TP + FN) (0 when c has no rows), average precision of c's
  /// softmax probability as a ranking score: the mean, over c's rows, of the precision at the
  /// threshold of each row's score (tied scores form one threshold; NaN when c has no rows).
  std::vector<double> precision;
  std::vector<double> recall;
  std::vector<double> average_precision;
  std::vector<std::int64_t> support;  ///< rows of each class
  /// Unweighted means over the classes that have rows or were predicted (average precision:
  /// over the classes that have rows).
  double macro_precision = 0;
  double macro_recall = 0;
  double macro_average_precision = 0;
  /// Two classes: ROC AUC of class 1's probability (ties count one half); NaN otherwise or when
  /// a class has no rows.
  double auc = 0;

  bool empty() const { return precision.empty(); }
};

/// The report of `logits` (rows x classes, row-major: raw scores before the softmax) against
/// `labels` (class indices stored as floats). Throws std::invalid_argument when the sizes do not
/// match, classes < 2, a label is not an integer in [0, classes), or a logit is NaN.
class_report classification_report(const std::vector<float>& logits,
                                   const std::vector<float>& labels, int classes);

}  // namespace actrain
