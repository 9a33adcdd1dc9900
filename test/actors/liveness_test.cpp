// Liveness of nodes on CAF's test clock (the scheduler's own, which the test moves; nothing
// sleeps): a node's beacon beats every period and takes the coordinator node as gone once no
// heartbeat was answered for the timeout; the coordinator takes a node as lost once it heard no
// heartbeat of it for the timeout, not a period before, and acts on every actor the node held: a
// worker's rows go to the others, a shard's replica takes over, or without one the job fails.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include "actor_fixture.hpp"
#include "actors/coordinator.hpp"
#include "cluster/beacon.hpp"
#include "test/support/jobs.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;
using testing::went_down;

// -- the beacon ---------------------------------------------------------------------------------

struct sink_state {
  std::shared_ptr<bool> answering;
  std::shared_ptr<int> asked;
  std::vector<caf::typed_response_promise<bool>> held;  ///< answers it never gives
};

/// A registrar as the beacon sees it: counts heartbeats, answers them while *answering.
heartbeat_sink_actor::behavior_type sink(heartbeat_sink_actor::stateful_pointer<sink_state> self,
                                         std::shared_ptr<bool> answering,
                                         std::shared_ptr<int> asked) {
  self->state.answering = std::move(answering);
  self->state.asked = std::move(asked);
  return {[self](heartbeat_atom) -> caf::result<bool> {
    *self->state.asked += 1;
    if (*self->state.answering) return true;
    self->state.held.push_back(self->make_response_promise<bool>());
    return self->state.held.back();
  }};
}

/// A beacon against the sink above on the test clock: `answering` switches the sink's answers,
/// `asked` counts the requests; self monitors the beacon, and the sink is stopped at the end.
struct liveness_test : ::testing::Test {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  std::shared_ptr<bool> answering = std::make_shared<bool>(true);
  std::shared_ptr<int> asked = std::make_shared<int>(0);
  heartbeat_sink_actor registrar = ds.sys->spawn(sink, answering, asked);
  caf::error why;

  void start_beacon(std::chrono::milliseconds every, std::chrono::milliseconds timeout) {
    self->monitor(spawn_beacon(*ds.sys, registrar, every, timeout));
    ds.run();
  }
  /// Moves the clock by `step`, `times` times, running everything due after each.
  void advance(caf::timespan step, int times = 1) {
    for (int i = 0; i < times; ++i) {
      ds.sched->advance_time(step);
      ds.run();
    }
  }
  ~liveness_test() override {
    self->send_exit(registrar, caf::exit_reason::user_shutdown);
    ds.run();
  }
};

TEST_F(liveness_test, a_beacon_beats_every_period_and_quits_once_no_answer_came_for_the_timeout) {
  start_beacon(100ms, 1000ms);
  EXPECT_EQ(*asked, 1) << "the first heartbeat goes at once";
  for (int i = 1; i <= 30; ++i) {  // 3 s of answered heartbeats: one per period, never down
    advance(100ms);
    ASSERT_EQ(*asked, 1 + i);
  }
  EXPECT_FALSE(went_down(self, &why)) << describe_error(why);
  // The registrar stops answering (its node hung). The last answer came at 3.0 s.
  *answering = false;
  advance(100ms, 9);
  EXPECT_FALSE(went_down(self, &why)) << "down after 0.9 s without an answer, timeout 1 s";
  EXPECT_EQ(*asked, 31 + 9) << "it keeps asking while it waits";
  advance(100ms);
  ASSERT_TRUE(went_down(self, &why));
  EXPECT_EQ(why, make_error(errc::node_down,
                            "the coordinator node answered no heartbeat for "
                            "1000 ms ([cluster] node-timeout 1000 ms)"));
}

TEST_F(liveness_test, unanswered_heartbeats_in_flight_are_bounded_by_the_timeout) {
  *answering = false;
  // A timeout of 50 periods: at most 51 unanswered requests, however long it waits.
  start_beacon(10ms, 500ms);
  advance(10ms, 49);
  EXPECT_EQ(*asked, 50);
  EXPECT_FALSE(went_down(self, &why));
  advance(10ms);
  EXPECT_TRUE(went_down(self, &why));
  EXPECT_LE(*asked, 51);
}

