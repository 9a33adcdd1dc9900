// The actrain command's configuration: INI files in CAF's format, command-line overrides, and
// clear refusals of what CAF alone would silently ignore.
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "apps/job_config.hpp"
#include "apps/sparse_train.hpp"

#include <sstream>

namespace actrain {
namespace {

std::string write_ini(const std::string& name, const std::string& text) {
  auto path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(config_test, a_good_file_with_overrides_fills_the_job) {
  auto path = write_ini("good.ini",
                        "[job]\nworkers=4\nshards=2\nmode=\"async\"\n[model]\nkind=\"mlp\"\n"
                        "hidden=[128, 64]\n[optim]\nkind=\"adam\"\nlr=0.001\n"
                        "[data]\nkind=\"synthetic_linear\"\nrows=1000\n");
  app_config cfg;
  ASSERT_EQ(load_app_config(cfg, {"--config", path, "--job.workers=8"}), "");
  auto job = job_from_config(cfg);
  EXPECT_EQ(job.workers, 8);  // the command line wins
  EXPECT_EQ(job.shards, 2);
  EXPECT_EQ(job.model.kind, "mlp");
  EXPECT_EQ(job.model.hidden, (std::vector<int>{128, 64}));
  EXPECT_EQ(job.optim.kind, "adam");
  EXPECT_FLOAT_EQ(job.optim.lr, 0.001f);
  EXPECT_EQ(job.data.rows, 1000);
  EXPECT_EQ(job.staleness.buffer, 1);  // off unless asked for
  app_config buffered;
  ASSERT_EQ(load_app_config(buffered, {"--config", path, "--staleness.buffer=0",
                                       "--staleness.momentum=explicit"}),
            "");
  auto b = job_from_config(buffered);
  EXPECT_EQ(b.staleness.buffer, 0);
  EXPECT_EQ(b.staleness.momentum, "explicit");
}

// CAF 0.17 takes booleans as bare flags only; `=false` and `=true` work on the command line too,
// over the file's value, and anything else is refused naming the key.
TEST(config_test, boolean_options_take_true_and_false_on_the_command_line) {
  auto path = write_ini("bools.ini",
                        "[job]\nworkers=2\n[data]\nkind=\"csv\"\npath=\"x.csv\"\nheader=true\n"
                        "standardize=false\n");
  app_config cfg;
  ASSERT_EQ(load_app_config(cfg, {"--config", path, "--data.header=false",
                                  "--data.standardize=true", "--checkpoint.at-end=false"}),
            "");
  auto job = job_from_config(cfg);
  EXPECT_FALSE(job.data.header);
  EXPECT_TRUE(job.data.standardize);
  EXPECT_FALSE(job.checkpoint.at_end);
  app_config flag;
  ASSERT_EQ(load_app_config(flag, {"--config", path, "--data.standardize"}), "");
  EXPECT_TRUE(job_from_config(flag).data.standardize);
  app_config bad;
  EXPECT_EQ(load_app_config(bad, {"--config", path, "--data.header=maybe"}),
            "bad option --data.header=maybe: data.header takes a value of type boolean, not "
            "'maybe'");
}

TEST(config_test, an_unknown_key_is_refused_naming_key_and_file) {
  auto path = write_ini("typo.ini", "[job]\nwrokers=4\n");
  app_config cfg;
  auto msg = load_app_config(cfg, {"--config", path});
  EXPECT_NE(msg.find("job.wrokers"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(config_test, a_value_of_the_wrong_type_is_refused) {
  auto path = write_ini("type.ini", "[job]\nworkers=\"four\"\n");
  app_config cfg;
  auto msg = load_app_config(cfg, {"--config", path});
  EXPECT_NE(msg.find("job.workers"), std::string::npos) << msg;
}

TEST(config_test, a_missing_file_and_a_bad_override_are_refused) {
  app_config a;
  auto msg = load_app_config(a, {"--config", "/nonexistent/x.ini"});
  EXPECT_NE(msg.find("/nonexistent/x.ini"), std::string::npos) << msg;
  app_config b;
  auto bad = load_app_config(b, {"--job.workers=many"});
  EXPECT_NE(
      bad.find(
          "bad option --job.workers=many: job.workers takes a value of type int64, not 'many'"),
      std::string::npos)
      << bad;
  app_config c;
  auto unknown = load_app_config(c, {"--job.nope=1"});
  EXPECT_NE(unknown.find("unknown option --job.nope=1"), std::string::npos) << unknown;
}

// Without a job file the built-in defaults used to run (and fail as "mlp needs at least one
// hidden layer"); a directory or an empty file did the same. --help printed and then ran the job.
TEST(config_test, no_job_file_a_directory_or_an_empty_file_is_refused_and_help_only_prints) {
  app_config a;
  auto none = load_app_config(a, {"--job.workers=2"});
  EXPECT_NE(none.find("no job file: give --config FILE"), std::string::npos) << none;
  app_config b;
  auto dir = load_app_config(b, {"--config", ::testing::TempDir()});
  EXPECT_NE(dir.find("is a directory"), std::string::npos) << dir;
  auto empty_path = ::testing::TempDir() + "actrain_empty.ini";
  std::ofstream(empty_path) << "; nothing but a comment\n";
  app_config c;
  auto empty = load_app_config(c, {"--config", empty_path});
  EXPECT_NE(empty.find("holds no settings"), std::string::npos) << empty;
  std::remove(empty_path.c_str());
  app_config d;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(load_app_config(d, {"--help"}), "");
  auto printed = testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
  EXPECT_TRUE(d.cli_helptext_printed);
  EXPECT_NE(printed.find("--help"), std::string::npos) << printed;
}

// What editors write: a byte order mark, CRLF line ends, `#` comments. Read as meant.
TEST(config_test, a_bom_crlf_and_hash_comments_are_read_as_meant) {
  auto path = write_ini("bom.ini",
                        "\xEF\xBB\xBF# a job\r\n[job]\r\nworkers=3\r\n  # indented\r\n"
                        "name=\"crlf\"\r\n[model]\r\nkind=\"linear\"\r\n");
  app_config cfg;
  ASSERT_EQ(load_app_config(cfg, {"--config", path}), "");
  auto job = job_from_config(cfg);
  EXPECT_EQ(job.workers, 3);
  EXPECT_EQ(job.name, "crlf");
  EXPECT_EQ(job.model.kind, "linear");
}

// CAF keeps one of two values silently; which one was meant is not knowable.
TEST(config_test, a_key_set_twice_or_a_group_opened_twice_is_refused_naming_both_lines) {
  app_config a;
  auto twice = load_app_config(
      a, {"--config", write_ini("dup_key.ini", "[job]\nworkers=2\nshards=1\nworkers=4\n")});
  EXPECT_NE(twice.find("line 4: job.workers is set a second time (first on line 2)"),
            std::string::npos)
      << twice;
  app_config b;
  auto group = load_app_config(b, {"--config", write_ini("dup_group.ini",
                                                         "[job]\nworkers=2\n[model]\nkind=\"mlp\"\n"
                                                         "[job]\nshards=2\n")});
  EXPECT_NE(group.find("line 5: group [job] appears a second time (first on line 1)"),
            std::string::npos)
      << group;
}

TEST(config_test, an_unquoted_string_is_refused_with_its_line_and_the_fix) {
  app_config cfg;
  auto msg =
      load_app_config(cfg, {"--config", write_ini("unquoted.ini", "[job]\nworkers=2\nname=foo\n")});
  EXPECT_NE(msg.find("in `name=foo`"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a string value is quoted: name=\"foo\""), std::string::npos) << msg;
}

TEST(config_test, a_huge_file_is_refused_before_it_is_read) {
  auto path = ::testing::TempDir() + "actrain_huge.ini";
  {
    std::ofstream out(path);
    out << "[job]\n";
    std::string comment(1000, ';');
    for (int i = 0; i < 1100; ++i) out << comment << "\n";
  }
  app_config cfg;
  auto msg = load_app_config(cfg, {"--config", path});
  EXPECT_NE(msg.find("a job file is at most 1048576 bytes"), std::string::npos) << msg;
  std::remove(path.c_str());
}

TEST(config_test, every_sample_config_parses_and_validates) {
  const char* src = std::getenv("ACTRAIN_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  for (auto name : {"ctr_synthetic.ini"}) {
    app_config cfg;
    auto path = std::string(src) + "/config/" + name;
    ASSERT_EQ(load_app_config(cfg, {"--config", path}), "") << name;
    auto job = sparse_job_from_config(cfg);
    job.table.rows = 1000000;
    EXPECT_NO_THROW(validate(job)) << name;
  }
  for (auto name : {"linear_synthetic.ini", "softmax_fashion.ini", "mlp_fashion.ini"}) {
    app_config cfg;
    auto path = std::string(src) + "/config/" + name;
    ASSERT_EQ(load_app_config(cfg, {"--config", path}), "") << name;
    auto job = job_from_config(cfg);
    if (job.model.input_dim == 0)
      job.model.input_dim = job.data.kind == "fashion_mnist" ? 784 : job.data.features;
    if (job.model.output_dim == 0) job.model.output_dim = job.model.kind == "linear" ? 1 : 10;
    EXPECT_NO_THROW(validate(job)) << name;
  }
}

TEST(config_test, a_sparse_job_reads_its_groups_and_trains_through_the_command) {
  auto path = write_ini("ctr.ini",
                        "[job]\nworkers=2\nshards=2\nbatch=128\nmode=\"sync\"\n"
                        "[model]\nkind=\"fm\"\nfactors=3\n[optim]\nkind=\"ftrl\"\nlr=0.1\n"
                        "l1=0.00001\n[table]\npartition=\"range\"\nmax-rows=5000\n"
                        "[data]\nkind=\"synthetic_ctr\"\nrows=20000\ntest-rows=5000\n"
                        "fields=4\nids-per-field=300\nzipf=1.3\n");
  app_config cfg;
  ASSERT_EQ(load_app_config(cfg, {"--config", path}), "");
  auto job = sparse_job_from_config(cfg);
  EXPECT_EQ(job.model.kind, "fm");
  EXPECT_EQ(job.table.dim, 4);
  EXPECT_EQ(job.table.partition, "range");
  EXPECT_EQ(job.table.max_rows, 5000);
  EXPECT_FLOAT_EQ(job.optim.l1, 1e-5f);
  EXPECT_EQ(job.mode, "sync");
  std::ostringstream out, err;
  ASSERT_EQ(sparse_train(cfg, "", out, err), 0) << err.str();
  EXPECT_NE(out.str().find("result: test AUC 0."), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(ground truth: AUC 0."), std::string::npos) << out.str();
  std::remove(path.c_str());
}

TEST(config_test, a_sparse_job_refuses_bad_data_and_options_by_name) {
  auto bad = write_ini("bad.svm", "1 3:1 5:1\n0 7:1 7:2\n");
  auto path = write_ini(
      "svm.ini", "[model]\nkind=\"sparse_lr\"\n[data]\nkind=\"libsvm\"\npath=\"" + bad + "\"\n");
  app_config cfg;
  ASSERT_EQ(load_app_config(cfg, {"--config", path}), "");
  std::ostringstream out, err;
  EXPECT_EQ(sparse_train(cfg, "", out, err), 2);
  EXPECT_NE(err.str().find(bad + ":2:"), std::string::npos) << err.str();
  app_config cfg2;
  ASSERT_EQ(load_app_config(cfg2, {"--config", path, "--model.width=3"}), "");
  EXPECT_THROW(sparse_job_from_config(cfg2), std::invalid_argument);
  app_config cfg3;
  ASSERT_EQ(load_app_config(cfg3, {"--config", path, "--data.kind=\"csv\""}), "");
  std::ostringstream out3, err3;
  EXPECT_EQ(sparse_train(cfg3, "", out3, err3), 2);
  EXPECT_NE(err3.str().find("sparse models read"), std::string::npos) << err3.str();
  std::remove(bad.c_str());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace actrain
