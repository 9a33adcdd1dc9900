// Sparse data: LIBSVM files (round trips, accepted layouts, every error naming file:line, feature
// hashing, the entry limit), row slices, the synthetic CTR generator against its own ground
// truth, and the binary metrics on hand-computed cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <actrain/data.hpp>
#include <actrain/sparse_data.hpp>

namespace actrain {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class Libsvm : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("actrain_libsvm_") + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "data.svm") const { return (dir_ / name).string(); }
  std::string write(const std::string& text, const std::string& name = "data.svm") const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  static std::string read_text(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static std::string error_of(const std::string& p, const libsvm_options& opts = {}) {
    try {
      read_libsvm(p, opts);
    } catch (const data_error& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

sparse_dataset three_rows() {
  sparse_dataset d;
  d.rows = 3;
  d.offsets = {0, 3, 3, 6};
  d.ids = {2, 9, 40, 0, 7, 5};  // row 2 is not in ascending order: the order is kept
  d.values = {0.1f, -3.5e-7f, 1e30f, 1e-40f /* subnormal */, -0.f, 123456.789f};
  d.y = {1, 0, 1};
  d.id_space = 41;
  return d;
}

void expect_same(const sparse_dataset& a, const sparse_dataset& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.ids, b.ids);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (std::size_t i = 0; i < a.values.size(); ++i)  // bit for bit: -0 stays -0
    EXPECT_EQ(std::signbit(a.values[i]), std::signbit(b.values[i])) << i;
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.id_space, b.id_space);
}

TEST_F(Libsvm, RoundTripKeepsRowsIdsValuesAndLabels) {
  const sparse_dataset d = three_rows();
  write_libsvm(d, path());
  expect_same(read_libsvm(path()), d);
}

TEST_F(Libsvm, OneHotRowsRoundTripWithoutValues) {
  sparse_dataset d;
  d.rows = 2;
  d.offsets = {0, 2, 3};
  d.ids = {3, 7, 1};
  d.y = {0, 1};
  d.id_space = 8;
  write_libsvm(d, path());
  EXPECT_EQ(read_text(path()), "0 3:1 7:1\n1 1:1\n");
  const sparse_dataset back = read_libsvm(path());
  EXPECT_TRUE(back.values.empty());
  expect_same(back, d);
}

TEST_F(Libsvm, AcceptsCommentsBlankLinesCrlfTabsAndEveryLabelSpelling) {
  const std::string p = write(
      "# written by hand\r\n"
      "+1 1:0.5\t3:2   # trailing comment\r\n"
      "\r\n"
      "   \t\n"
      "-1\t2:1\n"
      "0 5:+1e2\n"
      "1\n"  // a row without entries
      "1 0:1");
  const sparse_dataset d = read_libsvm(p);
  EXPECT_EQ(d.rows, 5);
  EXPECT_EQ(d.y, (std::vector<float>{1, 0, 0, 1, 1}));
  EXPECT_EQ(d.offsets, (std::vector<std::int64_t>{0, 2, 3, 4, 4, 5}));
  EXPECT_EQ(d.ids, (std::vector<std::uint64_t>{1, 3, 2, 5, 0}));
  EXPECT_EQ(d.values, (std::vector<float>{0.5f, 2, 1, 100, 1}));
  EXPECT_EQ(d.id_space, 6u);
  EXPECT_EQ(d.nnz(), 5);
}

TEST_F(Libsvm, EveryErrorNamesFileAndLine) {
  struct bad_file {
    std::string text;
    int line;
    std::string what;
  };
  const std::vector<bad_file> cases = {
      {"1 1:1\n2 3:1\n", 2, "label '2' is not 1, +1, 0 or -1"},
      {"1.0 1:1\n", 1, "label '1.0'"},
      {"3:1 4:1\n", 1, "label '3:1'"},
      {"1 1:1\n\n1 3\n", 3, "token '3' has no ':'"},
      {"# c\n1 a:1\n", 2, "id 'a' is not a non-negative integer"},
      {"1 -3:1\n", 1, "id '-3' is not a non-negative integer"},
      {"1 1.5:1\n", 1, "id '1.5' is not a non-negative integer"},
      {"1 :1\n", 1, "id '' is not a non-negative integer"},
      {"1 99999999999999999999:1\n", 1, "out of range (more than 64 bits)"},
      {"1 9223372036854775808:1\n", 1, "id 9223372036854775808 is too large"},
      {"1 1:1\r\n0 4:1 2:1 4:2\r\n", 2, "id 4 repeats within the line"},
      {"1 1:nan\n", 1, "value 'nan' of id 1 is not finite"},
      {"1 1:2 2:-inf\n", 1, "value '-inf' of id 2 is not finite"},
      {"1 1:abc\n", 1, "value 'abc' of id 1 is not a number"},
      {"1 1:\n", 1, "value '' of id 1 is not a number"},
      {"1 1:1e\n", 1, "value '1e' of id 1 is not a number"},
      {"1 1:1e50\n", 1, "out of float range"},
  };
  for (const auto& c : cases) {
    const std::string p = write(c.text);
    const std::string e = error_of(p);
    EXPECT_THAT(e, HasSubstr(p + ":" + std::to_string(c.line) + ": ")) << c.text;
    EXPECT_THAT(e, HasSubstr(c.what)) << c.text;
  }
}

TEST_F(Libsvm, MissingAndEmptyFilesAreRefused) {
  EXPECT_THAT(error_of(path("absent.svm")), HasSubstr(path("absent.svm") + ": cannot open"));
  EXPECT_THAT(error_of(write("", "empty.svm")), HasSubstr(path("empty.svm") + ": no rows"));
  EXPECT_THAT(error_of(write("# only a comment\n\n  \r\n", "blank.svm")),
              HasSubstr(path("blank.svm") + ": no rows"));
  EXPECT_THAT(error_of(dir_.string()), HasSubstr(dir_.string() + ": "));  // a folder
}

TEST_F(Libsvm, HashingTakesIdsModuloAndMergesCollisionsBySumming) {
  libsvm_options opts;
  opts.hash_buckets = 10;
  const sparse_dataset d = read_libsvm(write("1 13:1 3:2 5:1 23:0.5\n0 17:1 7:1\n1 4:1\n"), opts);
  EXPECT_EQ(d.rows, 3);
  EXPECT_EQ(d.offsets, (std::vector<std::int64_t>{0, 2, 3, 4}));
  // 13, 3 and 23 share bucket 3, at the first one's place; 17 and 7 share bucket 7.
  EXPECT_EQ(d.ids, (std::vector<std::uint64_t>{3, 5, 7, 4}));
  EXPECT_EQ(d.values, (std::vector<float>{3.5f, 1, 2, 1}));
  EXPECT_EQ(d.id_space, 10u);

  // Without collisions one-hot rows stay without values; a 64-bit id is fine when hashed.
  const sparse_dataset h = read_libsvm(write("1 18446744073709551615:1 12:1\n"), opts);
  EXPECT_EQ(h.ids, (std::vector<std::uint64_t>{5, 2}));
  EXPECT_TRUE(h.values.empty());

  // A merged sum must stay a float.
  EXPECT_THAT(error_of(write("1 1:3e38 11:3e38\n"), opts),
              HasSubstr(":1: the values hashed into bucket 1 add up to more than float's range"));

  // A repeat in the file is still an error, before hashing.
  EXPECT_THAT(error_of(write("1 1:1\n1 2:1 12:1 2:1\n"), opts),
              HasSubstr(":2: id 2 repeats within the line"));
}

TEST_F(Libsvm, MoreEntriesThanTheLimitAreRefused) {
  const std::string p = write("1 1:1 2:1\n# comment\n0 3:1 4:1\n1 5:1 6:1\n");
  libsvm_options opts;
  opts.max_entries = 5;
  EXPECT_THAT(error_of(p, opts), HasSubstr(p + ":4: more than 5 entries"));
  opts.max_entries = 6;
  EXPECT_EQ(read_libsvm(p, opts).nnz(), 6);
  opts.max_entries = 0;
  EXPECT_THAT(error_of(p, opts), HasSubstr(p + ":1: more than 0 entries"));
  EXPECT_EQ(read_libsvm(write("1\n0\n", "labels_only.svm"), opts).rows, 2);
  opts.max_entries = -1;
  EXPECT_THAT(error_of(p, opts), HasSubstr("max_entries must be >= 0"));
}

TEST_F(Libsvm, WriteFailuresAreDataErrors) {
  const sparse_dataset d = three_rows();
  EXPECT_THROW(write_libsvm(d, path("no/such/folder.svm")), data_error);
  if (fs::exists("/dev/full")) {  // accepts the open, fails every write
    try {
      write_libsvm(d, "/dev/full");
      ADD_FAILURE() << "writing to /dev/full succeeded";
    } catch (const data_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("/dev/full: write failed"));
    }
  }
}

