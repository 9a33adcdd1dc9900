// Deterministic tests of the worker: credit-based back-pressure, its watchdog on the test clock,
// and zero-copy local sends.
#include <gtest/gtest.h>

#include <tuple>

#include "actor_fixture.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"

#include <actrain/errors.hpp>

namespace actrain {
namespace {

using testing::went_down;

/// A shard that answers pulls at once but holds every push's reply until asked (stats_atom
/// releases the oldest held push and reports how many pushes arrived).
struct holding_shard_state {
  static inline const char* name = "holding_shard";
  std::vector<caf::typed_response_promise<push_ack>> held;
  std::int64_t pushes = 0;
};

shard_actor::behavior_type holding_shard(shard_actor::stateful_pointer<holding_shard_state> self,
                                         std::size_t n) {
  return {
      [n](pull_atom, const pull_request&) -> weights {
        return {0, 0, tensor(std::vector<float>(n, 0.f))};
      },
      [self](push_atom, const gradient&) -> caf::result<push_ack> {
        self->state.pushes += 1;
        auto p = self->make_response_promise<push_ack>();
        self->state.held.push_back(p);
        return p;
      },
      [n](push_pull_atom, const gradient&) -> weights {
        return {0, 0, tensor(std::vector<float>(n, 0.f))};
      },
      [self](stats_atom) -> shard_stats {
        auto& st = self->state;
        if (!st.held.empty()) {
          st.held.front().deliver(push_ack{1, 0, true});
          st.held.erase(st.held.begin());
        }
        shard_stats s;
        s.pushes = st.pushes;
        return s;
      },
      [](checkpoint_atom, std::int64_t) -> shard_checkpoint { return {}; },
      [](restore_atom, const shard_checkpoint&) -> std::int64_t { return 0; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

std::int64_t pushes_seen(testing::deterministic_system& ds, caf::scoped_actor& self,
                         const shard_actor& s) {
  self->send(s, stats_atom::value);
  ds.run();
  std::int64_t n = -1;
  self->receive([&](shard_stats& st) { n = st.pushes; });
  return n;
}

TEST(worker_test, back_pressure_never_exceeds_the_window) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto data = std::make_shared<dataset>();
  data->rows = 400;
  data->features = 2;
  for (int i = 0; i < 400; ++i) {
    data->x.push_back(static_cast<float>(i % 7));
    data->x.push_back(1.f);
    data->y.push_back(static_cast<float>(i % 3));
  }
  for (int window : {1, 2, 3}) {
    auto fake = ds.sys->spawn(holding_shard, std::size_t{3});
    worker_config wc;
    wc.model.kind = "linear";
    wc.model.input_dim = 2;
    wc.model.output_dim = 1;
    wc.train = data;
    wc.batch = 4;
    wc.window = window;
    auto w = ds.sys->spawn(worker, wc);
    worker_assignment a;
    a.shards = {fake};
    a.ranges = {shard_range_t{0, 3}};
    a.rows = {shard_range_t{0, 400}};
    a.epochs = 1;
    self->send(w, assign_atom::value, a);
    ds.run();
    // Stats release one held push after counting, so read the count first, then keep releasing:
    // with no acks the worker stops at exactly `window` pushes in flight.
    EXPECT_EQ(pushes_seen(ds, self, fake), window) << "window " << window;
    // One ack (released by the stats call above) buys exactly one more push.
    EXPECT_EQ(pushes_seen(ds, self, fake), window + 1) << "window " << window;
    EXPECT_EQ(pushes_seen(ds, self, fake), window + 2) << "window " << window;
    self->send_exit(w, caf::exit_reason::user_shutdown);
    self->send_exit(fake, caf::exit_reason::user_shutdown);
    ds.run();
  }
}

/// A worker of a 2-feature linear model on `data`, window 1, watchdog every `timeout`.
worker_config watched_worker(std::shared_ptr<dataset> data, std::chrono::milliseconds timeout) {
  worker_config wc;
  wc.model = {"linear", 2, 1, {}};
  wc.train = std::move(data);
  wc.batch = 4;
  wc.window = 1;
  wc.timeout = timeout;
  return wc;
}

/// `rows` rows of 2 features, every feature 1 and every target 0.
std::shared_ptr<dataset> small_data(int rows = 40) {
  auto d = std::make_shared<dataset>();
  d->rows = rows;
  d->features = 2;
  d->x.assign(static_cast<std::size_t>(2 * rows), 1.f);
  d->y.assign(static_cast<std::size_t>(rows), 0.f);
  return d;
}

/// Spawns a worker with a 1 s watchdog against `fake`, monitored by self, and assigns it 40 rows.
void start_watched_worker(testing::deterministic_system& ds, caf::scoped_actor& self,
                          const shard_actor& fake) {
  worker_actor w = ds.sys->spawn(worker, watched_worker(small_data(), std::chrono::seconds(1)));
  self->monitor(w);
  worker_assignment a;
  a.shards = {fake};
  a.ranges = {shard_range_t{0, 3}};
  a.rows = {shard_range_t{0, 40}};
  self->send(w, assign_atom::value, a);
}

// A worker asked to release half of its work for a joining worker, after its first batch of
// rows [0, 40) (epoch 1 of 3 under way) with [40, 100) not started: the range under way finishes
// its current epoch; of the rest (40 x 2 + 60 x 3 = 260 samples) it gives up 130 from the end of
// its list, as whole rows of a range for all their epochs: [57, 100) for 3 epochs (129). What it
// keeps comes one epoch per entry, both ranges in each epoch: [0, 40) and [40, 57), twice, then
// [40, 57). It then computes exactly the batches of what it kept: 10 (the epoch under way) +
// 2 x 10 + 3 x 5 (17 rows in batches of 4) = 45 pushes, where the whole work would have been
// 3 x 10 + 3 x 15 = 75.
TEST(worker_test, a_release_gives_up_the_epochs_not_started_and_the_worker_walks_what_it_kept) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto data = small_data(100);
  auto fake = ds.sys->spawn(holding_shard, std::size_t{3});
  worker_actor w = ds.sys->spawn(worker, watched_worker(data, std::chrono::seconds(3600)));
  worker_assignment a;
  a.shards = {fake};
  a.ranges = {shard_range_t{0, 3}};
  a.rows = {shard_range_t{0, 40}, shard_range_t{40, 100}};
  a.epochs = 3;
  self->send(w, assign_atom::value, a);
  ds.run();  // the first batch computed, its push held
  self->send(w, release_atom::value, std::int32_t{2});
  ds.run();
  released_work r;
  self->receive([&](released_work& got) { r = std::move(got); },
                [&](caf::error& e) { FAIL() << describe_error(e); });
  EXPECT_EQ(r.replaced, 2);
  auto as_tuples = [](const std::vector<saved_work>& v) {
    std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> out;
    for (auto& x : v) out.emplace_back(x.begin, x.end, x.epochs);
    return out;
  };
  using t = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  EXPECT_EQ(as_tuples(r.kept), (std::vector<t>{{0, 40, 1},
                                                {0, 40, 1},
                                                {40, 57, 1},
                                                {0, 40, 1},
                                                {40, 57, 1},
                                                {40, 57, 1}}));
  EXPECT_EQ(as_tuples(r.given), (std::vector<t>{{57, 100, 3}}));
  // Each stats call releases one held push; the worker pushes until its kept work is done.
  std::int64_t pushes = 0;
  for (int i = 0; i < 200; ++i) {
    auto n = pushes_seen(ds, self, fake);
    if (n == pushes) break;
    pushes = n;
  }
  EXPECT_EQ(pushes, 45);
  // Its work done, a rewrite (share 1) has nothing to rewrite.
  self->send(w, release_atom::value, std::int32_t{1});
  ds.run();
  self->receive(
      [&](released_work& got) {
        EXPECT_EQ(got.replaced, 0);
        EXPECT_TRUE(got.kept.empty());
        EXPECT_TRUE(got.given.empty());
      },
      [&](caf::error& e) { FAIL() << describe_error(e); });
  self->send_exit(w, caf::exit_reason::user_shutdown);
  self->send_exit(fake, caf::exit_reason::user_shutdown);
  ds.run();
}

// Share 1 gives up nothing and rewrites the epochs not started one epoch per entry, range after
// range within each epoch: after the first batch of [0, 40) (3 epochs) with [40, 100) (2 epochs)
// not started, the worker walks [0, 40) to the end of its first epoch, then [0, 40), [40, 100),
// [0, 40), [40, 100). Nothing is lost or added: 3 x 10 + 2 x 15 = 60 pushes, as without it.
TEST(worker_test, a_rewrite_walks_every_range_epoch_after_epoch_and_gives_nothing_away) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto data = small_data(100);
  auto fake = ds.sys->spawn(holding_shard, std::size_t{3});
  worker_actor w = ds.sys->spawn(worker, watched_worker(data, std::chrono::seconds(3600)));
  worker_assignment a;
  a.shards = {fake};
  a.ranges = {shard_range_t{0, 3}};
  a.rows = {shard_range_t{0, 40}};
  a.epochs = 3;
  self->send(w, assign_atom::value, a);
  a.rows = {shard_range_t{40, 100}};
  a.epochs = 2;
  self->send(w, assign_atom::value, a);
  ds.run();  // the first batch computed, its push held
  self->send(w, release_atom::value, std::int32_t{1});
  ds.run();
  released_work r;
  self->receive([&](released_work& got) { r = std::move(got); },
                [&](caf::error& e) { FAIL() << describe_error(e); });
  EXPECT_EQ(r.replaced, 2);
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> kept;
  for (auto& x : r.kept) kept.emplace_back(x.begin, x.end, x.epochs);
  using t = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  EXPECT_EQ(kept, (std::vector<t>{{0, 40, 1}, {0, 40, 1}, {40, 100, 1}, {0, 40, 1}, {40, 100, 1}}));
  EXPECT_TRUE(r.given.empty());
  std::int64_t pushes = 0;
  for (int i = 0; i < 200; ++i) {
    auto n = pushes_seen(ds, self, fake);
    if (n == pushes) break;
    pushes = n;
  }
  EXPECT_EQ(pushes, 60);
  self->send_exit(w, caf::exit_reason::user_shutdown);
  self->send_exit(fake, caf::exit_reason::user_shutdown);
  ds.run();
}

// The watchdog runs on the actor system's clock: on the test coordinator the test moves time,
// nothing sleeps. A worker whose shard holds its push fails after two silent periods (the first
// tick notes the answer count, the second finds it unchanged), naming the timeout.
// Hot replicas: a shard that stops answering (its node died) moves to its replica. The worker
// resends the pushes it had not seen acknowledged there, pulls what it still needed, and trains
// on: the replica ends at exactly one version per step (nothing lost, nothing twice), and late
// answers of the old handle change nothing.
TEST(worker_test, a_moved_shard_gets_every_unacknowledged_push_again_and_nothing_twice) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto data = small_data(40);  // 10 steps of 4 rows
  auto old_shard = ds.sys->spawn(holding_shard, std::size_t{3});
  shard_config rc;
  rc.init = std::vector<float>(3, 0.f);
  rc.optim.kind = "sgd";
  rc.optim.lr = 0.01f;
  shard_actor replica = ds.sys->spawn(shard, rc);
  auto wc = watched_worker(data, std::chrono::milliseconds(60000));
  wc.window = 2;
  auto w = ds.sys->spawn(worker, wc);
  worker_assignment a;
  a.shards = {old_shard};
  a.ranges = {shard_range_t{0, 3}};
  a.rows = {shard_range_t{0, 40}};
  a.epochs = 1;
  a.replicated = true;
  self->send(w, assign_atom::value, a);
  ds.run();  // two pushes out, neither answered: the worker waits
  self->send(w, moved_atom::value, std::int32_t{0}, replica);
  ds.run();
  self->send(replica, stats_atom::value);
  ds.run();
  shard_stats st;
  self->receive([&](shard_stats& s) { st = s; });
  EXPECT_EQ(st.version, 10) << "every step once: the two unanswered ones resent";
  EXPECT_EQ(st.pushes, 10);
  // The old shard answers at last (both held pushes): the worker takes no notice.
  EXPECT_EQ(pushes_seen(ds, self, old_shard), 2);
  EXPECT_EQ(pushes_seen(ds, self, old_shard), 2);
  self->send(replica, stats_atom::value);
  ds.run();
  self->receive([&](shard_stats& s) { st = s; });
  EXPECT_EQ(st.version, 10);
  for (auto a : {caf::actor_cast<caf::actor>(w), caf::actor_cast<caf::actor>(old_shard),
                 caf::actor_cast<caf::actor>(replica)})
    self->send_exit(a, caf::exit_reason::user_shutdown);
  ds.run();
}

TEST(worker_test, the_watchdog_fails_a_worker_whose_shards_stop_answering) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto fake = ds.sys->spawn(holding_shard, std::size_t{3});
  start_watched_worker(ds, self, fake);
  ds.run();  // one push in flight, held
  caf::error why;
  ds.sched->advance_time(std::chrono::milliseconds(999));
  ds.run();
  EXPECT_FALSE(went_down(self, &why)) << "down before the first period ended";
  ds.sched->advance_time(std::chrono::milliseconds(1));  // tick 1: notes the answer count
  ds.run();
  EXPECT_FALSE(went_down(self, &why)) << "down after one silent period";
  ds.sched->advance_time(std::chrono::seconds(1));  // tick 2: nothing answered since
  ds.run();
  ASSERT_TRUE(went_down(self, &why));
  EXPECT_EQ(why, make_error(errc::timeout, "worker 0: no shard answered for 1000 ms"));
  EXPECT_NE(describe_error(why).find("no shard answered for 1000 ms"), std::string::npos)
      << describe_error(why);
  self->send_exit(fake, caf::exit_reason::user_shutdown);
  ds.run();
}