// -- the coordinator ----------------------------------------------------------------------------

struct fake_worker_log {
  std::vector<worker_assignment> assigned;
  std::vector<std::int32_t> moved;  ///< shard indices it was told moved
};

/// A worker that trains nothing: it keeps what it is told.
worker_actor::behavior_type fake_worker(worker_actor::pointer self,
                                        std::shared_ptr<fake_worker_log> log) {
  return {
      [log](assign_atom, const worker_assignment& a) { log->assigned.push_back(a); },
      [self](stop_atom) { self->quit(); },
      [](release_atom, std::int32_t) { return released_work{}; },
      [log](moved_atom, std::int32_t s, const shard_actor&) { log->moved.push_back(s); },
  };
}

/// A coordinator on the test clock over two real shards and two fake workers on nodes w0, w1;
/// the shards on p0 and p1 (and with `replicas`, each shard's replica on the other ps node).
struct watched_job : ::testing::Test {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  std::vector<std::shared_ptr<fake_worker_log>> logs;
  std::vector<worker_actor> workers;
  std::vector<shard_actor> shards;
  std::vector<replicated_shard_actor> replicas;
  std::vector<std::string> events;
  coordinator_actor coord;

  void start(bool with_replicas) {
    auto job = test::small_linear_job(2);
    auto data = std::make_shared<job_data>(load_job_data(job));
    fit_model_to_data(job, *data);
    coordinator_config cc;
    cc.job = job;
    cc.data = data;
    cc.ranges = job_ranges(job);
    for (auto& sc : make_shard_configs(job)) shards.push_back(ds.sys->spawn(shard, sc));
    if (with_replicas)
      for (auto& sc : make_shard_configs(job))
        replicas.push_back(
            caf::actor_cast<replicated_shard_actor>(ds.sys->spawn(shard, std::move(sc))));
    for (int w = 0; w < 2; ++w) {
      logs.push_back(std::make_shared<fake_worker_log>());
      workers.push_back(ds.sys->spawn(fake_worker, logs.back()));
      self->monitor(workers.back());
    }
    cc.shards = shards;
    cc.fronts = shards;
    cc.workers = workers;
    cc.worker_nodes = {"w0", "w1"};
    cc.shard_nodes = {"p0", "p1"};
    if (with_replicas) {
      cc.replicas = replicas;
      cc.replica_nodes = {"p1", "p0"};
    }
    cc.watched_nodes = {"w0", "w1", "p0", "p1"};
    cc.node_timeout = 2000ms;
    cc.node_check = 100ms;
    cc.hooks.on_event = [this](const std::string& e) { events.push_back(e); };
    coord = ds.sys->spawn(coordinator, std::move(cc));
    self->send(coord, run_atom::value);
    ds.run();
  }
  /// `ms` of test time in 100 ms steps; after each, every node in `beating` sends a heartbeat.
  void pass(int ms, const std::vector<std::string>& beating) {
    for (int t = 0; t < ms; t += 100) {
      ds.sched->advance_time(100ms);
      for (auto& n : beating) self->send(coord, heartbeat_atom::value, n);
      ds.run();
    }
  }
  std::string event_with(const std::string& part) const {
    for (auto& e : events)
      if (e.find(part) != std::string::npos) return e;
    return {};
  }
  engine_result stop() {
    self->send(coord, stop_atom::value, "the test is over");
    ds.run();
    engine_result r;
    self->receive([&](engine_result& x) { r = std::move(x); },
                  [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
                  caf::after(0s) >> [] { ADD_FAILURE() << "no result"; });
    return r;
  }
  ~watched_job() override {
    for (auto& s : shards) self->send_exit(s, caf::exit_reason::user_shutdown);
    for (auto& s : replicas) self->send_exit(s, caf::exit_reason::user_shutdown);
    for (auto& w : workers) self->send_exit(w, caf::exit_reason::user_shutdown);
    ds.run();
  }
};

TEST_F(watched_job, a_silent_worker_node_is_lost_after_the_timeout_and_its_rows_go_to_the_other) {
  start(false);
  ASSERT_EQ(logs[0]->assigned.size(), 1u);
  ASSERT_EQ(logs[1]->assigned.size(), 1u);
  auto rows_of_1 = logs[1]->assigned[0].rows;
  // Every node beats for 5 s: nobody is lost.
  pass(5000, {"w0", "w1", "p0", "p1"});
  EXPECT_EQ(event_with("sent no heartbeat"), "");
  // w1 falls silent (its last heartbeat at 5.0 s): not lost a check before the timeout ...
  pass(1900, {"w0", "p0", "p1"});
  EXPECT_EQ(event_with("sent no heartbeat"), "");
  caf::error why;
  ASSERT_FALSE(went_down(self, &why)) << describe_error(why);
  // ... and lost at it.
  pass(100, {"w0", "p0", "p1"});
  EXPECT_EQ(event_with("sent no heartbeat"),
            "node 'w1' sent no heartbeat for 2000 ms ([cluster] node-timeout 2000 ms): its 1 "
            "actor(s) are taken as lost");
  auto lost = event_with("worker 1 lost at step 0");
  EXPECT_NE(lost.find("node 'w1' sent no heartbeat for 2000 ms"), std::string::npos) << lost;
  EXPECT_NE(lost.find("go to worker 0"), std::string::npos) << lost;
  // Worker 0 got worker 1's rows; worker 1 was told to exit, naming why.
  ASSERT_EQ(logs[0]->assigned.size(), 2u);
  EXPECT_EQ(logs[0]->assigned[1].rows.size(), rows_of_1.size());
  EXPECT_EQ(logs[0]->assigned[1].rows.front().begin, rows_of_1.front().begin);
  EXPECT_EQ(logs[0]->assigned[1].rows.back().end, rows_of_1.back().end);
  ASSERT_TRUE(went_down(self, &why));
  EXPECT_EQ(why.category(), errc_category());
  EXPECT_EQ(static_cast<errc>(why.code()), errc::node_down);
  // The others keep beating for 10 s more: nobody else is lost, and a late heartbeat of w1
  // (its node woke up) brings nothing back.
  self->send(coord, heartbeat_atom::value, std::string{"w1"});
  pass(10000, {"w0", "p0", "p1"});
  int losses = 0;
  for (auto& e : events)
    if (e.rfind("node ", 0) == 0) ++losses;
  EXPECT_EQ(losses, 1) << ::testing::PrintToString(events);
  auto r = stop();
  EXPECT_EQ(r.workers_lost, 1);
}

TEST_F(watched_job, a_silent_ps_node_hands_its_shard_to_the_replica_on_the_other) {
  start(true);
  pass(1000, {"w0", "w1", "p0", "p1"});
  pass(2000, {"w0", "w1", "p0"});  // p1 (shard 1, and shard 0's replica) falls silent
  EXPECT_EQ(event_with("sent no heartbeat"),
            "node 'p1' sent no heartbeat for 2000 ms ([cluster] node-timeout 2000 ms): its 2 "
            "actor(s) are taken as lost");
  auto took = event_with("took over");
  EXPECT_EQ(took.rfind("shard 1 lost on node 'p1' (", 0), 0u) << took;
  EXPECT_NE(took.find("its replica on 'p0' took over at version 0"), std::string::npos) << took;
  EXPECT_NE(event_with("the replica of shard 0 went down"), "");
  // Both workers were told where shard 1 is now.
  ASSERT_EQ(logs[0]->moved, std::vector<std::int32_t>{1});
  ASSERT_EQ(logs[1]->moved, std::vector<std::int32_t>{1});
  auto r = stop();
  EXPECT_EQ(r.workers_lost, 0);
}

TEST_F(watched_job, a_silent_ps_node_without_a_replica_fails_the_job_naming_the_silence) {
  start(false);
  pass(2500, {"w0", "w1", "p1"});  // p0 never beats
  caf::error why;
  EXPECT_TRUE(went_down(self, &why)) << "the workers were stopped with the job";
  engine_result r;
  self->receive([&](engine_result& x) { r = std::move(x); },
                [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
                caf::after(0s) >> [] { ADD_FAILURE() << "no result"; });
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.rfind("shard 0 went down", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("node 'p0' sent no heartbeat for 2000 ms"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace actrain
