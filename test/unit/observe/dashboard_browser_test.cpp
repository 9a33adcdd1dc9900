// Opens the dashboard in headless Chromium (Debian's `chromium`) while a background thread feeds
// the hub like a running job, then checks the DOM has drawn curves and keeps a screenshot as an
// artifact ($ACTRAIN_ARTIFACTS, else <build>/artifacts). Skips when chromium is not installed.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "chromium.hpp"
#include "observe/http_server.hpp"
#include "observe/svg_plot.hpp"
#include "synthetic_run.hpp"

namespace actrain::observe {
namespace {

namespace fs = std::filesystem;

using browser_testing::find_chromium;
using browser_testing::polyline;
using browser_testing::run_bounded;
fs::path artifact_dir() {
  return browser_testing::artifact_dir(ACTRAIN_DEFAULT_ARTIFACTS);
}
std::string read(const fs::path& p) {
  return browser_testing::read_file(p);
}

/// Feeds a hub like a running job: a point every 20 ms until stopped (bounded).
class synthetic_job {
 public:
  explicit synthetic_job(metrics_hub& hub) : hub_(hub) {
    hub_.update([](run_snapshot& s) { s = testing::synthetic_snapshot(30); });
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      for (int i = 30; i < 30 + 5000 && !stop_; ++i) {
        hub_.add_curve_point(testing::synthetic_point(i));
        hub_.update([i](run_snapshot& s) {
          s.step = 10L * i;
          s.samples = 640L * i;
          s.elapsed_s = 0.5 * i;
          s.train_loss = s.curve.back().train_loss;
        });
        cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stop_; });
      }
    });
  }
  ~synthetic_job() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  metrics_hub& hub_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

TEST(dashboard_browser, chromium_renders_the_live_curves) {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian package 'chromium'); cannot open the page";
  const fs::path dir = artifact_dir();
  std::string profile = ::testing::TempDir() + "actrain_chromium_XXXXXX";
  ASSERT_NE(::mkdtemp(profile.data()), nullptr);

  metrics_hub hub;
  synthetic_job job(hub);
  http_server server(hub);
  server.start();
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/";
  const std::vector<std::string> common{chromium,
                                        "--headless",
                                        "--no-sandbox",
                                        "--disable-gpu",
                                        "--disable-dev-shm-usage",
                                        "--no-first-run",
                                        "--disable-extensions",
                                        "--user-data-dir=" + profile,
                                        "--window-size=1200,900",
                                        "--virtual-time-budget=3000"};
  const fs::path png = dir / "dashboard.png";
  fs::remove(png);
  auto shot = common;
  shot.push_back("--screenshot=" + png.string());
  shot.push_back(url);
  const int shot_rc = run_bounded(shot, dir / "chromium-screenshot.out", dir / "chromium.log");
  auto dump = common;
  dump.push_back("--dump-dom");
  dump.push_back(url);
  const int dump_rc = run_bounded(dump, dir / "dashboard-dom.html", dir / "chromium.log");
  fs::remove_all(profile);
  EXPECT_EQ(shot_rc, 0) << "see " << (dir / "chromium.log");
  EXPECT_EQ(dump_rc, 0) << "see " << (dir / "chromium.log");

  const std::string dom = read(dir / "dashboard-dom.html");
  ASSERT_NE(dom.find("id=\"loss-plot\""), std::string::npos) << "DOM not dumped; see chromium.log";
  for (const char* id :
       {"loss-plot-train", "loss-plot-test", "accuracy-plot-test", "throughput-plot-rate"}) {
    const auto d = polyline(dom, id);
    EXPECT_GT(d.data_points, 1) << id;
    EXPECT_EQ(d.pairs, d.data_points) << id;
  }
  // Tables and the stall line came from /status.
  EXPECT_NE(dom.find("<td>worker-2</td>"), std::string::npos);
  EXPECT_NE(dom.find("<td>shard-1</td>"), std::string::npos);
  EXPECT_NE(dom.find("waits 2.3 s for worker-2"), std::string::npos);

  // A real PNG of the requested size, not an empty file.
  const std::string bytes = read(png);
  ASSERT_GT(bytes.size(), 10000u) << png;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned>(static_cast<unsigned char>(bytes[at])) << 24) |
           (static_cast<unsigned>(static_cast<unsigned char>(bytes[at + 1])) << 16) |
           (static_cast<unsigned>(static_cast<unsigned char>(bytes[at + 2])) << 8) |
           static_cast<unsigned>(static_cast<unsigned char>(bytes[at + 3]));
  };
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  EXPECT_GE(be32(16), 800u);  // width
  EXPECT_GE(be32(20), 600u);  // height
  std::cout << "screenshot: " << png << "\n";
  // The same run's curves as SVG files next to the screenshot (what docs/ shows).
  const auto plots = write_curve_plots((dir / "synthetic").string(), hub.snapshot().curve);
  for (const auto& p : plots) EXPECT_GT(fs::file_size(p), 1000u) << p;
}

}  // namespace
}  // namespace actrain::observe
