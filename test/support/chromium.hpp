#pragma once
// Headless Chromium for tests: find it, run it bounded, reap every process it forks, read the
// polylines of a dumped DOM. Shared by the dashboard tests (test/unit/observe, test/job).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace actrain::browser_testing {

namespace fs = std::filesystem;

/// The chromium binary on PATH, or "" when it is not installed.
inline std::string find_chromium() {
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

/// Where artifacts go: $ACTRAIN_ARTIFACTS, else `fallback` (created).
inline fs::path artifact_dir(const fs::path& fallback) {
  const char* env = std::getenv("ACTRAIN_ARTIFACTS");
  fs::path dir = env && *env ? fs::path(env) : fallback;
  fs::create_directories(dir);
  return dir;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Live (non-zombie) processes whose parent is this process.
inline std::vector<pid_t> live_children() {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(e.path() / "stat");
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

/// Runs `timeout -k 5 60 <args>` with stdout to `out_path` (stderr appended to `err_path`) and
/// waits for it. This process becomes a child subreaper, so chromium's helpers (its crash
/// handler detaches into its own session) are re-parented here; they are killed and reaped
/// before returning: nothing outlives the call. Returns the exit status (or -1).
inline int run_bounded(const std::vector<std::string>& args, const fs::path& out_path,
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
  for (int round = 0; round < 100; ++round) {  // bounded: a killed helper's children come next
    const auto left = live_children();
    for (pid_t c : left) ::kill(c, SIGKILL);
    for (pid_t c : left) ::waitpid(c, nullptr, 0);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (left.empty()) break;
  }
  EXPECT_TRUE(live_children().empty()) << "chromium processes left behind";
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The flags every headless run uses; `profile` is a fresh user-data directory.
inline std::vector<std::string> headless_args(const std::string& chromium,
                                              const std::string& profile) {
  return {chromium,
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-dev-shm-usage",
          "--no-first-run",
          "--disable-extensions",
          "--hide-scrollbars",
          "--user-data-dir=" + profile,
          "--window-size=1200,900",
          "--virtual-time-budget=3000"};
}

/// <polyline id="ID" data-points="N" points="x,y ..."> of a dumped DOM: N and the pairs drawn.
struct drawn_line {
  int data_points = -1;
  int pairs = -1;
};
inline drawn_line polyline(const std::string& dom, const std::string& id) {
  drawn_line d;
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<polyline[^>]*id=\"" + id + "\"[^>]*>"))) return d;
  const std::string tag = m.str();
  std::smatch a;
  if (std::regex_search(tag, a, std::regex("data-points=\"([0-9]+)\"")))
    d.data_points = std::stoi(a[1]);
  if (std::regex_search(tag, a, std::regex(" points=\"([^\"]*)\""))) {
    std::istringstream in(a[1].str());
    std::string pair;
    d.pairs = 0;
    while (in >> pair)
      if (std::regex_match(pair, std::regex("-?[0-9.]+,-?[0-9.]+"))) ++d.pairs;
  }
  return d;
}

/// Width and height from a PNG's IHDR; {0, 0} when `bytes` is not a PNG.
inline std::pair<unsigned, unsigned> png_size(const std::string& bytes) {
  if (bytes.size() < 24 || bytes.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0 ||
      bytes.compare(12, 4, "IHDR") != 0)
    return {0, 0};
  auto be32 = [&](std::size_t at) {
    unsigned v = 0;
    for (std::size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(bytes[at + k]);
    return v;
  };
  return {be32(16), be32(20)};
}

}  // namespace actrain::browser_testing
