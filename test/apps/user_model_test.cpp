// A model kind and an optimizer kind registered by a binary of our own (user_model_actrain),
// chosen by name in an INI file, run through `actrain train` and `actrain node` unchanged.
#include <chrono>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "test/support/processes.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

std::string ini() {
  auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
  return std::string(env ? env : ACTRAIN_SOURCE_DEFAULT) + "/test/apps/user_model.ini";
}

/// The noise is N(0, 0.01^2): a model that learned y = X w + b ends near 1e-4 test MSE. The
/// start (all zeros) is at the variance of y, about the number of features.
constexpr double trained_mse = 2e-3;

TEST(user_model, train_runs_a_registered_model_and_optimizer_named_in_the_ini_file) {
  test::process_group p;
  auto k = p.spawn({USER_MODEL_BINARY, "train", "--config", ini()});
  auto line = p.wait_for_line(k, "result: test loss ", 60s);
  ASSERT_FALSE(line.empty()) << p.kids[k].text;
  ASSERT_TRUE(p.reap_all(10s));
  EXPECT_TRUE(WIFEXITED(p.kids[k].status) && WEXITSTATUS(p.kids[k].status) == 0) << p.kids[k].text;
  EXPECT_NE(p.kids[k].text.find("scaled_linear 10-1"), std::string::npos) << p.kids[k].text;
  EXPECT_LT(std::stod(line), trained_mse) << p.kids[k].text;
}

TEST(user_model, the_same_binary_without_the_registration_refuses_the_kind_by_name) {
  test::process_group p;
  auto k = p.spawn({ACTRAIN_BINARY, "train", "--config", ini()});
  ASSERT_TRUE(p.reap_all(30s));
  EXPECT_TRUE(WIFEXITED(p.kids[k].status) && WEXITSTATUS(p.kids[k].status) != 0);
  EXPECT_NE(p.kids[k].text.find("scaled_linear"), std::string::npos) << p.kids[k].text;
}

TEST(user_model, node_processes_run_the_registered_model_across_processes) {
  test::process_group p;
  std::vector<std::string> common{"--config", ini(),
                                  "--cluster.token=um-" + std::to_string(::getpid())};
  auto node = [&](const std::string& role, const std::string& port) {
    std::vector<std::string> a{USER_MODEL_BINARY, "node", "--role", role};
    a.insert(a.end(), common.begin(), common.end());
    a.push_back("--cluster.port=" + port);
    return p.spawn(a);
  };
  auto coord = node("coordinator", "0");
  auto port = p.wait_for_line(coord, "listening on port ", 20s);
  ASSERT_FALSE(port.empty()) << p.kids[coord].text;
  node("ps", port);
  node("worker", port);
  node("worker", port);
  auto line = p.wait_for_line(coord, "result: train loss ", 60s);
  ASSERT_FALSE(line.empty()) << p.kids[coord].text;
  ASSERT_TRUE(p.reap_all(15s));
  for (auto& k : p.kids) EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.text;
  EXPECT_LT(std::stod(line), trained_mse) << p.kids[coord].text;
}

}  // namespace
}  // namespace actrain
