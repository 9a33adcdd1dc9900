#include "observe/status_json.hpp"

#include <gtest/gtest.h>

#include "synthetic_run.hpp"

namespace actrain::observe {
namespace {

TEST(status_json, carries_job_workers_shards_stalls_and_curve) {
  const auto s = testing::synthetic_snapshot(8);
  // Round trip through text: what a client actually receives.
  const auto j = nlohmann::json::parse(status_json(s).dump());
  EXPECT_EQ(j.at("job"), "fmnist-mlp");
  EXPECT_EQ(j.at("mode"), "sync");
  EXPECT_EQ(j.at("epoch"), 1);
  EXPECT_EQ(j.at("epochs"), 5);
  EXPECT_EQ(j.at("step"), 250);
  EXPECT_EQ(j.at("samples_per_s"), 1280.0);
  EXPECT_EQ(j.at("test_accuracy"), 0.78);
  EXPECT_EQ(j.at("finished"), false);
  ASSERT_EQ(j.at("workers").size(), 3u);
  EXPECT_EQ(j["workers"][1]["name"], "worker-1");
  EXPECT_EQ(j["workers"][1]["step"], 88);
  EXPECT_EQ(j["workers"][1]["samples_per_s"], 450.0);
  EXPECT_EQ(j["workers"][1]["busy"], 0.4);
  EXPECT_EQ(j["workers"][1]["state"], "waiting for shard-1");
  EXPECT_EQ(j["workers"][2]["node"], "node \"b\"");
  ASSERT_EQ(j.at("shards").size(), 2u);
  EXPECT_EQ(j["shards"][0]["name"], "shard-0");
  EXPECT_EQ(j["shards"][0]["version"], 120);
  EXPECT_EQ(j["shards"][0]["mailbox_depth"], 4);
  EXPECT_EQ(j["nodes"][0]["bytes_received"], 2000);
  EXPECT_EQ(j["staleness_histogram"], nlohmann::json::parse("[[0,10],[1,5],[3,2],[200,1]]"));
  ASSERT_EQ(j.at("stalls").size(), 1u);
  EXPECT_EQ(j["stalls"][0], "sync step 12 on shard-0 waits 2.3 s for worker-2");
  const auto& c = j.at("curve");
  for (const char* k :
       {"seconds", "samples", "train_loss", "test_loss", "test_accuracy", "samples_per_s"})
    EXPECT_EQ(c.at(k).size(), 8u) << k;
  EXPECT_EQ(c["seconds"][3], 1.5);
  EXPECT_EQ(c["samples"][3], 1920);
  // Points without an evaluation carry null, not a made-up number.
  EXPECT_TRUE(c["test_accuracy"][1].is_null());
  EXPECT_TRUE(c["test_accuracy"][4].is_number());
}

TEST(status_json, non_finite_numbers_become_null) {
  run_snapshot s;
  s.test_loss = NAN;
  s.eta_s = INFINITY;
  const auto text = status_json(s).dump();
  const auto j = nlohmann::json::parse(text);
  EXPECT_TRUE(j.at("test_loss").is_null());
  EXPECT_TRUE(j.at("eta_s").is_null());
  EXPECT_TRUE(j.at("workers").is_array());
  EXPECT_TRUE(j.at("stalls").is_array());
  EXPECT_EQ(j.at("curve").at("seconds").size(), 0u);
}

TEST(status_json, a_classifier_carries_its_per_class_report) {
  run_snapshot s;
  EXPECT_TRUE(nlohmann::json::parse(status_json(s).dump()).at("classes").is_null());
  s.classes = testing::two_class_report();
  const auto j = nlohmann::json::parse(status_json(s).dump()).at("classes");
  EXPECT_EQ(j.at("precision"), (std::vector<double>{0.5, 0.75}));
  EXPECT_EQ(j.at("recall")[1], 0.25);
  EXPECT_TRUE(j.at("average_precision")[1].is_null());  // class 1 has no rows
  EXPECT_EQ(j.at("support")[0], 3);
  EXPECT_EQ(j.at("macro_recall"), 0.625);
  EXPECT_EQ(j.at("auc"), 0.8);
}

}  // namespace
}  // namespace actrain::observe
