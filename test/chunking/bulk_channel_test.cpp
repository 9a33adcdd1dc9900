// The bulk channel (cluster/bulk.hpp) over a real loopback socket, requests and answers: a
// proxy and a ps node's server move pulls, pushes and push_pulls bit for bit and in order, check
// values for NaN as they arrive, run the actors they wake on the thread that read the frame, and
// never let a request the shard holds hold the next one.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include "bulk_fixture.hpp"

namespace actrain {
namespace {

TEST_F(bulk_channel_test, pulls_pushes_and_push_pulls_cross_bit_for_bit) {
  auto p = proxy();
  ASSERT_TRUE(p);
  auto w = ask<weights>(p, pull_atom::value, pull_request{1, 0});
  ASSERT_TRUE(w) << describe_error(w.error());
  EXPECT_EQ(w->shard, 3);
  EXPECT_EQ(w->version, 0);
  EXPECT_TRUE(same(w->values, ramp(slice, 0.f)));
  auto g = ramp(slice, -7.5f);
  auto a = ask<push_ack>(p, push_atom::value, grad(0, g));
  ASSERT_TRUE(a) << describe_error(a.error());
  EXPECT_EQ(a->version, 1);
  auto r = ask<weights>(p, push_pull_atom::value, grad(1, g));
  ASSERT_TRUE(r) << describe_error(r.error());
  EXPECT_EQ(r->version, 2);
  auto twice = g.to_vector();
  for (auto& x : twice) x *= 2.f;
  EXPECT_TRUE(same(r->values, tensor(twice)));
  EXPECT_EQ(r->values.shape(), (shape_t{slice}));
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

// The channel checks values piece by piece as they arrive and marks what is all finite, so the
// shard's own check is free; a NaN or infinity anywhere in 400 kB (which arrives in pieces)
// leaves the values unmarked for the shard to refuse, and weights holding one are refused by the
// worker's side.
TEST_F(bulk_channel_test,
       non_finite_values_anywhere_reach_the_shard_unmarked_and_weights_are_refused) {
  auto p = proxy();
  ASSERT_TRUE(p);
  auto with = [](std::size_t at, float bad) {
    auto v = ramp(slice, 1.f).to_vector();
    v[at] = bad;
    return tensor(std::move(v));
  };
  const float inf = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(ask<push_ack>(p, push_atom::value, grad(0, ramp(slice, 1.f))));
  ASSERT_TRUE(ask<push_ack>(p, push_atom::value, grad(1, with(0, std::nanf("")))));
  ASSERT_TRUE(ask<push_ack>(p, push_atom::value, grad(2, with(slice / 2 + 1, -inf))));
  ASSERT_TRUE(ask<push_ack>(p, push_atom::value, grad(3, with(slice - 1, std::nanf("")))));
  {
    std::lock_guard<std::mutex> lk(seen->mtx);
    EXPECT_EQ(seen->finite, (std::vector<bool>{true, false, false, false}));
  }
  // The echo shard answers twice the pushed values: NaN comes back and the proxy refuses it.
  auto r = ask<weights>(p, push_pull_atom::value, grad(4, with(slice - 1, std::nanf(""))));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), static_cast<std::uint8_t>(errc::non_finite))
      << describe_error(r.error());
  auto ok = ask<weights>(p, push_pull_atom::value, grad(5, ramp(slice, 1.f)));
  ASSERT_TRUE(ok) << describe_error(ok.error());
  EXPECT_TRUE(ok->values.all_finite());
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

TEST_F(bulk_channel_test, requests_reach_the_shard_in_the_order_they_were_sent) {
  auto p = proxy();
  ASSERT_TRUE(p);
  // Sent all at once (as plain sends: the answers come back as messages): most frames wait for
  // the writer thread behind the first ones.
  constexpr int n = 40;
  int answered = 0;
  for (int i = 0; i < n; ++i)
    (*self)->send(p, push_pull_atom::value, grad(i, ramp(slice, static_cast<float>(i))));
  for (int i = 0; i < n; ++i)
    (*self)->receive([&](weights& w) { answered += w.values.size() == slice ? 1 : 0; },
                     [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
                     caf::after(10s) >> [&] { ADD_FAILURE() << "no answer within 10 s"; });
  EXPECT_EQ(answered, n);
  std::lock_guard<std::mutex> lk(seen->mtx);
  ASSERT_EQ(seen->steps.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(seen->steps[i], i);
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

/// A front like a sync barrier: passes each push_pull on to `inner` and answers with its answer.
shard_actor::behavior_type relay_shard(shard_actor::pointer self, shard_actor inner) {
  return {
      [self, inner](pull_atom, const pull_request& r) {
        return self->delegate(inner, pull_atom::value, r);
      },
      [self, inner](push_atom, gradient& g) {
        return self->delegate(inner, push_atom::value, std::move(g));
      },
      [self, inner](push_pull_atom, gradient& g) -> caf::result<weights> {
        auto p = self->make_response_promise<weights>();
        self->request(inner, caf::infinite, push_pull_atom::value, std::move(g))
            .then([p](weights& w) mutable { p.deliver(std::move(w)); },
                  [p](caf::error& e) mutable { p.deliver(std::move(e)); });
        return p;
      },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

// The ps node's thread runs the actor a request wakes and what that actor wakes in turn (a sync
// barrier and its shard): many requests in flight through such a chain are all answered, in
// order, each with what the inner shard made of its own push.
TEST_F(bulk_channel_test, requests_through_a_front_and_its_shard_are_answered_in_order) {
  auto front = sys->spawn(relay_shard, shard);
  server->serve(5, front, slice);
  auto made = bulk::spawn_proxy(*sys, at(), 5, slice, front, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  auto p = *made;
  constexpr int n = 40;
  for (int i = 0; i < n; ++i)
    (*self)->send(p, push_pull_atom::value, grad(i, ramp(slice, static_cast<float>(i))));
  std::vector<std::int64_t> versions;
  for (int i = 0; i < n; ++i)
    (*self)->receive(
        [&](weights& w) {
          auto twice = ramp(slice, static_cast<float>(versions.size())).to_vector();
          for (auto& x : twice) x *= 2.f;
          EXPECT_TRUE(same(w.values, tensor(twice))) << "answer " << versions.size();
          versions.push_back(w.version);
        },
        [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
        caf::after(10s) >> [&] { ADD_FAILURE() << "no answer within 10 s"; });
  ASSERT_EQ(versions.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(versions[static_cast<std::size_t>(i)], i + 1);
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(front, caf::exit_reason::kill);
}

/// Like a worker: sends the next push_pull from the handler of the previous answer until `left`
/// answers came, recording the thread each one ran on; then reports the versions it got and how
/// many answers the thread that ran the most of them ran.
struct chained_state {
  std::vector<std::thread::id> threads;
  std::vector<std::int64_t> versions;
  int left = 0;
  shard_actor to;
  caf::actor report;
};

using chained_ptr = caf::stateful_actor<chained_state>*;

void send_next(chained_ptr self) {
  auto& st = self->state;
  self->request(st.to, caf::infinite, push_pull_atom::value,
                grad(static_cast<std::int64_t>(st.versions.size()), ramp(slice, 1.f)))
      .then(
          [self](weights& w) {
            auto& st = self->state;
            st.threads.push_back(std::this_thread::get_id());
            st.versions.push_back(w.version);
            if (--st.left > 0) {
              send_next(self);
              return;
            }
            std::map<std::thread::id, std::int32_t> per_thread;
            std::int32_t most = 0;
            for (auto id : st.threads) most = std::max(most, ++per_thread[id]);
            self->send(st.report, st.versions, most);
            self->quit();
          },
          [self](caf::error& e) {
            self->send(self->state.report, e);
            self->quit();
          });
}

caf::behavior chained_requester(chained_ptr self, shard_actor to, int left, caf::actor report) {
  self->state.left = left;
  self->state.to = std::move(to);
  self->state.report = std::move(report);
  send_next(self);
  return {[](int) {}};
}

// A requester on the scheduler (as a worker node's worker is) is run by the reader thread that
// delivers its answer, and sends its next request from there: its answers run on that one
// thread (all but the first few at most, should the thread that spawned it still be running it
// when they come), where the scheduler would take turns among its threads, and none waits.
TEST_F(bulk_channel_test, a_requester_is_run_by_the_reader_that_answers_it_and_sends_from_there) {
  auto p = proxy();
  ASSERT_TRUE(p);
  constexpr int n = 30;
  self->ptr()->spawn(chained_requester, p, n, caf::actor{*self});
  bool done = false;
  (*self)->receive(
      [&](const std::vector<std::int64_t>& versions, std::int32_t on_one_thread) {
        done = true;
        ASSERT_EQ(versions.size(), static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) EXPECT_EQ(versions[static_cast<std::size_t>(i)], i + 1);
        EXPECT_GE(on_one_thread, n - 3) << "the answers ran on several threads";
      },
      [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
      caf::after(20s) >> [&] { ADD_FAILURE() << "the chain did not finish within 20 s"; });
  EXPECT_TRUE(done);
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

// The ps node's thread hands requests to the shard and reads on: a request the shard holds does
// not hold the ones behind it on the same connection (a thread that waited for each answer
// would never read the push that releases the pull).
TEST_F(bulk_channel_test, a_request_the_shard_holds_does_not_hold_the_next_one) {
  auto holder = sys->spawn(holding_shard, slice, std::make_shared<held_pulls>());
  server->serve(4, holder, slice);
  auto made = bulk::spawn_proxy(*sys, at(), 4, slice, holder, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  auto p = *made;
  (*self)->send(p, pull_atom::value, pull_request{1, 0});
  (*self)->send(p, push_atom::value, grad(0, ramp(slice, 0.f)));
  bool got_weights = false, got_ack = false;
  for (int i = 0; i < 2; ++i)
    (*self)->receive(
        [&](weights& w) { got_weights = w.version == 1 && same(w.values, ramp(slice, 1.f)); },
        [&](push_ack& a) { got_ack = a.version == 1; },
        [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
        caf::after(10s) >> [&] { ADD_FAILURE() << "no answer within 10 s"; });
  EXPECT_TRUE(got_weights);
  EXPECT_TRUE(got_ack);
  caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(holder, caf::exit_reason::kill);
}

/// Where a waiting shard ran each push_pull, and whether its first one is under way.
struct turn_threads {
  std::mutex mtx;
  std::condition_variable cv;
  bool first_started = false;
  std::map<std::int64_t, std::thread::id> ran_on;  ///< by the gradient's step
};

/// An echo shard whose push_pull of step 0 answers only once another request waits in its
/// mailbox (bounded: 10 s), as a busy shard does when a second worker's push comes in.
shard_actor::behavior_type waiting_shard(shard_actor::pointer self,
                                         std::shared_ptr<turn_threads> seen) {
  return {
      [](pull_atom, const pull_request&) { return weights{}; },
      [](push_atom, const gradient&) { return push_ack{}; },
      [self, seen](push_pull_atom, const gradient& g) -> weights {
        {
          std::lock_guard<std::mutex> lk(seen->mtx);
          seen->ran_on[g.step] = std::this_thread::get_id();
          if (g.step == 0) seen->first_started = true;
        }
        seen->cv.notify_all();
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (g.step == 0 && self->mailbox().empty() && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
        auto v = g.values.to_vector();
        for (auto& x : v) x *= 2.f;
        return weights{3, g.step + 1, tensor(std::move(v))};
      },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

// Two workers' connections to one shard: the answer that leaves while the other's request waits
// at the shard is written after the turn, and the waiting request goes to a scheduler thread
// (it runs beside that write, not after it on the same thread). Both answers arrive whole.
TEST_F(bulk_channel_test, a_request_waiting_behind_an_answer_runs_beside_its_write) {
  auto seen = std::make_shared<turn_threads>();
  auto waiter = sys->spawn(waiting_shard, seen);
  server->serve(6, waiter, slice);
  auto first = bulk::spawn_proxy(*sys, at(), 6, slice, waiter, caf::actor{});
  auto second = bulk::spawn_proxy(*sys, at(), 6, slice, waiter, caf::actor{});
  ASSERT_TRUE(first) << describe_error(first.error());
  ASSERT_TRUE(second) << describe_error(second.error());
  (*self)->send(*first, push_pull_atom::value, grad(0, ramp(slice, 1.f)));
  {
    std::unique_lock<std::mutex> lk(seen->mtx);
    ASSERT_TRUE(seen->cv.wait_for(lk, 10s, [&] { return seen->first_started; }));
  }
  (*self)->send(*second, push_pull_atom::value, grad(1, ramp(slice, 2.f)));
  std::map<std::int64_t, bool> whole;
  for (int i = 0; i < 2; ++i)
    (*self)->receive(
        [&](weights& w) {
          auto step = w.version - 1;
          auto pushed = ramp(slice, step == 0 ? 1.f : 2.f).to_vector();
          for (auto& x : pushed) x *= 2.f;
          whole[step] = same(w.values, tensor(std::move(pushed)));
        },
        [&](caf::error& e) { ADD_FAILURE() << describe_error(e); },
        caf::after(10s) >> [&] { ADD_FAILURE() << "no answer within 10 s"; });
  EXPECT_EQ(whole, (std::map<std::int64_t, bool>{{0, true}, {1, true}}));
  std::lock_guard<std::mutex> lk(seen->mtx);
  ASSERT_EQ(seen->ran_on.size(), 2u);
  EXPECT_NE(seen->ran_on[0], seen->ran_on[1])
      << "the waiting request ran after the answer on the same connection thread";
  caf::anon_send_exit(*first, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(*second, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(waiter, caf::exit_reason::kill);
}

}  // namespace
}  // namespace actrain
