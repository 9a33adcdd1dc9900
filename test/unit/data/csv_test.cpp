// The CSV reader: label column choices, classification labels, and every error naming file:line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/readers.hpp"

namespace actrain {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

class Csv : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / (std::string("actrain_csv_") + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text, const std::string& name = "data.csv") {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  static std::string error_of(const std::string& path, const csv_options& opt) {
    try {
      read_csv(path, opt);
    } catch (const data_error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

const char* table = "a,b,price,c\n1,2,10.5,3\n4,5,-1e2,6\n";

TEST_F(Csv, LabelByName) {
  csv_options opt;
  opt.label_name = "price";
  const dataset d = read_csv(write(table), opt);
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.features, 3);
  EXPECT_EQ(d.num_classes, 0);
  EXPECT_EQ(d.x, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(d.y, (std::vector<float>{10.5f, -100}));
}

TEST_F(Csv, LabelByIndex) {
  csv_options opt;
  opt.label_index = 0;
  const dataset d = read_csv(write(table), opt);
  EXPECT_EQ(d.x, (std::vector<float>{2, 10.5f, 3, 5, -100, 6}));
  EXPECT_EQ(d.y, (std::vector<float>{1, 4}));
}

TEST_F(Csv, LastColumnByDefaultNoHeaderOtherDelimiter) {
  csv_options opt;
  opt.header = false;
  opt.delimiter = ';';
  const dataset d = read_csv(write("1; 2 ;3\r\n\r\n+4;5;6.25\r\n\n"), opt);  // CRLF, blank lines
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.features, 2);
  EXPECT_EQ(d.x, (std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(d.y, (std::vector<float>{3, 6.25f}));
}

TEST_F(Csv, ClassificationLabels) {
  csv_options opt;
  opt.num_classes = 3;
  opt.label_name = "class";
  const dataset d = read_csv(write("class,x\n2,0.5\n0,1.5\n1,2.5\n"), opt);
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.y, (std::vector<float>{2, 0, 1}));
  EXPECT_EQ(d.x, (std::vector<float>{0.5f, 1.5f, 2.5f}));
}

TEST_F(Csv, RaggedRow) {
  const auto p =
      write("a,b,c,d\n1,2,3,4\n1,2,3,4\n\n1,2,3,4\n1,2,3,4\n1,2,3\n");  // blank line 4 counts
  EXPECT_THAT(error_of(p, {}),
              AllOf(HasSubstr(p + ":7:"), HasSubstr("line 7 has 3 fields, expected 4")));
}

TEST_F(Csv, NotANumber) {
  const auto p = write("a,b\n1,2\n3,4x\n");
  EXPECT_THAT(error_of(p, {}), AllOf(HasSubstr(p + ":3:"), HasSubstr("'4x' is not a number")));
  const auto q = write("a,b\n1,\n", "empty_field.csv");
  EXPECT_THAT(error_of(q, {}), AllOf(HasSubstr(q + ":2:"), HasSubstr("empty")));
  const auto r = write("a,b\n1,nan\n", "nan.csv");
  EXPECT_THAT(error_of(r, {}), AllOf(HasSubstr(r + ":2:"), HasSubstr("finite")));
}

TEST_F(Csv, UnknownLabelColumn) {
  csv_options opt;
  opt.label_name = "target";
  const auto p = write(table);
  EXPECT_THAT(error_of(p, opt), AllOf(HasSubstr(p + ":1:"), HasSubstr("unknown label column"),
                                      HasSubstr("target"), HasSubstr("a, b, price, c")));
  csv_options idx;
  idx.label_index = 4;
  EXPECT_THAT(error_of(p, idx), AllOf(HasSubstr(p + ":1:"), HasSubstr("out of range")));
  csv_options no_header;
  no_header.header = false;
  no_header.label_name = "price";
  EXPECT_THAT(error_of(p, no_header), AllOf(HasSubstr(p), HasSubstr("no header")));
}

TEST_F(Csv, EmptyFile) {
  const auto p = write("");
  EXPECT_THAT(error_of(p, {}), AllOf(HasSubstr(p), HasSubstr("empty file")));
  const auto q = write("a,b\n\n", "header_only.csv");
  EXPECT_THAT(error_of(q, {}), AllOf(HasSubstr(q), HasSubstr("no data rows")));
  const auto missing = (dir_ / "missing.csv").string();
  EXPECT_THAT(error_of(missing, {}), AllOf(HasSubstr(missing), HasSubstr("cannot open")));
}

TEST_F(Csv, BadClassLabel) {
  csv_options opt;
  opt.num_classes = 3;
  opt.label_index = 0;
  const auto p = write("y,x\n1,0\n3,0\n");
  EXPECT_THAT(error_of(p, opt), AllOf(HasSubstr(p + ":3:"), HasSubstr("class label 3"),
                                      HasSubstr("out of range [0, 3)")));
  const auto q = write("y,x\n1.5,0\n", "frac.csv");
  EXPECT_THAT(error_of(q, opt), AllOf(HasSubstr(q + ":2:"), HasSubstr("not an integer")));
  const auto r = write("y,x\n-1,0\n", "neg.csv");
  EXPECT_THAT(error_of(r, opt), AllOf(HasSubstr(r + ":2:"), HasSubstr("out of range")));
}

}  // namespace
}  // namespace actrain