TEST_F(Libsvm, MalformedDataSetsAreNotWritten) {
  sparse_dataset d = three_rows();
  d.y[1] = 0.5f;
  EXPECT_THROW(write_libsvm(d, path()), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path()));
  d = three_rows();
  d.values.pop_back();
  EXPECT_THROW(write_libsvm(d, path()), std::invalid_argument);
  d = three_rows();
  d.offsets = {0, 4, 3, 6};
  EXPECT_THROW(write_libsvm(d, path()), std::invalid_argument);
}

TEST(SparseSlice, CopiesTheRowsRebasingOffsets) {
  const sparse_dataset d = three_rows();
  const sparse_dataset s = slice_rows(d, 1, 3);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.offsets, (std::vector<std::int64_t>{0, 0, 3}));
  EXPECT_EQ(s.ids, (std::vector<std::uint64_t>{0, 7, 5}));
  EXPECT_EQ(s.values, (std::vector<float>{1e-40f, -0.f, 123456.789f}));
  EXPECT_EQ(s.y, (std::vector<float>{0, 1}));
  EXPECT_EQ(s.id_space, d.id_space);
  EXPECT_EQ(slice_rows(d, 2, 2).rows, 0);
  EXPECT_EQ(slice_rows(d, 2, 2).offsets, (std::vector<std::int64_t>{0}));

  sparse_dataset one_hot = d;
  one_hot.values.clear();
  EXPECT_TRUE(slice_rows(one_hot, 0, 1).values.empty());
  EXPECT_EQ(slice_rows(one_hot, 0, 1).ids, (std::vector<std::uint64_t>{2, 9, 40}));

  EXPECT_THROW(slice_rows(d, -1, 2), std::invalid_argument);
  EXPECT_THROW(slice_rows(d, 2, 1), std::invalid_argument);
  EXPECT_THROW(slice_rows(d, 0, 4), std::invalid_argument);
}

