#include "observe/console.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "observe/metrics_file.hpp"
#include "synthetic_run.hpp"
#include "test/support/temp_dir.hpp"

namespace actrain::observe {
namespace {

namespace fs = std::filesystem;

run_snapshot at(double seconds, std::int64_t epoch) {
  run_snapshot s;
  s.job = "j";
  s.epochs = 3;
  s.epoch = epoch;
  s.elapsed_s = seconds;
  s.samples_per_epoch = 1000;
  s.samples = epoch * 1000 + static_cast<std::int64_t>(seconds * 10) % 1000;
  s.step = static_cast<std::int64_t>(seconds);
  s.samples_per_s = 12345.4;
  s.train_loss = 0.5;
  s.eta_s = 125;
  return s;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(console, plain_lines_at_most_every_interval_and_on_epoch_change) {
  std::ostringstream out;
  progress_reporter r(out, false, 10);
  for (int t = 0; t <= 25; ++t) r.report(at(t, t < 22 ? 0 : 1));
  // t=0 (first), t=10, t=20 (interval), t=22 (epoch change).
  const auto text = out.str();
  EXPECT_EQ(count(text, "\n"), 4u) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("[10s] epoch 1/3"), std::string::npos) << text;
  EXPECT_NE(text.find("[22s] epoch 2/3"), std::string::npos) << text;
  EXPECT_NE(text.find("12,345 samples/s"), std::string::npos) << text;
  EXPECT_NE(text.find("ETA 2:05"), std::string::npos) << text;
  r.finish(at(26, 1));
  EXPECT_EQ(count(out.str(), "\n"), 5u);
  r.report(at(100, 2));  // ignored after finish
  EXPECT_EQ(count(out.str(), "\n"), 5u);
}

TEST(console, terminal_bar_redraws_in_place_and_breaks_line_per_epoch) {
  std::ostringstream out;
  progress_reporter r(out, true, 10);
  r.report(at(1, 0));
  r.report(at(50, 0));  // 500 of 1000 samples: half the bar
  r.report(at(2, 1));
  r.finish(at(3, 1));
  const auto text = out.str();
  EXPECT_EQ(count(text, "\r"), 4u) << text;
  EXPECT_EQ(count(text, "\n"), 2u) << text;  // end of epoch 1, end of run
  EXPECT_NE(text.find("epoch 1/3 [############------------] 50%"), std::string::npos) << text;
  EXPECT_NE(text.find("epoch 2/3 ["), std::string::npos);
}

TEST(console, stalls_print_at_once_then_at_most_every_interval) {
  std::ostringstream out;
  progress_reporter r(out, false, 10);
  auto s = at(0, 0);
  r.report(s);
  s.elapsed_s = 1;
  s.stalls = {"sync step 3 on shard-0 waits 1.0 s for worker-2"};
  r.report(s);
  s.elapsed_s = 2;
  s.stalls = {"sync step 3 on shard-0 waits 2.0 s for worker-2"};
  r.report(s);
  const auto text = out.str();
  EXPECT_EQ(count(text, "stall: "), 1u) << text;
  EXPECT_NE(text.find("stall: sync step 3 on shard-0 waits 1.0 s for worker-2\n"),
            std::string::npos);
}

TEST(console, durations_and_tables) {
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(187), "3:07");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "-");
  EXPECT_EQ(summary_table({{"job", "a"}, {"samples/s", "12,345"}}),
            "job             a\n"
            "samples/s  12,345\n");
  EXPECT_EQ(summary_table({"worker", "steps"}, {{"worker-0", "7"}, {"w1", "1234"}}),
            "worker    steps\n"
            "---------------\n"
            "worker-0      7\n"
            "w1         1234\n");
  const auto summary = run_summary(testing::synthetic_snapshot());
  EXPECT_NE(summary.find("worker-2"), std::string::npos);
  EXPECT_NE(summary.find("  busy"), std::string::npos);
  EXPECT_NE(summary.find("   95%"), std::string::npos);  // worker-0's busy fraction, 0.95
  EXPECT_NE(summary.find("shard-1"), std::string::npos);
  EXPECT_NE(summary.find("fmnist-mlp"), std::string::npos);
}

using metrics_files = actrain::test::temp_dir_test;

TEST_F(metrics_files, csv_rows_are_on_disk_after_each_append_and_reopen_appends) {
  const auto path = (dir_ / "m.csv").string();
  {
    metrics_file_writer w(path);
    w.append({1.5, 100, 0.5, NAN, 0.25, 1000});
    // Flushed per row: visible before the writer goes away.
    EXPECT_EQ(read(path),
              "seconds,samples,train_loss,test_loss,test_accuracy,samples_per_s,macro_precision,"
              "macro_recall,macro_average_precision,auc\n"
              "1.5,100,0.5,,0.25,1000,,,,\n");
  }
  metrics_file_writer again(path);
  again.append({2, 200, 0.1, 0.2, 0.3, 12.75});
  EXPECT_EQ(read(path),
            "seconds,samples,train_loss,test_loss,test_accuracy,samples_per_s,macro_precision,"
            "macro_recall,macro_average_precision,auc\n"
            "1.5,100,0.5,,0.25,1000,,,,\n"
            "2,200,0.1,0.2,0.3,12.75,,,,\n");
}

