// Deterministic tests of the shard actor: exact optimizer results, versions and staleness with
// interleaved workers, rejection of bad pushes.
#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>

#include "actor_fixture.hpp"
#include "actors/shard.hpp"

namespace actrain {
namespace {

struct shard_test : ::testing::Test {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};

  shard_actor make(std::vector<float> init, optim_spec o, staleness_policy sp = {},
                   double held_steps = 0) {
    shard_config c;
    c.index = 0;
    c.init = std::move(init);
    c.optim = o;
    c.staleness = sp;
    c.held_steps = held_steps;
    return ds.sys->spawn(shard, std::move(c));
  }
  weights pull(const shard_actor& s, std::int32_t worker = 0) {
    self->send(s, pull_atom::value, pull_request{worker, 0});
    ds.run();
    weights out;
    self->receive([&](weights& w) { out = std::move(w); },
                  [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
    return out;
  }
  /// Pushes and returns the ack, or the error.
  caf::expected<push_ack> push(const shard_actor& s, gradient g) {
    self->send(s, push_atom::value, std::move(g));
    ds.run();
    caf::expected<push_ack> out{caf::error{}};
    self->receive([&](push_ack& a) { out = a; }, [&](caf::error& e) { out = e; });
    return out;
  }
  ~shard_test() override { self->send_exit(self, caf::exit_reason::user_shutdown); }
};

gradient grad(std::vector<float> v, std::int64_t base, std::int32_t worker = 0) {
  gradient g;
  g.worker = worker;
  g.base_version = base;
  g.rows = 1;
  g.values = tensor(std::move(v));
  return g;
}

TEST_F(shard_test, push_then_pull_returns_the_optimizers_exact_result) {
  optim_spec o;
  o.kind = "momentum";
  o.lr = 0.1f;
  o.momentum = 0.9f;
  std::vector<float> w0{1.f, -2.f, 0.5f};
  auto s = make(w0, o);
  // The same arithmetic outside any actor.
  auto ref = make_optimizer(o, 3);
  std::vector<float> expect = w0;
  std::vector<std::vector<float>> gs{{0.5f, 1.f, -1.f}, {0.25f, -0.5f, 2.f}};
  for (std::size_t i = 0; i < gs.size(); ++i) {
    ref->step(span<float>(expect), span<const float>(gs[i]), o.lr);
    auto ack = push(s, grad(gs[i], static_cast<std::int64_t>(i)));
    ASSERT_TRUE(ack) << describe_error(ack.error());
    EXPECT_EQ(ack->version, static_cast<std::int64_t>(i) + 1);
    EXPECT_TRUE(ack->applied);
  }
  auto w = pull(s);
  EXPECT_EQ(w.version, 2);
  ASSERT_EQ(w.values.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(w.values[i], expect[i]) << i;
  // By hand for element 0: v1 = 0.5, w = 1 - 0.05 = 0.95; v2 = 0.45 + 0.25 = 0.7, w = 0.88.
  EXPECT_NEAR(w.values[0], 0.88f, 1e-6f);
}

TEST_F(shard_test, versions_and_staleness_with_two_interleaved_workers) {
  optim_spec o;
  o.lr = 1.f;
  auto s = make({0.f, 0.f}, o);
  auto a = pull(s, 0);  // worker 0 reads version 0
  auto b = pull(s, 1);  // worker 1 reads version 0
  EXPECT_EQ(a.version, 0);
  EXPECT_EQ(b.version, 0);
  auto ack0 = push(s, grad({1.f, 0.f}, a.version, 0));
  ASSERT_TRUE(ack0);
  EXPECT_EQ(ack0->staleness, 0);
  EXPECT_EQ(ack0->version, 1);
  auto ack1 = push(s, grad({0.f, 1.f}, b.version, 1));  // computed before worker 0's update
  ASSERT_TRUE(ack1);
  EXPECT_EQ(ack1->staleness, 1);
  EXPECT_EQ(ack1->version, 2);
  auto c = pull(s, 0);
  auto ack2 = push(s, grad({1.f, 1.f}, c.version, 0));
  ASSERT_TRUE(ack2);
  EXPECT_EQ(ack2->staleness, 0);
  self->send(s, stats_atom::value);
  ds.run();
  self->receive([&](shard_stats& st) {
    EXPECT_EQ(st.version, 3);
    EXPECT_EQ(st.pushes, 3);
    EXPECT_EQ(st.pulls, 3);
    EXPECT_EQ(st.staleness_histogram.at(0), 2);
    EXPECT_EQ(st.staleness_histogram.at(1), 1);
  });
  auto w = pull(s);
  EXPECT_FLOAT_EQ(w.values[0], -2.f);
  EXPECT_FLOAT_EQ(w.values[1], -2.f);
}

TEST_F(shard_test, bad_pushes_are_rejected_and_leave_weights_intact) {
  optim_spec o;
  o.lr = 0.5f;
  auto s = make({1.f, 2.f, 3.f}, o);
  auto short_push = push(s, grad({1.f, 1.f}, 0));
  ASSERT_FALSE(short_push);
  EXPECT_EQ(short_push.error().category(), errc_category());
  EXPECT_EQ(short_push.error().code(), static_cast<std::uint8_t>(errc::bad_length));
  EXPECT_NE(describe_error(short_push.error()).find("expects 3"), std::string::npos);
  auto nan_push = push(s, grad({1.f, std::numeric_limits<float>::quiet_NaN(), 1.f}, 0));
  ASSERT_FALSE(nan_push);
  EXPECT_EQ(nan_push.error().code(), static_cast<std::uint8_t>(errc::non_finite));
  auto inf_push = push(s, grad({std::numeric_limits<float>::infinity(), 0.f, 0.f}, 0));
  ASSERT_FALSE(inf_push);
  auto w = pull(s);
  EXPECT_EQ(w.version, 0);
  EXPECT_EQ(w.values.to_vector(), (std::vector<float>{1.f, 2.f, 3.f}));
  self->send(s, stats_atom::value);
  ds.run();
  self->receive([&](shard_stats& st) {
    EXPECT_EQ(st.rejected, 3);
    EXPECT_EQ(st.pushes, 0);
  });
}

TEST_F(shard_test, the_default_step_damps_only_pushes_staler_than_its_tolerance) {
  optim_spec o;
  o.lr = 1.f;
  auto s = make({0.f}, o);                // the default policy: damped, tolerance 2
  for (std::int64_t k = 0; k < 4; ++k) {  // all from version 0: staleness 0, 1, 2, 3
    auto ack = push(s, grad({1.f}, 0));
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->staleness, k);
  }
  EXPECT_NEAR(pull(s).values[0], -(3.0 + std::sqrt(2.0 / 3.0)), 1e-6);
  auto late = push(s, grad({1.f}, 0));  // 4 updates stale: sqrt(2 / 4) of a step
  ASSERT_TRUE(late);
  EXPECT_EQ(late->staleness, 4);
  EXPECT_NEAR(pull(s).values[0], -(3.0 + std::sqrt(2.0 / 3.0) + std::sqrt(0.5)), 1e-6);
}

TEST_F(shard_test, the_coordinator_reads_the_weight_average_and_workers_the_live_weights) {
  optim_spec o;
  o.lr = 1.f;
  shard_config c;
  c.index = 0;
  c.init = {0.f, 10.f};
  c.optim = o;
  c.average = 4;
  auto s = ds.sys->spawn(shard, std::move(c));
  EXPECT_EQ(pull(s, -1).values.to_vector(), (std::vector<float>{0.f, 10.f}));
  // Update k folds in the values with weight 1 - min(1 - 1/4, (1 + k) / (10 + k)).
  double avg0 = 0, avg1 = 10;
  for (int k = 1; k <= 6; ++k) {
    auto v = pull(s, 0).version;
    ASSERT_TRUE(push(s, grad({1.f, -2.f}, v)));  // fresh: w -= (1, -2)
    const double keep = std::min(0.75, (1.0 + k) / (10.0 + k));
    avg0 = keep * avg0 + (1 - keep) * (-k);
    avg1 = keep * avg1 + (1 - keep) * (10 + 2 * k);
  }
  auto live = pull(s, 0);
  EXPECT_EQ(live.values.to_vector(), (std::vector<float>{-6.f, 22.f}));
  auto avg = pull(s, -1);  // the coordinator: evaluations and the job's result
  EXPECT_EQ(avg.version, 6);
  EXPECT_NEAR(avg.values[0], avg0, 1e-5);
  EXPECT_NEAR(avg.values[1], avg1, 1e-5);
  EXPECT_GT(avg.values[0], -6.f);  // it lags behind the live weights
  // A checkpoint holds the live weights; a restored shard starts its average over from them.
  self->send(s, checkpoint_atom::value, std::int64_t{-1});
  ds.run();
  shard_checkpoint cp;
  self->receive([&](shard_checkpoint& x) { cp = std::move(x); });
  EXPECT_EQ(cp.values, (std::vector<float>{-6.f, 22.f}));
  cp.values = {3.f, 4.f};
  self->send(s, restore_atom::value, cp);
  ds.run();
  self->receive([](std::int64_t) {}, [](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  EXPECT_EQ(pull(s, -1).values.to_vector(), (std::vector<float>{3.f, 4.f}));
}

TEST_F(shard_test, staleness_policy_scales_or_drops) {
  optim_spec o;
  o.lr = 1.f;
  staleness_policy inv;
  inv.kind = "inverse";
  auto s = make({0.f}, o, inv);
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // staleness 0: full step
  auto ack = push(s, grad({1.f}, 0));    // staleness 1: half step
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->staleness, 1);
  EXPECT_FLOAT_EQ(pull(s).values[0], -1.5f);

  staleness_policy drop;
  drop.kind = "drop";
  drop.max_staleness = 0;
  auto d = make({0.f}, o, drop);
  ASSERT_TRUE(push(d, grad({1.f}, 0)));
  auto dropped = push(d, grad({1.f}, 0));
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(dropped->applied);
  auto w = pull(d);
  EXPECT_EQ(w.version, 1);
  EXPECT_FLOAT_EQ(w.values[0], -1.f);
}

TEST_F(shard_test, a_stale_push_is_corrected_by_momentum_and_delay_compensation) {
  optim_spec o;
  o.kind = "momentum";
  o.lr = 0.1f;
  o.momentum = 0.9f;
  staleness_policy dc;  // sqrt steps, corrected momentum (the default) and delay compensation
  dc.kind = "sqrt";
  dc.delay_compensation = 2.f;
  auto s = make({1.f}, o, dc);
  auto w0 = pull(s);                              // version 0 handed out: w = 1
  ASSERT_TRUE(push(s, grad({1.f}, w0.version)));  // fresh: v = 1, w = 0.9; ms = 0.05
  auto ack = push(s, grad({2.f}, w0.version));    // also from w = 1, one update late
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->staleness, 1);
  // mean staleness 0.5: momentum 0.9 - 0.5 / 1.5, step factor 1 (the mean is below 1);
  // ms = 0.95 * 0.05 + 0.05 * 4; g' = 2 + 2 * 4 / sqrt(ms) * (0.9 - 1).
  double mu = 0.9 - 0.5 / 1.5;
  double ms = 0.95 * 0.05 + 0.05 * 4;
  double gc = 2 + 2 * 4 / std::sqrt(ms) * (0.9 - 1);
  EXPECT_NEAR(pull(s).values[0], 0.9 - 0.1 * (mu * 1 + gc), 1e-6);  // 0.804139
  self->send(s, stats_atom::value);
  ds.run();
  self->receive([&](shard_stats& st) {
    EXPECT_DOUBLE_EQ(st.mean_staleness, 0.5);
    EXPECT_NEAR(st.momentum, mu, 1e-6);
    EXPECT_EQ(st.uncompensated, 0);
  });

  // The same pushes with every correction off: v = 0.9 * 1 + 2, w = 0.9 - 0.29.
  staleness_policy off;
  off.momentum = "explicit";
  auto plain = make({1.f}, o, off);
  auto p0 = pull(plain);
  ASSERT_TRUE(push(plain, grad({1.f}, p0.version)));
  ASSERT_TRUE(push(plain, grad({2.f}, p0.version)));
  EXPECT_NEAR(pull(plain).values[0], 0.61, 1e-6);
}

TEST_F(shard_test, a_buffered_shard_applies_the_mean_of_its_pushes_scaled_one_by_one) {
  optim_spec o;
  o.kind = "momentum";
  o.lr = 0.1f;
  o.momentum = 0.9f;
  staleness_policy inv;  // every push's step divided by 1 + its own staleness
  inv.kind = "inverse";
  inv.momentum = "explicit";
  shard_config c;
  c.index = 0;
  c.init = {1.f};
  c.optim = o;
  c.staleness = inv;
  c.buffer = 2;
  auto s = ds.sys->spawn(shard, std::move(c));
  auto first = push(s, grad({1.f}, 0));  // buffered: taken, nothing applied yet
  ASSERT_TRUE(first) << describe_error(first.error());
  EXPECT_TRUE(first->applied);
  EXPECT_EQ(first->version, 0);
  auto w = pull(s);
  EXPECT_EQ(w.version, 0);
  EXPECT_EQ(w.values[0], 1.f);
  auto second = push(s, grad({3.f}, 0, 1));  // full: mean (1 + 3) / 2 = 2, v = 2, w = 0.8
  ASSERT_TRUE(second);
  EXPECT_EQ(second->version, 1);
  EXPECT_NEAR(pull(s).values[0], 0.8, 1e-6);
  // One update stale: 2 / (1 + 1) = 1; fresh: 4. Mean 2.5, v = 0.9 * 2 + 2.5 = 4.3, w = 0.37.
  ASSERT_TRUE(push(s, grad({2.f}, 0)));
  ASSERT_TRUE(push(s, grad({4.f}, 1, 1)));
  w = pull(s);
  EXPECT_EQ(w.version, 2);
  EXPECT_NEAR(w.values[0], 0.37, 1e-6);
  // A rejected push takes no place in the buffer.
  EXPECT_FALSE(push(s, grad({1.f, 2.f}, 2)));
  ASSERT_TRUE(push(s, grad({1.f}, 2)));
  EXPECT_EQ(pull(s).version, 2);
}

TEST(shard_buffer, async_jobs_buffer_up_to_their_workers_sync_and_ssp_never) {
  job_spec j;
  j.mode = "async";
  j.workers = 4;
  EXPECT_EQ(shard_buffer(j), 1);  // the default: every push its own update
  j.staleness.buffer = 2;
  EXPECT_EQ(shard_buffer(j), 2);
  j.workers = 1;
  EXPECT_EQ(shard_buffer(j), 1);  // one worker's consecutive pushes are never merged
  j.workers = 8;
  j.staleness.buffer = 0;
  EXPECT_EQ(shard_buffer(j), 8);
  j.staleness.buffer = 16;
  EXPECT_EQ(shard_buffer(j), 8);
  j.staleness.buffer = 1;
  EXPECT_EQ(shard_buffer(j), 1);
  j.staleness.buffer = 4;
  j.mode = "sync";
  EXPECT_EQ(shard_buffer(j), 1);
  j.mode = "ssp";
  EXPECT_EQ(shard_buffer(j), 1);
  j.mode = "async";
  j.model = model_spec("linear", 4, 1);
  j.shards = 2;
  auto configs = make_shard_configs(j);
  ASSERT_EQ(configs.size(), 2u);
  for (auto& c : configs) EXPECT_EQ(c.buffer, 4);
}

TEST(shard_average, async_and_ssp_jobs_average_by_default_sync_ones_when_asked) {
  job_spec j;
  j.mode = "async";
  EXPECT_EQ(j.staleness.average, -1);  // auto
  EXPECT_EQ(shard_average(j), 100);
  j.mode = "ssp";
  EXPECT_EQ(shard_average(j), 100);
  j.mode = "sync";
  EXPECT_EQ(shard_average(j), 0);
  j.staleness.average = 300;
  EXPECT_EQ(shard_average(j), 300);
  j.mode = "async";
  j.staleness.average = 0;
  EXPECT_EQ(shard_average(j), 0);
  j.staleness.average = -1;
  j.model = model_spec("linear", 4, 1);
  j.shards = 2;
  for (auto& c : make_shard_configs(j)) EXPECT_EQ(c.average, 100);
}

TEST_F(shard_test, top_k_held_steps_lower_the_momentum_of_fresh_pushes) {
  optim_spec o;
  o.kind = "momentum";
  o.lr = 0.1f;
  o.momentum = 0.9f;
  // Fresh pushes (staleness 0) whose mass waited 1 step on the worker: momentum 0.9 - 1 / 2.
  auto s = make({1.f}, o, {}, 1.0);
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // v = 1: w = 0.9
  ASSERT_TRUE(push(s, grad({1.f}, 1)));  // v = 0.4 * 1 + 1: w = 0.9 - 0.14
  EXPECT_NEAR(pull(s).values[0], 0.76, 1e-6);
  self->send(s, stats_atom::value);
  ds.run();
  self->receive([&](shard_stats& st) {
    EXPECT_DOUBLE_EQ(st.mean_staleness, 0);
    EXPECT_NEAR(st.momentum, 0.4, 1e-6);
  });
  // Top-k 1%: (100 - 1) / 2 steps held, implicit momentum 0.98: none is left to add.
  job_spec j;
  j.compression = "topk";
  j.topk_fraction = 0.01;
  EXPECT_DOUBLE_EQ(held_steps(j), 49.5);
  auto t = make({1.f}, o, {}, held_steps(j));
  ASSERT_TRUE(push(t, grad({1.f}, 0)));
  ASSERT_TRUE(push(t, grad({1.f}, 1)));
  EXPECT_NEAR(pull(t).values[0], 0.8, 1e-6);  // plain steps of 0.1
  j.compression = "fp16";
  EXPECT_DOUBLE_EQ(held_steps(j), 0);
  // With momentum = "explicit" nothing is lowered: v = 0.9 + 1, w = 0.9 - 0.19.
  staleness_policy off;
  off.momentum = "explicit";
  auto e = make({1.f}, o, off, 1.0);
  ASSERT_TRUE(push(e, grad({1.f}, 0)));
  ASSERT_TRUE(push(e, grad({1.f}, 1)));
  EXPECT_NEAR(pull(e).values[0], 0.71, 1e-6);
}

TEST_F(shard_test, sqrt_policy_shrinks_steps_as_the_mean_staleness_grows) {
  optim_spec o;
  o.lr = 1.f;  // sgd: nothing to correct but the step
  staleness_policy p;
  p.kind = "sqrt";
  auto s = make({0.f}, o, p);
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // staleness 0: w = -1
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // 1: mean 0.5, full step: w = -2
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // 2: mean 1, full step: w = -3
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // 3: mean 1.5: w = -3 - 1 / sqrt(1.5)
  ASSERT_TRUE(push(s, grad({1.f}, 0)));  // 4: mean 2
  EXPECT_NEAR(pull(s).values[0], -3 - 1 / std::sqrt(1.5) - 1 / std::sqrt(2.0), 1e-6);
}

TEST_F(shard_test, pulls_between_pushes_share_one_snapshot) {
  optim_spec o;
  auto s = make({1.f, 2.f}, o);
  auto a = pull(s);
  auto b = pull(s);
  EXPECT_EQ(a.values.data(), b.values.data());  // no copy per pull
  ASSERT_TRUE(push(s, grad({1.f, 1.f}, 0)));
  auto c = pull(s);
  EXPECT_NE(c.values.data(), a.values.data());  // a new version is a new buffer
  EXPECT_EQ(a.values[0], 1.f);                  // and the old snapshot is untouched
}

// -- hot replicas ---------------------------------------------------------------------------------

struct replica_test : shard_test {
  shard_config config(std::vector<float> init) {
    shard_config c;
    c.init = std::move(init);
    c.optim.kind = "momentum";
    c.optim.lr = 0.1f;
    c.optim.momentum = 0.9f;
    c.staleness.momentum = "corrected";  // the update depends on the staleness seen
    c.staleness.delay_compensation = 0.5f;  // and on the weights handed out
    return c;
  }
  shard_checkpoint saved(const shard_actor& s) {
    self->send(s, checkpoint_atom::value, std::int64_t{-1});
    ds.run();
    shard_checkpoint out;
    self->receive([&](shard_checkpoint& c) { out = std::move(c); },
                  [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
    return out;
  }
  /// A primary on {1, 2, 3, 4} and a replica spawned on zeros, joined: the replica starts from
  /// the primary's state.
  std::pair<replicated_shard_actor, replicated_shard_actor> pair() {
    auto primary = ds.sys->spawn(shard, config({1.f, 2.f, 3.f, 4.f}));
    auto replica = ds.sys->spawn(shard, config({0.f, 0.f, 0.f, 0.f}));
    self->send(primary, replica_atom::value, caf::actor_cast<replica_sink_actor>(replica));
    ds.run();
    return {primary, replica};
  }
  static gradient step_of(std::int32_t worker, std::int64_t step, std::int64_t base, float x) {
    auto g = grad({x, -x, 2 * x, 0.5f}, base, worker);
    g.step = step;
    return g;
  }
};

TEST_F(replica_test, a_replica_holds_the_primarys_every_bit_after_stale_pushes) {
  auto [primary, replica] = pair();
  // Two workers, pulls between pushes (kept weights for delay compensation), staleness 0-2.
  pull(primary, 0);
  ASSERT_TRUE(push(primary, step_of(0, 0, 0, 0.5f)));
  pull(primary, 1);
  ASSERT_TRUE(push(primary, step_of(1, 0, 0, -0.25f)));  // stale by 1
  ASSERT_TRUE(push(primary, step_of(0, 1, 1, 1.f)));     // stale by 1
  pull(primary, 0);
  ASSERT_TRUE(push(primary, step_of(1, 1, 1, 0.75f)));  // stale by 2
  auto p = saved(primary);
  auto r = saved(replica);
  EXPECT_EQ(p.version, 4);
  EXPECT_EQ(r.version, 4);
  ASSERT_EQ(p.values.size(), r.values.size());
  for (std::size_t i = 0; i < p.values.size(); ++i)
    EXPECT_EQ(p.values[i], r.values[i]) << "value " << i << " differs";  // bit for bit
  EXPECT_EQ(p.opt_steps, r.opt_steps);
  EXPECT_EQ(p.opt_slots, r.opt_slots);  // the momentum buffer too
  EXPECT_NE(p.values, std::vector<float>({1.f, 2.f, 3.f, 4.f}));
}

TEST_F(replica_test, a_push_is_answered_only_once_the_replica_applied_it) {
  auto [primary, replica] = pair();
  self->send(primary, push_atom::value, step_of(0, 0, 0, 0.5f));
  // The primary takes the push and sends the update on; its answer waits for the replica.
  ASSERT_TRUE(ds.sched->try_run_once());  // the primary
  bool answered = false;
  self->receive([&](push_ack&) { answered = true; }, caf::after(std::chrono::seconds(0)) >> [] {});
  EXPECT_FALSE(answered) << "acknowledged before the replica had the update";
  ds.run();  // the replica applies it, the primary answers
  push_ack ack;
  self->receive([&](push_ack& a) { ack = a; });
  EXPECT_EQ(ack.version, 1);
  EXPECT_EQ(saved(replica).version, 1);
}

TEST_F(replica_test, a_promoted_replica_takes_a_resent_push_once) {
  auto [primary, replica] = pair();
  ASSERT_TRUE(push(primary, step_of(3, 7, 0, 0.5f)));
  self->send_exit(primary, caf::exit_reason::kill);  // the primary's node is gone
  ds.run();
  auto before = saved(replica);
  ASSERT_EQ(before.version, 1);
  // The worker did not see the answer and resends step 7: acknowledged, not applied again.
  auto again = push(replica, step_of(3, 7, 0, 0.5f));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->version, 1);
  EXPECT_EQ(saved(replica).values, before.values);
  // Its next step is new.
  auto next = push(replica, step_of(3, 8, 1, 0.5f));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->version, 2);
  EXPECT_NE(saved(replica).values, before.values);
}

TEST_F(replica_test, a_replica_refuses_an_update_out_of_order_and_goes) {
  auto replica = ds.sys->spawn(shard, config({0.f, 0.f, 0.f, 0.f}));
  self->monitor(replica);
  replica_update u;
  u.version = 2;  // the replica is at 0: an update was lost on the way
  u.lr = 0.1f;
  u.grad = tensor(std::vector<float>(4, 1.f));
  self->send(replica, replicate_atom::value, u);
  ds.run();
  caf::error err;
  self->receive([&](std::int64_t) { ADD_FAILURE() << "taken"; }, [&](caf::error& e) { err = e; });
  EXPECT_NE(describe_error(err).find("replica of shard 0 at version 0 got the update to version 2"),
            std::string::npos)
      << describe_error(err);
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(std::chrono::seconds(0)) >> [] {});
  EXPECT_TRUE(down) << "a replica that is no longer a faithful copy must go";
}

TEST_F(replica_test, a_primary_whose_replica_went_down_answers_on_its_own) {
  auto [primary, replica] = pair();
  self->send_exit(replica, caf::exit_reason::kill);
  ds.run();
  auto ack = push(primary, step_of(0, 0, 0, 0.5f));
  ASSERT_TRUE(ack) << describe_error(ack.error());
  EXPECT_EQ(ack->version, 1);
}

}  // namespace
}  // namespace actrain
