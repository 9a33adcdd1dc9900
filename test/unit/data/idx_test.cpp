// The IDX reader on Debian's Fashion-MNIST files, and on broken copies written to a temp dir.
// Reference figures (byte sums, first labels) come from Python's gzip module, not this reader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "data/readers.hpp"

namespace actrain {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

/// Reads Fashion-MNIST once for the whole binary (about half a second).
class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(default_fashion_mnist_dir())) return;
    data_ = new train_test(load_fashion_mnist(default_fashion_mnist_dir()));
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (!data_) GTEST_SKIP() << default_fashion_mnist_dir() << " missing: dataset-fashion-mnist";
  }
  static train_test* data_;
};
train_test* FashionMnist::data_ = nullptr;

std::int64_t byte_sum(const std::vector<float>& x, std::size_t begin, std::size_t end) {
  std::int64_t s = 0;
  for (std::size_t i = begin; i < end; ++i) s += std::lround(x[i] * 255.f);
  return s;
}

TEST_F(FashionMnist, ShapesAndRanges) {
  for (const dataset* d : {&data_->train, &data_->test}) {
    EXPECT_EQ(d->features, 784);
    EXPECT_EQ(d->num_classes, 10);
    ASSERT_EQ(d->x.size(), std::size_t(d->rows) * 784);
    ASSERT_EQ(d->y.size(), std::size_t(d->rows));
    const auto [lo, hi] = std::minmax_element(d->x.begin(), d->x.end());
    EXPECT_EQ(*lo, 0.f);
    EXPECT_EQ(*hi, 1.f);
  }
  EXPECT_EQ(data_->train.rows, 60000);
  EXPECT_EQ(data_->test.rows, 10000);
}

TEST_F(FashionMnist, LabelsAreBalancedAndKnown) {
  std::array<int, 10> train{}, test{};
  for (float y : data_->train.y) ++train.at(static_cast<std::size_t>(y));
  for (float y : data_->test.y) ++test.at(static_cast<std::size_t>(y));
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train[c], 6000) << "class " << c;
    EXPECT_EQ(test[c], 1000) << "class " << c;
  }
  // First labels: ankle boot (9), T-shirt (0), T-shirt (0), dress (3); test: 9, 2, 1, 1.
  EXPECT_EQ(std::vector<float>(data_->train.y.begin(), data_->train.y.begin() + 4),
            (std::vector<float>{9, 0, 0, 3}));
  EXPECT_EQ(std::vector<float>(data_->test.y.begin(), data_->test.y.begin() + 4),
            (std::vector<float>{9, 2, 1, 1}));
}

TEST_F(FashionMnist, PixelChecksums) {
  EXPECT_EQ(byte_sum(data_->train.x, 0, 784), 76247);
  EXPECT_EQ(byte_sum(data_->train.x, 0, data_->train.x.size()), 3431114169);
  EXPECT_EQ(byte_sum(data_->test.x, 0, 784), 33456);
  EXPECT_EQ(byte_sum(data_->test.x, 0, data_->test.x.size()), 573469082);
}

// --- broken files ---------------------------------------------------------------------------

