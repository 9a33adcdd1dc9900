// The client API over real shards: what a pull returns, what a push changes (exactly), that
// push_pull answers with the weights after the push, and that errors name their shard.
#include <chrono>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <actrain/client.hpp>
#include <actrain/engine.hpp>
#include <actrain/system.hpp>

namespace actrain {
namespace {

struct client_test : ::testing::Test {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::vector<shard_actor> shards;
  // 5 parameters over 2 shards: [0, 3) and [3, 5).
  std::vector<float> init{1, 2, 3, 4, 5};

  void SetUp() override {
    prepare_config(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    for (int i = 0; i < 2; ++i) {
      shard_config sc;
      sc.index = i;
      auto r = param_range(5, 2, i);
      sc.init.assign(init.begin() + r.begin, init.begin() + r.end);
      sc.optim.kind = "sgd";
      sc.optim.lr = 0.5f;
      shards.push_back(spawn_shard(*sys, sc));
    }
  }
  void TearDown() override {
    for (auto& s : shards) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
};

TEST_F(client_test, pull_push_and_push_pull_see_exact_sgd_updates) {
  client kv{*sys, shards, 5};
  auto p0 = kv.pull().get();
  EXPECT_EQ(p0.values, init);
  EXPECT_EQ(p0.versions, (std::vector<std::int64_t>{0, 0}));

  auto acks = kv.push({2, 0, -2, 4, 1}).get().acks;
  ASSERT_EQ(acks.size(), 2u);
  for (auto& a : acks) {
    EXPECT_EQ(a.version, 1);
    EXPECT_EQ(a.staleness, 0);
    EXPECT_TRUE(a.applied);
  }
  // w -= 0.5 g, element by element, in shard order.
  EXPECT_EQ(kv.pull().get().values, (std::vector<float>{0, 2, 4, 2, 4.5f}));

  auto after = kv.push_pull({0, 2, 0, 0, 1}).get();
  EXPECT_EQ(after.values, (std::vector<float>{0, 1, 4, 2, 4}));
  EXPECT_EQ(after.versions, (std::vector<std::int64_t>{2, 2}));
}

TEST_F(client_test, a_second_client_pushing_in_between_makes_the_first_one_stale) {
  client a{*sys, shards, 5, 0}, b{*sys, shards, 5, 1};
  a.pull().wait();
  b.push(std::vector<float>(5, 1.f)).wait();
  auto acks = a.push(std::vector<float>(5, 1.f)).get().acks;
  for (auto& ack : acks) EXPECT_EQ(ack.staleness, 1);  // based on version 0, shard at 1
}

TEST_F(client_test, bad_gradients_are_refused_and_name_what_is_wrong) {
  client kv{*sys, shards, 5};
  EXPECT_THROW(kv.push({1, 2, 3}), std::invalid_argument);  // the client checks the length
  auto nan = kv.push({0, 0, 0, 0, std::nanf("")});
  try {
    nan.get();
    FAIL() << "a non-finite gradient was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("shard 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kv.pull().get().values, init);  // nothing applied on the shard that refused
}

TEST_F(client_test, a_shard_that_is_gone_fails_the_call_within_its_timeout) {
  client kv{*sys, shards, 5, 0, std::chrono::milliseconds(2000)};
  caf::anon_send_exit(shards[0], caf::exit_reason::kill);
  auto p = kv.pull();
  ASSERT_TRUE(p.wait_for(std::chrono::milliseconds(5000)));
  EXPECT_THROW(p.get(), std::runtime_error);
}

}  // namespace
}  // namespace actrain
