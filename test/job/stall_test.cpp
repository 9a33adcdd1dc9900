// A sync job with one worker stopped on purpose (a straggler that sleeps
// 1.2 s per step) is diagnosed by name within 2 s: the hub's stall lines (what /status and the
// console show) name that worker, and never the two workers blocked at the barrier behind it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "observe/console.hpp"
#include "running_job.hpp"
#include "synthetic_run.hpp"  // test/unit/observe: raw-socket HTTP client with timeouts

namespace actrain::job_testing {
namespace {

/// True when `line` names worker `w` as a whole word ("worker-1", not "worker-12").
bool names(const std::string& line, int w) {
  return std::regex_search(line, std::regex("\\bworker-" + std::to_string(w) + "\\b"));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

TEST(job_stall, a_stopped_sync_worker_is_named_within_2_s) {
  constexpr int straggler = 1;
  job_spec job;
  job.name = "watch-stall";
  job.mode = "sync";
  job.model.kind = "linear";
  job.data.kind = "synthetic_linear";
  job.data.features = 10;
  job.data.rows = 3 * 16 * 2;  // 2 steps per worker: the job lasts ~2 x the delay
  job.data.test_rows = 100;
  job.workers = 3;
  job.shards = 2;
  job.batch = 16;
  job.epochs = 1;
  job.eval_every = 100;
  job.optim.kind = "sgd";
  job.optim.lr = 0.01f;
  job.stragglers = {straggler};
  job.straggler_delay_s = 1.2;  // per step: stopped on purpose, far beyond the threshold

  // The straggler stalls from its first step, i.e. from the job's start: the 2 s bound counts
  // from the moment the job's thread was started.
  running_job run(job, /*stall_after_s=*/0.3);
  const auto deadline = run.started() + std::chrono::seconds(2);
  std::vector<std::string> named;  // the first stall lines that named the straggler
  std::vector<std::string> wrong;  // any stall line naming a worker that is not stalling
  // Woken by the coordinator's updates of the hub (no poll).
  run.hub().wait_until(
      [&](const observe::run_snapshot& snap) {
        for (const auto& line : snap.stalls) {
          if (names(line, straggler)) named.push_back(line);
          if (names(line, 0) || names(line, 2)) wrong.push_back(line);
        }
        return !named.empty();
      },
      deadline);
  ASSERT_FALSE(named.empty()) << "no stall line named worker-" << straggler << " within 2 s";
  std::cout << "stall lines:\n" << joined(named);

  // The console shows the same diagnosis (what `actrain train` prints, not on a terminal).
  std::ostringstream console;
  observe::progress_reporter reporter(console, /*terminal=*/false, 5);
  reporter.report(run.hub().snapshot());
  EXPECT_TRUE(std::regex_search(console.str(), std::regex("stall: [^\n]*\\bworker-1\\b")))
      << console.str();

  // /status carries the same lines, and the straggler's state.
  const auto st = observe::testing::http_get(run.port(), "/status");
  ASSERT_EQ(st.status, 200);
  const auto j = nlohmann::json::parse(st.body);
  bool in_status = false;
  for (const auto& l : j.at("stalls")) in_status |= names(l.get<std::string>(), straggler);
  EXPECT_TRUE(in_status) << st.body;

  // For the rest of the run (another 1.2 s step), nothing blames the blocked workers, and the
  // barrier says why the step is stuck: "sync step S on shard-K waits T s for worker-1".
  const std::regex barrier_line("^sync step [0-9]+ on shard-[01] waits [0-9.]+ s for worker-" +
                                std::to_string(straggler) + "$");
  std::string barrier_said;
  bool blocked_state = false;  // a blocked worker's state names the shard it waits at
  const bool finished = run.hub().wait_until(
      [&](const observe::run_snapshot& snap) {
        for (const auto& line : snap.stalls) {
          if (names(line, 0) || names(line, 2)) wrong.push_back(line);
          if (std::regex_match(line, barrier_line)) barrier_said = line;
        }
        for (const auto& w : snap.workers)
          if (w.name != "worker-1" && w.state.rfind("waiting for shard-", 0) == 0)
            blocked_state = true;
        return snap.finished;
      },
      std::chrono::steady_clock::now() + std::chrono::seconds(30));
  EXPECT_TRUE(finished) << "the job did not finish within 30 s";
  EXPECT_FALSE(barrier_said.empty()) << "no barrier line named worker-" << straggler;
  EXPECT_TRUE(blocked_state) << "blocked workers should show 'waiting for shard-N'";
  std::cout << "barrier: " << barrier_said << "\n";
  EXPECT_TRUE(wrong.empty()) << "blocked workers named as stalling:\n" << joined(wrong);
  const auto res = run.wait();
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.samples, 3 * 16 * 2);
  EXPECT_TRUE(run.hub().snapshot().stalls.empty()) << "a finished job waits for nothing";
}

}  // namespace
}  // namespace actrain::job_testing
