// Headless Chromium opens the dashboard of a REAL running job, takes a
// screenshot (kept as an artifact: $ACTRAIN_ARTIFACTS, else <build>/artifacts) and the DOM shows
// drawn loss, accuracy and throughput curves. Skips when chromium is not installed.
#include <gtest/gtest.h>

#include "chromium.hpp"
#include "observe/svg_plot.hpp"
#include "running_job.hpp"

namespace actrain::job_testing {

using namespace actrain::browser_testing;
namespace {

/// Softmax on 8000 Fashion-MNIST rows, evaluated every epoch. Every worker sleeps 10 ms per step
/// (the straggler option applied to both): the job lasts ~15 s however fast the CPU is, while
/// leaving the two cores to chromium.
job_spec paced_job() {
  auto job = small_fashion_job(8000, 12);
  job.name = "watch-dashboard";
  job.stragglers = {0, 1};
  job.straggler_delay_s = 0.01;
  return job;
}

/// Waits (bounded, 20 s) until the hub has an evaluated point and a few throughput points.
bool wait_for_curves(running_job& run) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until && !run.done()) {
    const auto s = run.hub().snapshot();
    int evaluated = 0;
    for (const auto& p : s.curve) evaluated += std::isnan(p.test_accuracy) ? 0 : 1;
    if (evaluated >= 1 && s.curve.size() >= 4) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll interval
  }
  return false;
}

TEST(job_dashboard, chromium_draws_the_curves_of_a_running_job) {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian package 'chromium', see scripts/setup.sh)";
  const fs::path dir = artifact_dir(ACTRAIN_DEFAULT_ARTIFACTS);
  std::string profile = ::testing::TempDir() + "actrain_job_chromium_XXXXXX";
  ASSERT_NE(::mkdtemp(profile.data()), nullptr);

  running_job run(paced_job());
  ASSERT_TRUE(wait_for_curves(run)) << "no evaluated curve point within 20 s";
  const std::string url = "http://127.0.0.1:" + std::to_string(run.port()) + "/";
  const fs::path png = dir / "job-dashboard.png";
  fs::remove(png);
  auto shot = headless_args(chromium, profile);
  shot.push_back("--screenshot=" + png.string());
  shot.push_back(url);
  const int shot_rc =
      run_bounded(shot, dir / "job-chromium-screenshot.out", dir / "job-chromium.log");
  auto dump = headless_args(chromium, profile);
  dump.push_back("--dump-dom");
  dump.push_back(url);
  const int dump_rc = run_bounded(dump, dir / "job-dashboard-dom.html", dir / "job-chromium.log");
  const bool during_the_job = !run.done();
  fs::remove_all(profile);
  EXPECT_EQ(shot_rc, 0) << "see " << (dir / "job-chromium.log");
  EXPECT_EQ(dump_rc, 0) << "see " << (dir / "job-chromium.log");
  EXPECT_TRUE(during_the_job) << "the job ended before chromium was done; lengthen paced_job()";

  // The DOM: every curve drawn with as many point pairs as the data it was given.
  const std::string dom = read_file(dir / "job-dashboard-dom.html");
  ASSERT_NE(dom.find("id=\"loss-plot\""), std::string::npos) << "DOM not dumped; see log";
  for (const char* id : {"loss-plot-train", "accuracy-plot-test", "throughput-plot-rate"}) {
    const auto d = polyline(dom, id);
    EXPECT_GE(d.data_points, id == std::string("accuracy-plot-test") ? 1 : 2) << id;
    EXPECT_EQ(d.pairs, d.data_points) << id;
  }
  // The tables came from this job's /status.
  EXPECT_NE(dom.find("watch-dashboard"), std::string::npos);
  EXPECT_NE(dom.find("<td>worker-1</td>"), std::string::npos);
  EXPECT_NE(dom.find("<td>shard-1</td>"), std::string::npos);

  // A real PNG of the window's size.
  const auto [w, h] = png_size(read_file(png));
  EXPECT_EQ(w, 1200u);
  EXPECT_EQ(h, 900u);
  EXPECT_GT(fs::file_size(png), 10000u);
  std::cout << "screenshot: " << png << "\n";

  const auto res = run.wait();
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_GT(res.test.accuracy, 0.7);
  // The finished run's curves as SVG files next to the screenshot.
  for (const auto& p :
       observe::write_curve_plots((dir / "job").string(), run.hub().snapshot().curve))
    EXPECT_GT(fs::file_size(p), 1000u) << p;
}

}  // namespace
}  // namespace actrain::job_testing
