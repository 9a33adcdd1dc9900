#pragma once
// What the bulk channel's tests share (bulk_channel_test.cpp, bulk_channel_faults_test.cpp): a
// ps node's server on a loopback port serving an echo shard, proxies to it, and shards that echo
// or hold what they get.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include <actrain/errors.hpp>
#include <actrain/system.hpp>
#include "../actors/actor_fixture.hpp"
#include "cluster/bulk.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t slice = 100000;  // 400 kB: more than a socket takes without waiting

inline tensor ramp(std::int64_t n, float start) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + 0.25f * static_cast<float>(i % 991);
  return tensor(std::move(v));
}

inline bool same(const tensor& a, const tensor& b) {
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
inline shard_actor::behavior_type echo_shard(shard_actor::stateful_pointer<echo_state> self,
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

inline gradient grad(std::int64_t step, tensor values) {
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
inline shard_actor::behavior_type holding_shard(shard_actor::stateful_pointer<holding_state> self,
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

}  // namespace
}  // namespace actrain