// -- the synthetic CTR generator -----------------------------------------------------------------

std::string validation_error(const ctr_spec& s) {
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(valid)";
}

TEST(SyntheticCtr, ValidateNamesTheBadField) {
  EXPECT_EQ(validation_error(ctr_spec{}), "(valid)");
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto with = [](auto change) {
    ctr_spec s;
    change(s);
    return validation_error(s);
  };
  EXPECT_THAT(with([](ctr_spec& s) { s.rows = 0; }), HasSubstr("ctr.rows: must be > 0"));
  EXPECT_THAT(with([](ctr_spec& s) { s.fields = 0; }), HasSubstr("ctr.fields: must be >= 1"));
  EXPECT_THAT(with([](ctr_spec& s) { s.ids_per_field = 0; }),
              HasSubstr("ctr.ids_per_field: must be >= 1"));
  EXPECT_THAT(with([](ctr_spec& s) { s.ids_per_field = std::int64_t{1} << 62; }),
              HasSubstr("ctr.ids_per_field: fields * ids_per_field must be < 2^63"));
  EXPECT_THAT(with([](ctr_spec& s) { s.zipf = 0; }), HasSubstr("ctr.zipf: must be > 0"));
  EXPECT_THAT(with([&](ctr_spec& s) { s.zipf = nan; }), HasSubstr("ctr.zipf: must be > 0"));
  EXPECT_THAT(with([&](ctr_spec& s) { s.zipf = inf; }), HasSubstr("ctr.zipf: must be > 0"));
  EXPECT_THAT(with([](ctr_spec& s) { s.weight_sd = -0.1; }),
              HasSubstr("ctr.weight_sd: must be >= 0"));
  EXPECT_THAT(with([&](ctr_spec& s) { s.weight_sd = nan; }),
              HasSubstr("ctr.weight_sd: must be >= 0"));
  EXPECT_THAT(with([&](ctr_spec& s) { s.bias = inf; }), HasSubstr("ctr.bias: must be finite"));
  EXPECT_THROW(make_synthetic_ctr(ctr_spec{}, -1), std::invalid_argument);
}

