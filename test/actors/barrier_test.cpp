// Deterministic tests of the barrier on CAF's test coordinator: every interleaving of pulls and
// pushes is chosen by the test, and the shard behind the barrier is a real shard (SGD, lr 1, so
// its values move by exactly minus the applied gradient).
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "actor_fixture.hpp"
#include "actors/barrier.hpp"
#include "actors/shard.hpp"

namespace actrain {
namespace {

struct barrier_test : testing::front_probe {
  /// A shard holding {1, 2, 3} (plain SGD, lr 1) and a barrier in front of it.
  shard_actor make(std::string mode, int workers, int backup = 0, int bound = 0,
                   std::string late = "drop", std::shared_ptr<barrier_log> log = nullptr,
                   std::size_t slice = 0) {
    make_shard();
    barrier_config bc;
    bc.slice = slice;
    bc.shard = sh;
    bc.mode = std::move(mode);
    bc.workers = workers;
    bc.backup = backup;
    bc.ssp_bound = bound;
    bc.late_policy = std::move(late);
    bc.log = std::move(log);
    auto b = ds.sys->spawn(barrier, std::move(bc));
    spawned.push_back(caf::actor_cast<caf::actor>(b));
    ds.run();
    return b;
  }
};

TEST_F(barrier_test, sync_applies_the_row_weighted_mean_once_after_all_n_slices) {
  auto b = make("sync", 3);
  for (int w = 0; w < 3; ++w) pull(b, w, 0);
  settle();
  ASSERT_EQ(answers.size(), 3u);
  for (auto& a : answers) EXPECT_EQ(a.version, 0);
  answers.clear();
  push(b, 0, 0, 0, {4.f, 0.f, 0.f}, 2);
  pull(b, 0, 1);  // the worker's prefetch of step 1: must wait for step 0
  push(b, 1, 0, 0, {0.f, 4.f, 0.f}, 1);
  settle();
  EXPECT_EQ(acks.size(), 2u);
  EXPECT_TRUE(answers.empty()) << "step 1 answered before step 0 was applied";
  EXPECT_EQ(stats(sh).pushes, 0) << "applied before K slices arrived";
  push(b, 2, 0, 0, {0.f, 0.f, 4.f}, 1);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].version, 1);
  // Mean weighted by rows: (2 * {4,0,0} + {0,4,0} + {0,0,4}) / 4 = {2, 1, 1}.
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-1.f, 1.f, 2.f}));
  auto s = stats(sh);
  EXPECT_EQ(s.pushes, 1);
  EXPECT_EQ(s.version, 1);
  EXPECT_TRUE(errors.empty());
}

TEST_F(barrier_test, sync_steps_follow_one_another_and_each_applies_exactly_once) {
  auto b = make("sync", 2);
  for (std::int64_t t = 0; t < 5; ++t) {
    for (int w = 0; w < 2; ++w) pull(b, w, t);
    settle();
    ASSERT_EQ(answers.size(), 2u) << "step " << t;
    for (auto& a : answers) EXPECT_EQ(a.version, t);
    answers.clear();
    push(b, 0, t, t, {1.f, 0.f, 0.f});
    settle();
    EXPECT_EQ(stats(sh).pushes, t);
    push(b, 1, t, t, {0.f, 1.f, 0.f});
    settle();
    EXPECT_EQ(stats(sh).pushes, t + 1);
  }
  pull(b, 0, 5);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-1.5f, -0.5f, 3.f}));
}

TEST_F(barrier_test, backup_worker_slices_that_arrive_late_are_dropped_and_counted) {
  auto b = make("sync", 3, 1);
  for (int w = 0; w < 3; ++w) pull(b, w, 0);
  settle();
  answers.clear();
  push(b, 0, 0, 0, {2.f, 0.f, 0.f});
  push(b, 1, 0, 0, {0.f, 2.f, 0.f});
  settle();
  EXPECT_EQ(stats(sh).pushes, 1) << "K = N - backup = 2 slices close the step";
  acks.clear();
  push(b, 2, 0, 0, {0.f, 0.f, 100.f});  // the backup, one step late
  settle();
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_FALSE(acks[0].applied);
  EXPECT_EQ(acks[0].staleness, 1);
  auto s = stats(b);
  EXPECT_EQ(s.dropped_late, 1);
  EXPECT_EQ(s.pushes, 1);
  pull(b, 2, 1);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{0.f, 1.f, 3.f}));
}

