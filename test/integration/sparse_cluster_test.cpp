// A sparse job on real `actrain node` processes on 127.0.0.1: 1 coordinator (port 0, reported
// on its stdout), 2 ps nodes holding the table's 2 shards and 2 workers train sparse logistic
// regression to within 0.01 of the ground truth's AUC; then the same with one worker process
// SIGKILLed while training, its rows going to the survivor. Every wait is bounded; teardown
// SIGKILLs and reaps whatever still runs.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/support/processes.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

struct sparse_cluster_test : ::testing::Test, test::process_group {
  std::string token = "sparse-" + std::to_string(::getpid());

  std::size_t spawn(const std::string& role, const std::vector<std::string>& extra = {}) {
    auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
    auto src = std::string(env ? env : ACTRAIN_SOURCE_DEFAULT);
    std::vector<std::string> args{ACTRAIN_BINARY,
                                  "node",
                                  "--role",
                                  role,
                                  "--config",
                                  src + "/config/cluster-ctr.ini",
                                  "--cluster.port=" + port,
                                  "--cluster.token=" + token,
                                  "--cluster.join-timeout=20000",
                                  "--data.rows=1000000",
                                  "--data.test-rows=40000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return process_group::spawn(args);
  }

  std::string port = "0";

  /// Starts the coordinator, then 2 ps and 2 workers on its port; returns the coordinator's
  /// index and the workers'.
  std::size_t start(std::vector<std::size_t>& workers) {
    auto c = spawn("coordinator");
    port = wait_for_line(c, "listening on port ", 30s);
    EXPECT_FALSE(port.empty()) << kids[c].text;
    spawn("ps");
    spawn("ps");
    workers.push_back(spawn("worker"));
    workers.push_back(spawn("worker"));
    return c;
  }

  /// The AUC and the ground truth's from the coordinator's result line.
  static std::pair<double, double> aucs(const std::string& result) {
    auto at = result.find("test AUC ");
    auto truth = result.find("ground truth: AUC ");
    if (at == std::string::npos || truth == std::string::npos) return {0, 1};
    return {std::stod(result.substr(at + 9)), std::stod(result.substr(truth + 18))};
  }
};

TEST_F(sparse_cluster_test, processes_train_sparse_lr_to_the_ground_truth_auc) {
  std::vector<std::size_t> workers;
  auto c = start(workers);
  auto result = wait_for_line(c, "result: ", 120s);
  ASSERT_FALSE(result.empty()) << kids[c].text;
  auto [auc, truth] = aucs(result);
  EXPECT_NEAR(auc, truth, 0.01) << result;
  EXPECT_NE(result.find("workers lost 0"), std::string::npos) << result;
  ASSERT_TRUE(wait_exit(c, 30s));
  EXPECT_EQ(exit_code(c), 0) << kids[c].text;
  ASSERT_TRUE(reap_all(30s));
  for (std::size_t k = 0; k < kids.size(); ++k) EXPECT_EQ(exit_code(k), 0) << kids[k].text;
}

TEST_F(sparse_cluster_test, a_worker_process_killed_while_training_hands_its_rows_to_the_other) {
  std::vector<std::size_t> workers;
  auto c = start(workers);
  ASSERT_FALSE(wait_for_line(c, "training: every worker has reported", 60s).empty())
      << kids[c].text;
  ::kill(kids[workers[1]].pid, SIGKILL);
  auto moved = wait_for_line(c, ") go to worker ", 60s);
  EXPECT_FALSE(moved.empty()) << kids[c].text;
  auto result = wait_for_line(c, "result: ", 120s);
  ASSERT_FALSE(result.empty()) << kids[c].text;
  auto [auc, truth] = aucs(result);
  EXPECT_NEAR(auc, truth, 0.015) << result;
  EXPECT_NE(result.find("workers lost 1"), std::string::npos) << result;
  ASSERT_TRUE(wait_exit(c, 30s));
  EXPECT_EQ(exit_code(c), 0) << kids[c].text;
  ASSERT_TRUE(reap_all(30s));
}

}  // namespace
}  // namespace actrain