ctr_spec small_spec(std::int64_t rows) {
  ctr_spec s;
  s.rows = rows;
  s.fields = 5;
  s.ids_per_field = 1000;
  return s;
}

TEST(SyntheticCtr, HasOneIdPerFieldInsideTheField) {
  const ctr_spec s = small_spec(2000);
  const ctr_data c = make_synthetic_ctr(s);
  const sparse_dataset& d = c.data;
  EXPECT_EQ(d.rows, s.rows);
  EXPECT_EQ(d.id_space, 5000u);
  EXPECT_TRUE(d.values.empty());
  ASSERT_EQ(d.offsets.size(), 2001u);
  ASSERT_EQ(d.y.size(), 2000u);
  ASSERT_EQ(c.true_logit.size(), 2000u);
  for (std::int64_t r = 0; r < d.rows; ++r) {
    ASSERT_EQ(d.offsets[r], r * s.fields);
    for (int f = 0; f < s.fields; ++f) {
      const std::uint64_t id = d.ids[r * s.fields + f];
      EXPECT_GE(id, std::uint64_t(f) * 1000);
      EXPECT_LT(id, std::uint64_t(f + 1) * 1000);
    }
    EXPECT_TRUE(d.y[r] == 0 || d.y[r] == 1);
  }
  EXPECT_EQ(d.nnz(), 10000);
}

TEST(SyntheticCtr, TheSeedDecidesTheData) {
  const ctr_spec s = small_spec(1000);
  const ctr_data a = make_synthetic_ctr(s), b = make_synthetic_ctr(s);
  EXPECT_EQ(a.data.ids, b.data.ids);
  EXPECT_EQ(a.data.y, b.data.y);
  EXPECT_EQ(a.true_logit, b.true_logit);
  ctr_spec other = s;
  other.seed = 43;
  const ctr_data c = make_synthetic_ctr(other);
  EXPECT_NE(a.data.ids, c.data.ids);
  EXPECT_NE(a.true_logit, c.true_logit);
  EXPECT_NE(ctr_true_weight(s, 7), ctr_true_weight(other, 7));
}

TEST(SyntheticCtr, ARowIsTheSameInEveryRange) {
  const ctr_spec s = small_spec(1000);
  const ctr_data a = make_synthetic_ctr(s, 0), b = make_synthetic_ctr(s, 500);
  const auto f = static_cast<std::size_t>(s.fields);
  for (std::size_t r = 500; r < 1000; ++r) {
    const std::size_t q = r - 500;
    ASSERT_EQ(
        std::vector<std::uint64_t>(a.data.ids.begin() + r * f, a.data.ids.begin() + r * f + f),
        std::vector<std::uint64_t>(b.data.ids.begin() + q * f, b.data.ids.begin() + q * f + f))
        << "row " << r;
    ASSERT_EQ(a.data.y[r], b.data.y[q]) << "row " << r;
    ASSERT_EQ(a.true_logit[r], b.true_logit[q]) << "row " << r;
  }
  // A call of 3 rows (whose tables of frequent weights are smaller) agrees too.
  const ctr_data c = make_synthetic_ctr(s, 700);
  ctr_spec three = s;
  three.rows = 3;
  const ctr_data t = make_synthetic_ctr(three, 700);
  EXPECT_EQ(t.data.ids, std::vector<std::uint64_t>(c.data.ids.begin(), c.data.ids.begin() + 3 * f));
  EXPECT_EQ(t.data.y, std::vector<float>(c.data.y.begin(), c.data.y.begin() + 3));
  EXPECT_EQ(t.true_logit, std::vector<float>(c.true_logit.begin(), c.true_logit.begin() + 3));
  // Neighbouring rows differ (each has its own stream): rows 0..499 are not rows 500..999.
  EXPECT_NE(std::vector<std::uint64_t>(a.data.ids.begin(), a.data.ids.begin() + 500 * f),
            std::vector<std::uint64_t>(b.data.ids.begin(), b.data.ids.begin() + 500 * f));
}