TEST_F(barrier_test, fold_policy_adds_late_slices_to_the_next_step) {
  auto b = make("sync", 3, 1, 0, "fold");
  for (int w = 0; w < 3; ++w) pull(b, w, 0);
  push(b, 0, 0, 0, {2.f, 0.f, 0.f});
  push(b, 1, 0, 0, {0.f, 2.f, 0.f});
  settle();
  push(b, 2, 0, 0, {0.f, 0.f, 3.f});  // late: folded into step 1, not one of its K arrivals
  settle();
  EXPECT_EQ(stats(sh).pushes, 1);
  EXPECT_EQ(stats(b).dropped_late, 0);
  push(b, 0, 1, 1, {3.f, 0.f, 0.f});
  settle();
  EXPECT_EQ(stats(sh).pushes, 1);
  push(b, 1, 1, 1, {0.f, 3.f, 0.f});
  answers.clear();
  pull(b, 0, 2);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  // Step 0: {1,1,0}; step 1: mean of three slices {1,1,1}.
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-1.f, 0.f, 2.f}));
}

TEST_F(barrier_test, a_worker_that_leaves_no_longer_holds_up_the_step) {
  auto b = make("sync", 3);
  push(b, 0, 0, 0, {3.f, 0.f, 0.f});
  push(b, 1, 0, 0, {0.f, 3.f, 0.f});
  settle();
  EXPECT_EQ(stats(sh).pushes, 0);
  self->send(b, leave_atom::value, std::int32_t{2}, false);
  settle();
  EXPECT_EQ(stats(sh).pushes, 1) << "K shrank to 2 and the step closed";
  pull(b, 0, 1);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-0.5f, 0.5f, 3.f}));
}

// A worker that finished its rows and left after sending its last slice (a finished report
// overtaking another worker's push) must not close the step the other is still computing: its
// slice is in the mean, but it does not count as one of the live workers' K.
TEST_F(barrier_test, a_departed_worker_s_slice_does_not_close_a_step_a_live_worker_owes) {
  auto b = make("sync", 2);
  push(b, 1, 0, 0, {0.f, 4.f, 0.f});
  settle();
  self->send(b, leave_atom::value, std::int32_t{1}, false);
  settle();
  EXPECT_EQ(stats(sh).pushes, 0) << "closed without worker 0's slice";
  push(b, 0, 0, 0, {4.f, 0.f, 0.f});
  settle();
  EXPECT_EQ(stats(sh).pushes, 1);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_TRUE(acks[1].applied) << "worker 0's slice was dropped as late";
  pull(b, 0, 1);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-1.f, 0.f, 3.f}));  // mean {2, 2, 0}
  // Worker 0 is the only one left: its slice alone closes the next step.
  push(b, 0, 1, 1, {2.f, 0.f, 0.f});
  settle();
  EXPECT_EQ(stats(sh).pushes, 2);
}

// A lost worker's last slice can reach a barrier on a ps node after the coordinator's leave (it
// crosses on the bulk channel, the leave on another connection). It counts in the mean, but the
// worker stays out: the next step closes without it. A finished worker's push (it was given more
// rows) brings it back instead, and the next step waits for it.
TEST_F(barrier_test, a_lost_worker_s_late_slice_does_not_bring_it_back_a_finished_one_s_does) {
  for (bool lost : {true, false}) {
    acks.clear();
    answers.clear();
    auto b = make("sync", 2);
    self->send(b, leave_atom::value, std::int32_t{1}, lost);
    push(b, 1, 0, 0, {0.f, 4.f, 0.f});  // sent before the leave, arriving after it
    push(b, 0, 0, 0, {4.f, 0.f, 0.f});
    settle();
    EXPECT_EQ(stats(sh).pushes, 1) << "both slices close step 0";
    pull(b, 0, 1);
    settle();
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(values_of(answers[0]), (std::vector<float>{-1.f, 0.f, 3.f}));  // mean {2, 2, 0}
    push(b, 0, 1, 1, {2.f, 0.f, 0.f});
    settle();
    EXPECT_EQ(stats(sh).pushes, lost ? 2 : 1)
        << (lost ? "step 1 waited for the lost worker"
                 : "step 1 closed without the returning worker");
  }
}