std::vector<unsigned char> be32(std::uint32_t v) {
  return {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
          static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
}

/// An IDX image file of n images of 2x3 pixels with pixel (i, j) = 10 i + j.
std::vector<unsigned char> idx_images(std::uint32_t n) {
  std::vector<unsigned char> b;
  for (auto v : {0x803u, n, 2u, 3u})
    for (auto c : be32(v)) b.push_back(c);
  for (std::uint32_t i = 0; i < n; ++i)
    for (int j = 0; j < 6; ++j) b.push_back(static_cast<unsigned char>(10 * i + j));
  return b;
}

std::vector<unsigned char> idx_labels(const std::vector<unsigned char>& labels) {
  std::vector<unsigned char> b;
  for (auto v : {0x801u, std::uint32_t(labels.size())})
    for (auto c : be32(v)) b.push_back(c);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

class BrokenIdx : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / (std::string("actrain_idx_") + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  std::string write_gz(const std::string& name, const std::vector<unsigned char>& bytes) {
    const std::string p = (dir_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), int(bytes.size()));
    gzclose(f);
    return p;
  }
  static std::vector<unsigned char> slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  /// The data_error message of read_idx(images, labels), or "" when it does not throw.
  static std::string error_of(const std::string& images, const std::string& labels) {
    try {
      read_idx(images, labels);
    } catch (const data_error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(BrokenIdx, PlainAndGzipReadTheSame) {
  const auto im = write("im", idx_images(4)), lb = write("lb", idx_labels({3, 1, 4, 1}));
  const auto img = write_gz("im.gz", idx_images(4)),
             lbg = write_gz("lb.gz", idx_labels({3, 1, 4, 1}));
  const dataset a = read_idx(im, lb), b = read_idx(img, lbg);
  EXPECT_EQ(a.rows, 4);
  EXPECT_EQ(a.features, 6);
  EXPECT_EQ(a.y, (std::vector<float>{3, 1, 4, 1}));
  EXPECT_FLOAT_EQ(a.x[2 * 6 + 5], 25 / 255.f);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
}

TEST_F(BrokenIdx, TruncatedGzip) {
  // A real file cut in half: the gzip stream ends early.
  const auto dir = default_fashion_mnist_dir();
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " missing";
  auto bytes = slurp(dir + "/train-labels-idx1-ubyte.gz");
  bytes.resize(bytes.size() / 2);
  const auto lb = write("train-labels-idx1-ubyte.gz", bytes);
  const auto im = write_gz("im.gz", idx_images(60000));
  EXPECT_THAT(error_of(im, lb),
              AllOf(HasSubstr(lb), HasSubstr("truncated"), HasSubstr("expected 60000 bytes")));
}

TEST_F(BrokenIdx, TruncatedPlain) {
  auto bytes = idx_images(5);
  bytes.resize(bytes.size() - 10);
  const auto im = write("im", bytes), lb = write("lb", idx_labels({0, 1, 2, 3, 4}));
  EXPECT_THAT(error_of(im, lb), AllOf(HasSubstr(im), HasSubstr("truncated"),
                                      HasSubstr("expected 30 bytes of pixel data, got 20")));
  bytes.resize(10);  // inside the header
  const auto im2 = write("im2", bytes);
  EXPECT_THAT(error_of(im2, lb), AllOf(HasSubstr(im2), HasSubstr("truncated")));
}

TEST_F(BrokenIdx, TrailingBytes) {
  auto bytes = idx_images(2);
  bytes.push_back(7);
  const auto im = write("im", bytes), lb = write("lb", idx_labels({0, 1}));
  EXPECT_THAT(error_of(im, lb), AllOf(HasSubstr(im), HasSubstr("trailing")));
}

TEST_F(BrokenIdx, WrongMagic) {
  const auto im = write("im", idx_images(2)), lb = write("lb", idx_labels({0, 1}));
  EXPECT_THAT(error_of(lb, im), AllOf(HasSubstr(lb), HasSubstr("magic"), HasSubstr("0x00000801"),
                                      HasSubstr("0x00000803")));
  EXPECT_THAT(error_of(im, im), AllOf(HasSubstr(im), HasSubstr("magic")));
}

TEST_F(BrokenIdx, CountsDisagree) {
  const auto im = write_gz("im.gz", idx_images(5)), lb = write_gz("lb.gz", idx_labels({0, 1, 2}));
  EXPECT_THAT(error_of(im, lb), AllOf(HasSubstr(im), HasSubstr(lb), HasSubstr("5 images"),
                                      HasSubstr("3 labels"), HasSubstr("differ")));
}

TEST_F(BrokenIdx, LabelOutOfRange) {
  const auto im = write("im", idx_images(3)), lb = write("lb", idx_labels({0, 10, 2}));
  EXPECT_THAT(error_of(im, lb), AllOf(HasSubstr(lb), HasSubstr("label 10"), HasSubstr("range")));
}

TEST_F(BrokenIdx, GarbageBytes) {
  const std::string text = "this is neither gzip nor IDX, just text\n";
  const auto im = write("garbage", {text.begin(), text.end()});
  const auto lb = write("lb", idx_labels({0}));
  EXPECT_THAT(error_of(im, lb), AllOf(HasSubstr(im), HasSubstr("magic")));
}

TEST_F(BrokenIdx, CorruptGzipData) {
  const auto good = write_gz("tmp.gz", idx_images(200));
  auto bytes = slurp(good);
  for (std::size_t i = 20; i + 8 < bytes.size(); i += 7)
    bytes[i] ^= 0x5a;  // damage the deflate data
  const auto im = write("im.gz", bytes), lb = write("lb", idx_labels({0}));
  EXPECT_THAT(error_of(im, lb), HasSubstr(im));
  EXPECT_THAT(error_of(im, lb),
              ::testing::AnyOf(HasSubstr("corrupt"), HasSubstr("truncated"), HasSubstr("magic")));
}

TEST_F(BrokenIdx, MissingFile) {
  const auto lb = write("lb", idx_labels({0}));
  const std::string im = (dir_ / "no-such-images.gz").string();
  EXPECT_THAT(error_of(im, lb), AllOf(HasSubstr(im), HasSubstr("cannot open")));
  const std::string gone = (dir_ / "no-such-labels").string();
  EXPECT_THAT(error_of(write("im", idx_images(1)), gone),
              AllOf(HasSubstr(gone), HasSubstr("No such file")));
}

TEST_F(BrokenIdx, LoadFromDirWithoutFiles) {
  try {
    load_fashion_mnist(dir_.string());
    FAIL() << "no error";
  } catch (const data_error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr(dir_.string()), HasSubstr("train-images-idx3-ubyte"),
                                HasSubstr("cannot open")));
  }
}

TEST(FashionMnistDir, EnvironmentOverridesDefault) {
  const char* old = std::getenv("ACTRAIN_FASHION_MNIST");
  const std::string saved = old ? old : "";
  unsetenv("ACTRAIN_FASHION_MNIST");
  EXPECT_EQ(default_fashion_mnist_dir(), "/usr/share/datasets/fashion-mnist");
  setenv("ACTRAIN_FASHION_MNIST", "/elsewhere", 1);
  EXPECT_EQ(default_fashion_mnist_dir(), "/elsewhere");
  if (old)
    setenv("ACTRAIN_FASHION_MNIST", saved.c_str(), 1);
  else
    unsetenv("ACTRAIN_FASHION_MNIST");
}

}  // namespace
}  // namespace actrain
