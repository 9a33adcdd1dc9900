// The bulk channel (cluster/bulk.hpp) over a real loopback socket: a proxy and a ps node's server
// move pulls, pushes and push_pulls bit for bit and in order; a wrong token, a slice of the wrong
// length and a hostile peer's frames are refused with errors that say what is wrong (before
// anything is allocated for them); a shard or a server that goes away fails what is outstanding
// and takes the proxy down.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <actrain/errors.hpp>
#include <actrain/system.hpp>
#include "../actors/actor_fixture.hpp"
#include "cluster/bulk.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr std::int64_t slice = 100000;  // 400 kB: more than a socket takes without waiting

tensor ramp(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + 0.25f * static_cast<float>(i % 991);
  return tensor(std::move(v));
}

bool same(const tensor& a, const tensor& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// What the test shard saw: the steps of the gradients pushed to it, in arrival order.
struct seen_by_shard {
  std::mutex mtx;
  std::vector<std::int64_t> steps;
  std::vector<bool> finite;  ///< what all_finite() said of each gradient, as the shard checks it
};

struct echo_state {
  std::int64_t version = 0;
};

/// A shard that answers a push_pull with twice the pushed values (so the reply proves the
/// payload crossed), a pull with ramp(n, version), and counts its version.
shard_actor::behavior_type echo_shard(shard_actor::stateful_pointer<echo_state> self,
                                      std::int64_t n, std::shared_ptr<seen_by_shard> seen) {
  auto record = [self, seen](const gradient& g) {
    std::lock_guard<std::mutex> lk(seen->mtx);
    seen->steps.push_back(g.step);
    seen->finite.push_back(g.values.all_finite());
    self->state.version += 1;
  };
  return {
      [self, n](pull_atom, const pull_request&) {
        return weights{3, self->state.version, ramp(n, static_cast<float>(self->state.version))};
      },
      [self, record](push_atom, const gradient& g) -> caf::result<push_ack> {
        record(g);
        return push_ack{self->state.version, self->state.version - 1 - g.base_version, true};
      },
      [self, record](push_pull_atom, const gradient& g) -> caf::result<weights> {
        record(g);
        auto v = g.values.to_vector();
        for (auto& x : v) x *= 2.f;
        return weights{3, self->state.version, tensor(std::move(v))};
      },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

gradient grad(std::int64_t step, tensor values) {
  gradient g;
  g.worker = 1;
  g.step = step;
  g.base_version = step;
  g.rows = 64;
  g.values = std::move(values);
  return g;
}

struct bulk_channel_test : ::testing::Test {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::unique_ptr<caf::scoped_actor> self;
  std::shared_ptr<seen_by_shard> seen = std::make_shared<seen_by_shard>();
  shard_actor shard;
  std::unique_ptr<bulk::server> server;
  std::uint16_t port = 0;

  bulk_channel_test() {
    prepare_config(cfg);
    cfg.set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    self = std::make_unique<caf::scoped_actor>(*sys);
    shard = sys->spawn(echo_shard, slice, seen);
    server = std::make_unique<bulk::server>(*sys, "secret", 10s);
    server->hello_timeout = 2s;
    auto p = server->listen("127.0.0.1", 0);
    EXPECT_TRUE(p) << describe_error(p.error());
    if (p) port = *p;
    server->serve(3, shard, slice);
  }
  ~bulk_channel_test() override {
    server->stop();
    caf::anon_send_exit(shard, caf::exit_reason::kill);
    self.reset();
  }

  bulk::endpoint at(std::string token = "secret") {
    bulk::endpoint e;
    e.host = "127.0.0.1";
    e.port = port;
    e.token = std::move(token);
    e.name = "test worker";
    e.timeout = 5s;
    return e;
  }

  shard_actor proxy() {
    auto p = bulk::spawn_proxy(*sys, at(), 3, slice, shard, caf::actor{});
    EXPECT_TRUE(p) << describe_error(p.error());
    return p ? *p : shard_actor{};
  }

  template <class T, class... Ts>
  caf::expected<T> ask(const shard_actor& to, Ts&&... xs) {
    caf::expected<T> out = caf::error{};
    (*self)
        ->request(to, 10s, std::forward<Ts>(xs)...)
        .receive([&](T& x) { out = std::move(x); }, [&](caf::error& e) { out = std::move(e); });
    return out;
  }
};

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

/// How many pulls a holding shard holds now, for a test to wait on.
struct held_pulls {
  std::mutex mtx;
  std::condition_variable cv;
  std::size_t held = 0;
};

struct holding_state {
  std::vector<caf::typed_response_promise<weights>> held;
};

/// A shard that holds each pull until the next push arrives, as a sync barrier holds a worker's
/// pull until its step is complete.
shard_actor::behavior_type holding_shard(shard_actor::stateful_pointer<holding_state> self,
                                         std::int64_t n, std::shared_ptr<held_pulls> seen) {
  return {
      [self, seen](pull_atom, const pull_request&) -> caf::result<weights> {
        self->state.held.push_back(self->make_response_promise<weights>());
        std::lock_guard<std::mutex> lk(seen->mtx);
        seen->held = self->state.held.size();
        seen->cv.notify_all();
        return self->state.held.back();
      },
      [self, n](push_atom, const gradient& g) -> caf::result<push_ack> {
        for (auto& rp : self->state.held) rp.deliver(weights{3, g.step + 1, ramp(n, 1.f)});
        self->state.held.clear();
        return push_ack{g.step + 1, 0, true};
      },
      [](push_pull_atom, const gradient&) -> caf::result<weights> {
        return make_error(errc::bad_message, "not used");
      },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
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

// Without a thread waiting for each answer, the server's deadline answers for the shard: a
// request it has not answered within the request timeout is failed with caf.request_timeout.
TEST_F(bulk_channel_test, a_request_its_shard_never_answers_times_out_on_the_ps_node) {
  auto holder = sys->spawn(holding_shard, slice, std::make_shared<held_pulls>());
  bulk::server quick(*sys, "secret", 300ms);
  auto port2 = quick.listen("127.0.0.1", 0);
  ASSERT_TRUE(port2) << describe_error(port2.error());
  quick.serve(4, holder, slice);
  auto e = at();
  e.port = *port2;
  auto made = bulk::spawn_proxy(*sys, e, 4, slice, holder, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  auto w = ask<weights>(*made, pull_atom::value, pull_request{1, 0});
  ASSERT_FALSE(w);
  EXPECT_NE(describe_error(w.error()).find("shard 4 did not answer within 300 ms"),
            std::string::npos)
      << describe_error(w.error());
  caf::anon_send_exit(*made, caf::exit_reason::user_shutdown);
  quick.stop();
  caf::anon_send_exit(holder, caf::exit_reason::kill);
}

// A connection whose requests fill its slots at a shard that holds them waits for a slot, not
// on its socket: stopping the server must still end it.
TEST_F(bulk_channel_test, stopping_the_server_ends_a_connection_waiting_for_a_slot) {
  auto seen_held = std::make_shared<held_pulls>();
  auto holder = sys->spawn(holding_shard, slice, seen_held);
  server->serve(4, holder, slice);
  auto made = bulk::spawn_proxy(*sys, at(), 4, slice, holder, caf::actor{});
  ASSERT_TRUE(made) << describe_error(made.error());
  for (int i = 0; i < 6; ++i) (*self)->send(*made, pull_atom::value, pull_request{1, 0});
  {  // the shard holds the 4 the connection lets through
    std::unique_lock<std::mutex> lk(seen_held->mtx);
    ASSERT_TRUE(seen_held->cv.wait_for(lk, 10s, [&] { return seen_held->held >= 4; }))
        << "the shard holds " << seen_held->held << " pulls";
    EXPECT_EQ(seen_held->held, 4u);
  }
  auto stopped = std::async(std::launch::async, [this] { server->stop(); });
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready) << "stop() waited for the shard";
  caf::anon_send_exit(*made, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(holder, caf::exit_reason::kill);
}

TEST_F(bulk_channel_test, a_wrong_token_is_refused_by_name) {
  auto p = bulk::spawn_proxy(*sys, at("guess"), 3, slice, shard, caf::actor{});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), static_cast<std::uint8_t>(errc::bad_token));
  EXPECT_NE(describe_error(p.error()).find("wrong cluster token"), std::string::npos)
      << describe_error(p.error());
}

TEST_F(bulk_channel_test, a_slice_of_the_wrong_length_is_refused_and_the_proxy_goes_down) {
  auto p = proxy();
  ASSERT_TRUE(p);
  (*self)->monitor(p);
  auto r = ask<push_ack>(p, push_atom::value, grad(0, ramp(slice - 1, 0.f)));
  ASSERT_FALSE(r);
  EXPECT_NE(describe_error(r.error()).find("expects 100000 gradient values, the frame holds 99999"),
            std::string::npos)
      << describe_error(r.error());
  caf::error why;
  (*self)->receive([&](caf::down_msg& dm) { why = dm.reason; },
                   caf::after(5s) >> [] { ADD_FAILURE() << "the proxy did not go down"; });
  EXPECT_NE(describe_error(why).find("closed"), std::string::npos) << describe_error(why);
  std::lock_guard<std::mutex> lk(seen->mtx);
  EXPECT_TRUE(seen->steps.empty()) << "the refused gradient reached the shard";
}

TEST_F(bulk_channel_test, a_shard_that_goes_down_is_answered_for_as_its_own_handle_would_be) {
  // A request to a shard that ended on a live node is bounced over BASP with
  // caf.request_receiver_down (one to a node that is gone is never answered): the proxy answers
  // the same, and stays until its owner goes.
  auto owner = sys->spawn([] { return caf::behavior{[](std::int8_t) {}}; });
  auto made = bulk::spawn_proxy(*sys, at(), 3, slice, shard, owner);
  ASSERT_TRUE(made) << describe_error(made.error());
  auto p = *made;
  (*self)->monitor(p);
  caf::anon_send_exit(shard, caf::exit_reason::kill);
  (*self)->wait_for(shard);
  caf::error err;
  for (int i = 0; i < 50 && err != caf::sec::request_receiver_down; ++i)
    (*self)
        ->request(p, 5s, pull_atom::value, pull_request{1, 0})
        .receive([](weights&) {}, [&](caf::error& e) { err = e; });
  EXPECT_EQ(err, caf::sec::request_receiver_down) << describe_error(err);
  caf::error why;
  EXPECT_FALSE(testing::went_down(*self, &why)) << "the proxy went with the shard";
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
  (*self)->receive(
      [&](caf::down_msg& dm) { why = dm.reason; },
      caf::after(5s) >> [] { ADD_FAILURE() << "the proxy did not go with its owner"; });
  EXPECT_EQ(why, caf::exit_reason::normal);
}

TEST_F(bulk_channel_test, a_stopped_server_closes_the_channel_and_the_proxy_says_so) {
  auto p = proxy();
  ASSERT_TRUE(p);
  ASSERT_TRUE(ask<weights>(p, pull_atom::value, pull_request{1, 0}));
  (*self)->monitor(p);
  server->stop();
  caf::error why;
  (*self)->receive([&](caf::down_msg& dm) { why = dm.reason; },
                   caf::after(5s) >> [] { ADD_FAILURE() << "the proxy did not go down"; });
  EXPECT_EQ(why.code(), static_cast<std::uint8_t>(errc::node_down));
  EXPECT_NE(describe_error(why).find("bulk channel to the ps node at 127.0.0.1"), std::string::npos)
      << describe_error(why);
}

// -- a hostile peer -------------------------------------------------------------------------------

struct raw_peer {
  asio::io_context io;
  tcp::socket sock{io};
  caf::actor_system& sys;
  raw_peer(caf::actor_system& s, std::uint16_t port) : sys(s) {
    sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  void send(bulk::header h, const std::vector<char>& meta = {}) {
    h.meta_bytes = h.meta_bytes == 0 ? static_cast<std::uint32_t>(meta.size()) : h.meta_bytes;
    asio::write(sock, asio::buffer(&h, sizeof h));
    if (!meta.empty()) asio::write(sock, asio::buffer(meta));
  }
  void hello(std::string token) {
    std::vector<char> meta;
    caf::binary_serializer sink{sys, meta};
    std::uint32_t version = protocol_version;
    std::string name = "raw";
    EXPECT_FALSE(sink(token, version, name));
    bulk::header h;
    h.kind = static_cast<std::uint8_t>(bulk::kind::hello);
    send(h, meta);
  }
  /// The next frame's kind and, for an error, its text.
  std::pair<std::uint8_t, std::string> answer() {
    bulk::header h;
    asio::read(sock, asio::buffer(&h, sizeof h));
    std::vector<char> meta(h.meta_bytes);
    if (!meta.empty()) asio::read(sock, asio::buffer(meta));
    std::string text;
    if (h.kind == static_cast<std::uint8_t>(bulk::kind::error)) {
      std::uint8_t code = 0;
      caf::binary_deserializer source{sys, meta};
      EXPECT_FALSE(source(code, text));
    }
    return {h.kind, text};
  }
  /// Whether the server closed the connection (a read ends with end of file).
  bool closed() {
    char c;
    boost::system::error_code ec;
    asio::read(sock, asio::buffer(&c, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
};

TEST_F(bulk_channel_test, a_hostile_peer_is_answered_and_dropped_before_anything_is_allocated) {
  struct hostile {
    bool greeted;  ///< sends a good hello first
    bulk::header h;
    std::vector<char> meta;
    std::string expected;  ///< in the error's text
  };
  auto frame = [](bulk::kind k, std::uint32_t target, std::uint64_t floats,
                  std::uint32_t meta_bytes = 0) {
    bulk::header h;
    h.kind = static_cast<std::uint8_t>(k);
    h.target = target;
    h.floats = floats;
    h.meta_bytes = meta_bytes;
    return h;
  };
  bulk::header http;
  http.magic = 0x50545448;  // "HTTP"
  const std::vector<hostile> cases{
      {false, http, {}, "wrong magic"},
      // 4 TiB, if the server believed it.
      {true, frame(bulk::kind::push, 3, std::uint64_t{1} << 40), {}, "at most 100000 fit"},
      {true, frame(bulk::kind::pull, 9, 0), {}, "no shard 9 on this ps node"},
      // A hello that claims 1 GiB of metadata.
      {false, frame(bulk::kind::hello, 0, 0, 1u << 30), {}, "at most 4096"},
      // Metadata that is no pull_request.
      {true, frame(bulk::kind::pull, 3, 0), {'x', 'y'}, "malformed pull"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.expected);
    raw_peer peer(*sys, port);
    if (c.greeted) {
      peer.hello("secret");
      EXPECT_EQ(peer.answer().first, static_cast<std::uint8_t>(bulk::kind::welcome));
    }
    peer.send(c.h, c.meta);
    auto [k, text] = peer.answer();
    EXPECT_EQ(k, static_cast<std::uint8_t>(bulk::kind::error));
    EXPECT_NE(text.find(c.expected), std::string::npos) << text;
    EXPECT_TRUE(peer.closed());
  }
  std::lock_guard<std::mutex> lk(seen->mtx);
  EXPECT_TRUE(seen->steps.empty());
}

TEST_F(bulk_channel_test, a_silent_peer_is_dropped_after_the_hello_timeout) {
  raw_peer peer(*sys, port);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(peer.closed());  // server->hello_timeout is 2 s
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1900ms);
}

}  // namespace
}  // namespace actrain
