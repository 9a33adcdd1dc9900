// Stall diagnosis on a clock the test sets (CAF's test clock, the seam every time the
// coordinator reads comes through): who is named, after how long, and who is not.
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <caf/detail/test_actor_clock.hpp>

#include "actors/coordinator.hpp"
#include "observe/status_json.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

struct stall_clock_test : ::testing::Test {
  caf::detail::test_actor_clock clock;
  coordinator_state st;
  stall_clock_test() {
    st.sys_clock = &clock;
    st.cfg.job.mode = "sync";
    st.start = clock.now();
    st.workers.resize(3);
    for (auto& w : st.workers) w.last_report = clock.now();
  }
};

TEST_F(stall_clock_test, a_silent_worker_is_named_once_the_threshold_passes_and_not_before) {
  st.workers[1].step = 41;
  clock.current_time += 900ms;
  st.workers[0].last_report = st.workers[2].last_report = clock.now();  // these two report
  EXPECT_TRUE(find_stalls(st, 1.0).empty()) << "named after 0.9 s of silence, threshold 1 s";
  clock.current_time += 350ms;
  auto lines = find_stalls(st, 1.0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "worker-1 has reported no progress for 1.25 s (last step 41)");
  st.workers[1].finished = true;  // done workers are quiet, not stalled
  EXPECT_TRUE(find_stalls(st, 1.0).empty());
}

TEST_F(stall_clock_test,
       workers_blocked_at_a_held_barrier_step_are_not_blamed_the_barrier_says_why) {
  clock.current_time += 3s;  // every worker silent for 3 s
  shard_stats held;
  held.waiting_step = 7;
  held.waiting_s = 2.5;
  held.waiting_for = {2};  // the step waits for worker 2; 0 and 1 wait at the barrier
  st.front_stats = {held};
  auto lines = find_stalls(st, 1.0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "sync step 7 on shard-0 waits 2.50 s for worker-2");
  EXPECT_EQ(lines[1], "worker-2 has reported no progress for 3.00 s (last step 0)");
}

// Released from a barrier, a worker computes its next step and reports only every few steps: its
// silence counts from when it was last seen waiting, not from its last report.
TEST_F(stall_clock_test, a_worker_just_released_from_a_barrier_is_not_silent) {
  shard_stats held;
  held.waiting_step = 0;
  held.waiting_s = 0;
  held.waiting_for = {1};  // workers 0 and 2 wait at the barrier for worker 1
  st.front_stats = {held};
  clock.current_time += 2500ms;
  note_blocked_workers(st);             // a tick's fresh stats: 0 and 2 still waiting
  st.front_stats[0].waiting_step = -1;  // worker 1's slice came: the step is applied
  st.workers[1].last_report = clock.now();
  clock.current_time += 300ms;
  EXPECT_TRUE(find_stalls(st, 0.5).empty()) << find_stalls(st, 0.5).front();
  clock.current_time += 300ms;  // 0.6 s after the release, still silent: now they are named
  st.workers[1].last_report = clock.now();  // (worker 1 keeps reporting)
  auto lines = find_stalls(st, 0.5);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "worker-0 has reported no progress for 0.60 s (last step 0)");
  EXPECT_EQ(lines[1], "worker-2 has reported no progress for 0.60 s (last step 0)");
}

// Before the first evaluation the test loss and accuracy are not measured: /status shows null
// (it used to say test_loss 0.0), the console "-"; after it, the evaluation's figures.
TEST_F(stall_clock_test, test_figures_are_not_measured_before_the_first_evaluation) {
  auto data = std::make_shared<job_data>();
  data->train.rows = 100;
  st.cfg.data = data;
  observe::metrics_hub hub;
  publish_snapshot(st, hub, false);
  auto before = hub.snapshot();
  EXPECT_TRUE(std::isnan(before.test_loss));
  EXPECT_TRUE(std::isnan(before.test_accuracy));
  auto j = observe::status_json(before);
  EXPECT_TRUE(j["test_loss"].is_null()) << j.dump();
  EXPECT_TRUE(j["test_accuracy"].is_null()) << j.dump();
  progress_point p;
  p.test_loss = 0.5;
  p.test_accuracy = 0.8;
  st.result.history.push_back(p);
  publish_snapshot(st, hub, false);
  auto after = observe::status_json(hub.snapshot());
  EXPECT_DOUBLE_EQ(after["test_loss"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(after["test_accuracy"].get<double>(), 0.8);
}

}  // namespace
}  // namespace actrain
