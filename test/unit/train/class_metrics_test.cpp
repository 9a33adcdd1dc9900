// classification_report() against figures worked by hand: precision and recall of the arg-max
// predictions, average precision of each class's softmax probability (ties as one threshold),
// macro means, and AUC for two classes.
#include <actrain/metrics.hpp>

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace actrain {
namespace {

// Five rows of three classes. Predictions (arg-max): 0, 1, 1, 2, 0; truth: 0, 1, 2, 0, 1.
const std::vector<float> five_logits{2, 0, 0, 0, 1, 0, 0, 2, 1, 0, 0, 3, 1, 0, 0};
const std::vector<float> five_labels{0, 1, 2, 0, 1};

TEST(ClassificationReport, PrecisionRecallAndAveragePrecisionByHand) {
  auto r = classification_report(five_logits, five_labels, 3);
  // class 0: predicted at rows 0 and 4, right at row 0; its rows are 0 and 3.
  // class 1: predicted at rows 1 and 2, right at row 1; its rows are 1 and 4.
  // class 2: predicted at row 3, wrongly; its row is 2.
  EXPECT_DOUBLE_EQ(r.precision[0], 0.5);
  EXPECT_DOUBLE_EQ(r.recall[0], 0.5);
  EXPECT_DOUBLE_EQ(r.precision[1], 0.5);
  EXPECT_DOUBLE_EQ(r.recall[1], 0.5);
  EXPECT_DOUBLE_EQ(r.precision[2], 0);
  EXPECT_DOUBLE_EQ(r.recall[2], 0);
  EXPECT_EQ(r.support, (std::vector<std::int64_t>{2, 2, 1}));
  // p(0) by row: 0.787, 0.212, 0.090, 0.045, 0.576. Ranked: row 0 (a 0), 4, 1, 2, row 3 (a 0):
  // AP = 1/2 * 1/1 + 1/2 * 2/5.
  EXPECT_NEAR(r.average_precision[0], 0.5 + 0.2, 1e-12);
  // p(1): 0.107, 0.576, 0.665, 0.045, 0.212. Ranked: row 2, row 1 (a 1), row 4 (a 1), 0, 3:
  // AP = 1/2 * 1/2 + 1/2 * 2/3.
  EXPECT_NEAR(r.average_precision[1], 0.25 + 1.0 / 3, 1e-12);
  // p(2): 0.107, 0.212, 0.245, 0.909, 0.212. Ranked: row 3, row 2 (the 2): AP = 1/2.
  EXPECT_NEAR(r.average_precision[2], 0.5, 1e-12);
  EXPECT_NEAR(r.macro_precision, 1.0 / 3, 1e-12);
  EXPECT_NEAR(r.macro_recall, 1.0 / 3, 1e-12);
  EXPECT_NEAR(r.macro_average_precision, (0.7 + 0.25 + 1.0 / 3 + 0.5) / 3, 1e-12);
  EXPECT_TRUE(std::isnan(r.auc));  // three classes: no AUC
}

TEST(ClassificationReport, TwoClassesWithTiedScores) {
  // Logits (0, s) with s = 2, 1, 1, 0: p(1) rises with s. Truth 1, 1, 0, 0.
  std::vector<float> logits{0, 2, 0, 1, 0, 1, 0, 0};
  std::vector<float> labels{1, 1, 0, 0};
  auto r = classification_report(logits, labels, 2);
  // Predictions: 1, 1, 1 and, for the tie (0, 0), the first class: 0.
  EXPECT_NEAR(r.precision[1], 2.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(r.recall[1], 1);
  EXPECT_DOUBLE_EQ(r.precision[0], 1);
  EXPECT_DOUBLE_EQ(r.recall[0], 0.5);
  // Class 1 ranked: s = 2 (a 1: precision 1), then rows 1 and 2 tied at s = 1, one threshold
  // (one more 1 among 3 rows: precision 2/3): AP = 1/2 + 1/2 * 2/3. Class 0 the same, reversed.
  EXPECT_NEAR(r.average_precision[1], 0.5 + 1.0 / 3, 1e-12);
  EXPECT_NEAR(r.average_precision[0], 0.5 + 1.0 / 3, 1e-12);
  // AUC: pairs (1s: s = 2, 1; 0s: s = 1, 0): 1 + 1 + 1/2 (the tie) + 1 over 4.
  EXPECT_NEAR(r.auc, 0.875, 1e-12);
}

TEST(ClassificationReport, ClassesWithoutRowsStayOutOfTheMacroMeans) {
  // Three classes, class 2 neither present nor predicted.
  std::vector<float> logits{1, 0, -1, 0, 1, -1};
  std::vector<float> labels{0, 1};
  auto r = classification_report(logits, labels, 3);
  EXPECT_DOUBLE_EQ(r.macro_precision, 1);
  EXPECT_DOUBLE_EQ(r.macro_recall, 1);
  EXPECT_DOUBLE_EQ(r.macro_average_precision, 1);
  EXPECT_TRUE(std::isnan(r.average_precision[2]));
  EXPECT_EQ(r.support[2], 0);
}

TEST(ClassificationReport, BadInputIsNamed) {
  auto what = [](const std::vector<float>& z, const std::vector<float>& y, int k) {
    try {
      classification_report(z, y, k);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(what({0, 1}, {0}, 1).find("2 or more classes"), std::string::npos);
  EXPECT_NE(what({0, 1, 2}, {0}, 2).find("3 outputs for 1 rows of 2 classes"), std::string::npos);
  EXPECT_NE(what({0, 1}, {2}, 2).find("label of row 0 is 2"), std::string::npos);
  EXPECT_NE(what({0, 1}, {0.5f}, 2).find("not a class"), std::string::npos);
  EXPECT_NE(what({0, NAN}, {0}, 2).find("output 1 of row 0 is NaN"), std::string::npos);
}

}  // namespace
}  // namespace actrain