TEST(SyntheticCtr, TrueLogitIsTheBiasPlusTheRowsWeights) {
  const ctr_spec s = small_spec(3000);
  const ctr_data c = make_synthetic_ctr(s);
  for (std::int64_t r = 0; r < c.data.rows; ++r) {
    double z = s.bias;
    for (std::int64_t e = c.data.offsets[r]; e < c.data.offsets[r + 1]; ++e)
      z += ctr_true_weight(s, c.data.ids[e]);
    ASSERT_EQ(c.true_logit[r], static_cast<float>(z)) << "row " << r;
  }
}

TEST(SyntheticCtr, WeightsAreNormalWithTheGivenSpread) {
  ctr_spec s;
  s.weight_sd = 0.5;
  const int n = 200000;
  double sum = 0, sq = 0;
  for (int id = 0; id < n; ++id) {
    const double w = ctr_true_weight(s, static_cast<std::uint64_t>(id));
    sum += w;
    sq += w * w;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0, 4 * 0.5 / std::sqrt(n));
  EXPECT_NEAR(sd, 0.5, 4 * 0.5 / std::sqrt(2.0 * n));
  EXPECT_EQ(ctr_true_weight(s, 12345), ctr_true_weight(s, 12345));
  s.weight_sd = 0;
  EXPECT_EQ(ctr_true_weight(s, 12345), 0.f);
}

/// How often each value of field 0 occurs in `rows` rows.
std::vector<double> value_counts(const ctr_spec& s) {
  const ctr_data c = make_synthetic_ctr(s);
  std::vector<double> counts(static_cast<std::size_t>(s.ids_per_field), 0);
  for (std::int64_t r = 0; r < c.data.rows; ++r) counts[c.data.ids[r * s.fields]] += 1;
  return counts;
}

TEST(SyntheticCtr, TopValuesFollowZipf) {
  ctr_spec s;
  s.rows = 200000;
  s.fields = 1;
  s.ids_per_field = 50000;
  s.zipf = 1.1;
  const std::vector<double> counts = value_counts(s);
  // count(rank 0) / count(rank 1) estimates 2^zipf; its relative standard error is
  // sqrt(1/c0 + 1/c1) (Poisson counts), about 1% here: 5 of them allowed.
  const double ratio = counts[0] / counts[1];
  const double tolerance = 5 * std::sqrt(1 / counts[0] + 1 / counts[1]) * ratio;
  EXPECT_NEAR(ratio, std::pow(2.0, s.zipf), tolerance);
  EXPECT_NEAR(counts[0] / counts[3], std::pow(4.0, s.zipf),
              5 * std::sqrt(1 / counts[0] + 1 / counts[3]) * counts[0] / counts[3]);
}

TEST(SyntheticCtr, EveryRankHasItsZipfProbability) {
  // A small support, so every rank's frequency is checked against the exact law, for an
  // exponent below, at and above 1 (the sampler has a separate branch near 1).
  for (double q : {0.5, 1.0, 2.5}) {
    ctr_spec s;
    s.rows = 100000;
    s.fields = 1;
    s.ids_per_field = 6;
    s.zipf = q;
    const std::vector<double> counts = value_counts(s);
    double norm = 0;
    for (int k = 1; k <= 6; ++k) norm += std::pow(k, -q);
    for (int k = 1; k <= 6; ++k) {
      const double p = std::pow(k, -q) / norm;
      const double se = std::sqrt(p * (1 - p) / s.rows);
      EXPECT_NEAR(counts[k - 1] / s.rows, p, 5 * se) << "zipf " << q << " rank " << k;
    }
  }
  ctr_spec one;
  one.rows = 100;
  one.fields = 3;
  one.ids_per_field = 1;
  EXPECT_EQ(make_synthetic_ctr(one).data.ids[4], 1u);  // row 1, field 1: the only value
}

double sigmoid(double z) {
  return 1 / (1 + std::exp(-z));
}

TEST(SyntheticCtr, LabelsFollowTheTrueProbabilities) {
  ctr_spec s;
  s.rows = 200000;
  const ctr_data c = make_synthetic_ctr(s);
  double positives = 0, expected = 0, variance = 0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const double p = sigmoid(c.true_logit[r]);
    positives += c.data.y[r];
    expected += p;
    variance += p * (1 - p);
  }
  EXPECT_NEAR(positives, expected, 3 * std::sqrt(variance));
  const double rate = positives / s.rows;
  EXPECT_NEAR(rate, 0.28, 0.02);  // the defaults' "about 28%"

  // The truth ranks far better than chance, and its log loss beats predicting the base rate.
  EXPECT_GT(roc_auc(c.true_logit, c.data.y), 0.7);
  const double base_logit = std::log(rate / (1 - rate));
  EXPECT_LT(log_loss_from_logits(c.true_logit, c.data.y),
            log_loss_from_logits(std::vector<float>(c.data.y.size(), float(base_logit)), c.data.y));
}