// Leave means something only to barriers: a plain shard keeps serving the worker that left
// (a worker it would drop or refuse afterwards fails this) and keeps its values.
TEST_F(barrier_test, plain_shard_ignores_leave) {
  make_shard();
  ds.run();
  self->send(sh, leave_atom::value, std::int32_t{0}, false);
  settle();
  EXPECT_EQ(stats(sh).version, 0);
  pull(sh, 0, 0);
  push(sh, 0, 0, 0, {1.f, 1.f, 1.f});
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{1.f, 2.f, 3.f}));
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_TRUE(acks[0].applied);
  EXPECT_EQ(acks[0].version, 1);
  EXPECT_EQ(stats(sh).pushes, 1);
  EXPECT_TRUE(errors.empty());
}

// The barrier's stall figures come from the actor system's clock (the seam): on the test
// coordinator the test sets the time, and the reported wait is exact.
TEST_F(barrier_test, a_held_sync_step_reports_how_long_it_waits_and_for_whom_on_the_test_clock) {
  auto b = make("sync", 3);
  EXPECT_EQ(stats(b).waiting_step, -1);  // no slice yet: workers are computing, nothing held
  push(b, 0, 0, 0, {1.f, 1.f, 1.f});
  settle();
  ds.sched->advance_time(std::chrono::milliseconds(1500));
  push(b, 2, 0, 0, {1.f, 1.f, 1.f});
  settle();
  ds.sched->advance_time(std::chrono::milliseconds(250));
  auto s = stats(b);
  EXPECT_EQ(s.waiting_step, 0);
  EXPECT_DOUBLE_EQ(s.waiting_s, 1.75);  // since the first slice of the step
  EXPECT_EQ(s.waiting_for, (std::vector<std::int32_t>{1}));
  push(b, 1, 0, 0, {1.f, 1.f, 1.f});
  settle();
  EXPECT_EQ(stats(b).waiting_step, -1);  // applied: nothing held
  EXPECT_TRUE(errors.empty());
}

TEST_F(barrier_test, ssp_holds_a_pull_until_the_slowest_worker_is_within_the_bound) {
  auto log = std::make_shared<barrier_log>();
  auto b = make("ssp", 2, 0, 1, "drop", log);
  pull(b, 0, 0);
  pull(b, 0, 1);  // 1 <= slowest (0) + 1
  settle();
  EXPECT_EQ(answers.size(), 2u);
  push(b, 0, 0, 0, {1.f, 0.f, 0.f});
  push(b, 0, 1, 1, {1.f, 0.f, 0.f});
  pull(b, 0, 2);  // worker 1 has pushed nothing: 2 > 0 + 1
  settle();
  EXPECT_EQ(answers.size(), 2u);
  EXPECT_EQ(stats(sh).pushes, 2) << "ssp applies pushes as they arrive";
  pull(b, 1, 0);
  push(b, 1, 0, 0, {0.f, 1.f, 0.f});
  settle();
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[3].version, 3) << "the released pull sees the push that released it";
  pull(b, 0, 3);  // worker 0's clock is 2, worker 1's is 1: 3 > 1 + 1
  settle();
  EXPECT_EQ(answers.size(), 4u);
  // worker 1 leaves: only worker 0's own clock bounds it now (3 <= 2 + 1).
  self->send(b, leave_atom::value, std::int32_t{1}, false);
  settle();
  EXPECT_EQ(answers.size(), 5u);
  std::vector<std::pair<int, std::int64_t>> answered;
  for (auto& e : log->events)
    if (e.kind == barrier_event::answer) answered.emplace_back(e.worker, e.step);
  EXPECT_EQ(answered,
            (std::vector<std::pair<int, std::int64_t>>{{0, 0}, {0, 1}, {1, 0}, {0, 2}, {0, 3}}));
}

TEST_F(barrier_test, bad_slices_are_rejected_without_touching_the_sum) {
  auto b = make("sync", 2);
  push(b, 0, 0, 0, {1.f, 0.f, 0.f});
  push(b, 1, 0, 0, {1.f, 0.f});
  push(b, 1, 0, 0, {NAN, 0.f, 0.f});
  settle();
  EXPECT_EQ(errors.size(), 2u);
  EXPECT_EQ(stats(sh).pushes, 0);
  push(b, 1, 0, 0, {1.f, 2.f, 0.f});
  pull(b, 0, 1);
  settle();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{0.f, 1.f, 3.f}));
}

