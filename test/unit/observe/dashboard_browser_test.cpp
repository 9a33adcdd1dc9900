// Opens the dashboard in headless Chromium (Debian's `chromium`) while a background thread feeds
// the hub like a running job, then checks the DOM has drawn curves and keeps a screenshot as an
// artifact ($ACTRAIN_ARTIFACTS, else <build>/artifacts). Skips when chromium is not installed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "observe/http_server.hpp"
#include "observe/svg_plot.hpp"
#include "synthetic_run.hpp"

namespace actrain::observe {
namespace {

namespace fs = std::filesystem;

std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    for (const char* name : {"chromium", "chromium-browser"}) {
      const auto p = fs::path(dir) / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
  return "";
}

fs::path artifact_dir() {
  const char* env = std::getenv("ACTRAIN_ARTIFACTS");
  fs::path dir = env && *env ? fs::path(env) : fs::path(ACTRAIN_DEFAULT_ARTIFACTS);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Live (non-zombie) processes whose parent is this process.
std::vector<pid_t> live_children() {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read(e.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid() && state != 'Z') out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

/// Runs `timeout -k 5 60 <args>` with stdout to `out_path` and waits for it. Chromium forks
/// helpers, and its crash handler detaches into its own session; this process is made a child
/// subreaper so every such descendant is re-parented here instead of to init, and is killed and
/// reaped before returning: nothing outlives the test. Returns the exit status (or -1).
int run_bounded(const std::vector<std::string>& args, const fs::path& out_path,
                const fs::path& err_path) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<std::string> full{"timeout", "-k", "5", "60"};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::setpgid(0, 0);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) ::dup2(out, STDOUT_FILENO);
    if (err >= 0) ::dup2(err, STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  // Everything left is a descendant of ours (re-parented here): kill and reap until none is
  // left; a killed helper's own children arrive here in turn, hence the (bounded) loop.
  for (int round = 0; round < 100; ++round) {
    const auto left = live_children();
    for (pid_t c : left) ::kill(c, SIGKILL);
    for (pid_t c : left) ::waitpid(c, nullptr, 0);  // killed: returns promptly
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {   // zombies re-parented here
    }
    if (left.empty()) break;
  }
  EXPECT_TRUE(live_children().empty()) << "chromium processes left behind";
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The attributes of <polyline id="ID" ...> in a serialized DOM.
struct drawn_line {
  int data_points = -1;
  int pairs = -1;
};
drawn_line polyline(const std::string& dom, const std::string& id) {
  drawn_line d;
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<polyline[^>]*id=\"" + id + "\"[^>]*>"))) return d;
  const std::string tag = m.str();
  std::smatch a;
  if (std::regex_search(tag, a, std::regex("data-points=\"([0-9]+)\"")))
    d.data_points = std::stoi(a[1]);
  if (std::regex_search(tag, a, std::regex(" points=\"([^\"]*)\""))) {
    const std::string pts = a[1];
    std::istringstream in(pts);
    std::string pair;
    d.pairs = 0;
    while (in >> pair)
      if (std::regex_match(pair, std::regex("-?[0-9.]+,-?[0-9.]+"))) ++d.pairs;
  }
  return d;
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