// -- binary metrics ------------------------------------------------------------------------------

TEST(RocAuc, HandComputedCases) {
  EXPECT_DOUBLE_EQ(roc_auc({0.1f, 0.2f, 0.8f, 0.9f}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(roc_auc({0.9f, 0.8f, 0.2f, 0.1f}, {0, 0, 1, 1}), 0.0);
  // Pairs (positive, negative): (0.4, 0.1) 1, (0.4, 0.4) 1/2, (0.8, 0.1) 1, (0.8, 0.4) 1.
  EXPECT_DOUBLE_EQ(roc_auc({0.1f, 0.4f, 0.4f, 0.8f}, {0, 0, 1, 1}), 0.875);
  EXPECT_DOUBLE_EQ(roc_auc({3, 3, 3}, {1, 0, 1}), 0.5);
  // Scores as logits, infinities included; the order of the inputs does not matter.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_DOUBLE_EQ(roc_auc({inf, -2, -inf, 5}, {1, 0, 0, 1}), 1.0);
}

TEST(RocAuc, MatchesThePairwiseDefinition) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> score(0, 20);  // many ties
  std::bernoulli_distribution label(0.3);
  std::vector<float> s(500), y(500);
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i] = score(rng) * 0.1f;
    y[i] = label(rng) ? 1.f : 0.f;
  }
  double wins = 0, pairs = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = 0; j < s.size(); ++j)
      if (y[i] == 1 && y[j] == 0) {
        pairs += 1;
        wins += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
      }
  EXPECT_NEAR(roc_auc(s, y), wins / pairs, 1e-12);
}

TEST(RocAuc, RefusesBadInput) {
  EXPECT_THROW(roc_auc({0.1f, 0.2f}, {1, 1}), std::invalid_argument);  // one class
  EXPECT_THROW(roc_auc({0.1f, 0.2f}, {0, 0}), std::invalid_argument);
  EXPECT_THROW(roc_auc({0.1f}, {0, 1}), std::invalid_argument);  // sizes
  EXPECT_THROW(roc_auc({}, {}), std::invalid_argument);
  EXPECT_THROW(roc_auc({0.1f, 0.2f}, {0, 2}), std::invalid_argument);  // not a 0/1 label
  EXPECT_THROW(roc_auc({0.1f, std::nanf("")}, {0, 1}), std::invalid_argument);
}

TEST(LogLoss, HandComputedAndStableCases) {
  EXPECT_DOUBLE_EQ(log_loss_from_logits({0}, {1}), std::log(2.0));
  EXPECT_DOUBLE_EQ(log_loss_from_logits({0}, {0}), std::log(2.0));
  EXPECT_NEAR(log_loss_from_logits({100}, {1}), 0, 1e-40);
  EXPECT_NEAR(log_loss_from_logits({-100}, {1}), 100, 1e-12);
  EXPECT_NEAR(log_loss_from_logits({100}, {0}), 100, 1e-12);
  // -log sigmoid(2) and -log(1 - sigmoid(-1)), averaged.
  EXPECT_NEAR(log_loss_from_logits({2, -1}, {1, 0}),
              (std::log1p(std::exp(-2.0)) + std::log1p(std::exp(-1.0))) / 2, 1e-15);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(log_loss_from_logits({inf, -inf}, {1, 0}), 0.0);
  EXPECT_EQ(log_loss_from_logits({-inf}, {1}), inf);
  EXPECT_THROW(log_loss_from_logits({0, 1}, {1}), std::invalid_argument);
  EXPECT_THROW(log_loss_from_logits({}, {}), std::invalid_argument);
  EXPECT_THROW(log_loss_from_logits({0}, {0.5f}), std::invalid_argument);
  EXPECT_DOUBLE_EQ(log_loss_from_logits({0, 0}, {1, 1}), std::log(2.0));  // one class is fine
}

}  // namespace
}  // namespace actrain