// A barrier told its slice length (as make_fronts always does) refuses a wrong-length first
// push; one that learns the length from the first push would take 2 values as the length and
// then refuse every right push of the job.
TEST_F(barrier_test, a_wrong_length_first_push_cannot_fix_the_slice_length) {
  auto b = make("sync", 2, 0, 0, "drop", nullptr, 3);
  push(b, 0, 0, 0, {1.f, 0.f});  // first, and wrong
  settle();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("expected 3"), std::string::npos) << errors[0];
  push(b, 0, 0, 0, {1.f, 0.f, 0.f});
  push(b, 1, 0, 0, {1.f, 2.f, 0.f});
  pull(b, 0, 1);
  settle();
  EXPECT_EQ(errors.size(), 1u);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{0.f, 1.f, 3.f}));
}

// ssp: a push_pull that cannot be applied is refused to the worker (it used to get weights back
// while the shard's refusal was dropped) and does not move its clock; a good one is applied and
// answered with the weights after it.
TEST_F(barrier_test, ssp_push_pull_refusals_reach_the_worker_and_leave_its_clock) {
  auto b = make("ssp", 2, 0, 0, "drop", nullptr, 3);
  self->send(b, push_pull_atom::value, gradient{0, 0, 0, 1, tensor(std::vector<float>{1.f, 0.f})});
  settle();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("expected 3"), std::string::npos) << errors[0];
  EXPECT_TRUE(answers.empty());
  self->send(b, push_pull_atom::value,
             gradient{0, 0, 0, 1, tensor(std::vector<float>{NAN, 0.f, 0.f})});
  settle();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[1].find("NaN"), std::string::npos) << errors[1];
  EXPECT_EQ(stats(sh).pushes, 0);
  // Worker 1 pulls step 1: with bound 0 it waits until worker 0 has pushed step 0, which the
  // refused pushes did not do.
  pull(b, 1, 1);
  settle();
  EXPECT_TRUE(answers.empty());
  self->send(b, push_pull_atom::value,
             gradient{0, 0, 0, 1, tensor(std::vector<float>{1.f, 1.f, 1.f})});
  push(b, 1, 0, 0, {0.f, 0.f, 1.f});
  settle();
  EXPECT_EQ(errors.size(), 2u);
  EXPECT_EQ(stats(sh).pushes, 2);
  ASSERT_EQ(answers.size(), 2u);  // worker 0's next weights and worker 1's held pull
  for (auto& a : answers) EXPECT_EQ(values_of(a), (std::vector<float>{0.f, 1.f, 1.f}));
}

// A barrier that ends (a stopped job, a killed node) answers what it holds: CAF 0.17 would drop
// the promises silently and a ps node's bulk-channel thread waited its 60 s timeout for them.
// A stopped or failed job's reason is the answer, so a worker learns the job's fate.
TEST_F(barrier_test, a_barrier_that_ends_answers_its_held_pulls_and_checkpoints) {
  struct ending {
    caf::error reason;
    std::string pull, checkpoint;
  };
  auto stopped = "actrain.job_stopped: stopped: signal TERM";
  for (auto& e :
       {ending{caf::exit_reason::kill,
               "the barrier stopped while pull of step 1 by worker 0 waited",
               "the barrier stopped before step 1 (checkpoint)"},
        ending{make_error(errc::job_stopped, "stopped: signal TERM"), stopped, stopped}}) {
    answers.clear();
    errors.clear();
    auto b = make("sync", 2);
    push(b, 0, 0, 0, {1.f, 0.f, 0.f});
    pull(b, 0, 1);  // step 0 still waits for worker 1
    settle();
    self->send(b, checkpoint_atom::value, std::int64_t{1});
    settle();
    ASSERT_TRUE(answers.empty());
    ASSERT_TRUE(errors.empty());
    self->send_exit(b, e.reason);
    settle();
    EXPECT_TRUE(answers.empty());
    ASSERT_EQ(errors.size(), 2u) << "every held request is answered";
    EXPECT_NE(errors[0].find(e.pull), std::string::npos) << errors[0];
    EXPECT_NE(errors[1].find(e.checkpoint), std::string::npos) << errors[1];
  }
}

}  // namespace
}  // namespace actrain