TEST(worker_test, an_answer_between_ticks_keeps_the_worker_alive) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto fake = ds.sys->spawn(holding_shard, std::size_t{3});
  start_watched_worker(ds, self, fake);
  ds.run();
  caf::error why;
  ds.sched->advance_time(std::chrono::seconds(1));  // tick 1
  ds.run();
  EXPECT_EQ(pushes_seen(ds, self, fake), 1);        // releases the held push: an answer
  ds.run();                                         // the worker pushes again (held)
  ds.sched->advance_time(std::chrono::seconds(1));  // tick 2: one answer since tick 1
  ds.run();
  EXPECT_FALSE(went_down(self, &why)) << describe_error(why);
  ds.sched->advance_time(std::chrono::seconds(1));  // tick 3: silent again
  ds.run();
  ASSERT_TRUE(went_down(self, &why));
  EXPECT_EQ(why.category(), errc_category());
  EXPECT_EQ(why.code(), static_cast<std::uint8_t>(errc::timeout));
  self->send_exit(fake, caf::exit_reason::user_shutdown);
  ds.run();
}

/// A shard that acks every push at once and keeps every gradient slice it received (in `kept`,
/// shared with the test; the deterministic scheduler runs one thing at a time).
shard_actor::behavior_type keeping_shard(std::size_t n, std::shared_ptr<std::vector<tensor>> kept) {
  return {
      [n](pull_atom, const pull_request&) -> weights {
        return {0, 0, tensor(std::vector<float>(n, 0.f))};
      },
      [kept](push_atom, const gradient& g) -> push_ack {
        kept->push_back(g.values);
        return {1, 0, true};
      },
      [n](push_pull_atom, const gradient&) -> weights {
        return {0, 0, tensor(std::vector<float>(n, 0.f))};
      },
      [](stats_atom) -> shard_stats { return {}; },
      [](checkpoint_atom, std::int64_t) -> shard_checkpoint { return {}; },
      [](restore_atom, const shard_checkpoint&) -> std::int64_t { return 0; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

// The worker's gradient is one buffer whose per-shard slices are views: what each shard receives
// in a local send is that buffer itself. Shard 1's slice of every step starts exactly where shard
// 0's ends (a copy anywhere on the way would put them in separate allocations), and every step
// brings a new buffer while the shards keep the old ones alive.
TEST(worker_test, a_local_send_of_a_gradient_does_not_copy_its_buffer) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto kept0 = std::make_shared<std::vector<tensor>>();
  auto kept1 = std::make_shared<std::vector<tensor>>();
  auto s0 = ds.sys->spawn(keeping_shard, std::size_t{2}, kept0);
  auto s1 = ds.sys->spawn(keeping_shard, std::size_t{1}, kept1);
  auto wc = watched_worker(small_data(), std::chrono::seconds(60));
  wc.window = 2;
  worker_actor w = ds.sys->spawn(worker, wc);
  worker_assignment a;
  a.shards = {s0, s1};
  a.ranges = {shard_range_t{0, 2}, shard_range_t{2, 3}};  // linear, 2 features: W (2) then b (1)
  a.rows = {shard_range_t{0, 40}};
  a.epochs = 1;
  self->send(w, assign_atom::value, a);
  ds.run();
  ASSERT_EQ(kept0->size(), 10u);  // 40 rows, batch 4
  ASSERT_EQ(kept1->size(), 10u);
  for (std::size_t k = 0; k < kept0->size(); ++k) {
    const float* first = (*kept0)[k].data();
    EXPECT_EQ((*kept1)[k].data(), first + 2) << "step " << k << ": the slices are not one buffer";
    if (k > 0) {
      EXPECT_NE(first, (*kept0)[k - 1].data()) << "step " << k << " reused a kept buffer";
    }
  }
  for (auto h : {caf::actor_cast<caf::actor>(w), caf::actor_cast<caf::actor>(s0),
                 caf::actor_cast<caf::actor>(s1)})
    self->send_exit(h, caf::exit_reason::user_shutdown);
  ds.run();
}

// A worker that is gone before its watchdog ticker first runs (stopped, or failed, right after
// its first assignment): the ticker has nothing to watch and must end too. One that re-armed
// itself instead kept its actor system from ever shutting down (the destructor waits for every
// actor).
TEST(worker_test, the_watchdog_ticker_ends_when_its_worker_is_gone_before_it_starts) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto fake = ds.sys->spawn(holding_shard, std::size_t{3});
  ds.run();
  auto before = ds.sys->registry().running();
  auto w = ds.sys->spawn(worker, watched_worker(small_data(), std::chrono::milliseconds(100)));
  worker_assignment a;
  a.shards = {fake};
  a.ranges = {shard_range_t{0, 3}};
  a.rows = {shard_range_t{0, 40}};
  self->send(w, assign_atom::value, a);
  self->send(w, stop_atom::value);
  ds.sched->run_once();  // the assignment: the worker spawns its ticker and pulls from the shard
  ds.sched->prioritize(w);
  ds.sched->run_once();  // the stop, before the ticker ever runs
  w = nullptr;
  ds.sched->prioritize(fake);
  ds.sched->run_once();  // the shard answers the pull: the worker's last reference is gone
  ds.run();              // now the ticker runs for the first time
  EXPECT_EQ(ds.sys->registry().running(), before);
  // No ticker re-armed itself either.
  EXPECT_FALSE(ds.sched->trigger_timeouts());
  self->send_exit(fake, caf::exit_reason::user_shutdown);
  ds.run();
}

}  // namespace
}  // namespace actrain