TEST_F(metrics_files, jsonl_rows_are_objects_with_null_for_missing) {
  const auto path = (dir_ / "m.jsonl").string();
  metrics_file_writer w(path);
  w.append({1.5, 100, 0.5, NAN, 0.25, 1000});
  w.append({2, 200, 0.1, 0.2, 0.3, 12.75});
  EXPECT_EQ(read(path),
            "{\"seconds\":1.5,\"samples\":100,\"train_loss\":0.5,\"test_loss\":null,"
            "\"test_accuracy\":0.25,\"samples_per_s\":1000.0}\n"
            "{\"seconds\":2.0,\"samples\":200,\"train_loss\":0.1,\"test_loss\":0.2,"
            "\"test_accuracy\":0.3,\"samples_per_s\":12.75}\n");
}

TEST_F(metrics_files, a_classifiers_points_carry_macro_figures_and_the_per_class_report) {
  class_report c;
  c.precision = {0.5, 0.75};
  c.recall = {1.0, 0.25};
  c.average_precision = {0.9, 0.5};
  c.support = {3, 1};
  c.macro_precision = 0.625;
  c.macro_recall = 0.625;
  c.macro_average_precision = 0.7;
  c.auc = 0.8;
  const auto csv = (dir_ / "m.csv").string();
  metrics_file_writer(csv).append({1, 10, 0.5, 0.4, 0.9, 100, c});
  EXPECT_NE(read(csv).find("\n1,10,0.5,0.4,0.9,100,0.625,0.625,0.7,0.8\n"), std::string::npos);
  const auto jsonl = (dir_ / "m.jsonl").string();
  metrics_file_writer(jsonl).append({1, 10, 0.5, 0.4, 0.9, 100, c});
  EXPECT_NE(read(jsonl).find("\"classes\":{\"precision\":[0.5,0.75],\"recall\":[1.0,0.25],"
                             "\"average_precision\":[0.9,0.5],\"support\":[3,1],"
                             "\"macro_precision\":0.625,\"macro_recall\":0.625,"
                             "\"macro_average_precision\":0.7,\"auc\":0.8}"),
            std::string::npos)
      << read(jsonl);
}

TEST_F(metrics_files, bad_extension_and_bad_folder_name_the_path) {
  const auto txt = (dir_ / "m.txt").string();
  try {
    metrics_file_writer w(txt);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("m.txt"), std::string::npos);
  }
  const auto missing = (dir_ / "nope" / "m.csv").string();
  try {
    metrics_file_writer w(missing);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
}

TEST(metrics_hub, concurrent_updates_and_snapshots_are_consistent) {
  metrics_hub hub;
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i)
      hub.update([i](run_snapshot& s) {
        s.step = i;
        s.samples = 2 * static_cast<std::int64_t>(i);
      });
  });
  for (int i = 0; i < 2000; ++i) {
    const auto s = hub.snapshot();
    ASSERT_EQ(s.samples, 2 * s.step);  // never a half-applied update
  }
  writer.join();
  EXPECT_EQ(hub.snapshot().step, 1999);
}

TEST(metrics_hub, curve_stays_bounded_and_keeps_the_newest_points) {
  metrics_hub hub;
  const int n = 3 * static_cast<int>(metrics_hub::max_curve_points);
  for (int i = 0; i < n; ++i) hub.add_curve_point(testing::synthetic_point(i));
  const auto c = hub.snapshot().curve;
  EXPECT_LE(c.size(), metrics_hub::max_curve_points);
  EXPECT_EQ(c.back().samples, testing::synthetic_point(n - 1).samples);
  EXPECT_EQ(c.front().samples, 0);
  for (std::size_t i = 1; i < c.size(); ++i) ASSERT_LT(c[i - 1].seconds, c[i].seconds);
}

// wait_until wakes on the update that makes its predicate true, and gives up at its deadline.
TEST(metrics_hub, wait_until_wakes_on_the_update_it_waits_for_and_gives_up_at_the_deadline) {
  metrics_hub hub;
  std::thread writer([&] {
    for (int i = 1; i <= 200; ++i) hub.update([i](run_snapshot& s) { s.step = i; });
  });
  const auto far = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  EXPECT_TRUE(hub.wait_until([](const run_snapshot& s) { return s.step == 200; }, far));
  writer.join();
  EXPECT_EQ(hub.snapshot().step, 200);
  const auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  EXPECT_FALSE(hub.wait_until([](const run_snapshot& s) { return s.step == 201; }, soon));
  EXPECT_GE(std::chrono::steady_clock::now(), soon);
}

}  // namespace
}  // namespace actrain::observe
