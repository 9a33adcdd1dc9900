// The staleness rules on numbers computed by hand: the momentum correction, the running mean
// staleness it reads, delay compensation with the weights a gradient came from and the current
// ones, and the momentum hook of the built-in optimizers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <actrain/optim.hpp>

#include "optim/staleness_rule.hpp"

namespace actrain {
namespace {

using ::testing::HasSubstr;

TEST(momentum_correction, subtracts_the_implicit_momentum_of_the_mean_staleness) {
  staleness_policy p;                                        // momentum = "corrected" by default
  EXPECT_FLOAT_EQ(p.corrected_momentum(0.9f, 0), 0.9f);      // fresh gradients: as configured
  EXPECT_NEAR(p.corrected_momentum(0.9f, 1), 0.4, 1e-6);     // 1 / (1 + 1) = 0.5 implicit
  EXPECT_NEAR(p.corrected_momentum(0.9f, 7), 0.025, 1e-6);   // 7 / 8 = 0.875 implicit
  EXPECT_FLOAT_EQ(p.corrected_momentum(0.5f, 3), 0.f);       // 0.75 implicit: never below 0
  EXPECT_NEAR(p.corrected_momentum(0.9f, 0.25), 0.7, 1e-6);  // 0.25 / 1.25 = 0.2
  p.momentum = "explicit";
  EXPECT_FLOAT_EQ(p.corrected_momentum(0.9f, 7), 0.9f);
}

TEST(staleness_rule, steps_held_on_the_worker_add_to_the_mean_staleness_for_momentum) {
  staleness_rule r(staleness_policy{}, 1);
  r.hold(1);  // fresh pushes whose mass waited one step: 1 / 2 implicit
  EXPECT_NEAR(r.momentum_for(0.9f), 0.4, 1e-6);
  r.observe(2);  // 2 + 1 = 3: 3 / 4 implicit
  EXPECT_NEAR(r.momentum_for(0.9f), 0.15, 1e-6);
  EXPECT_DOUBLE_EQ(r.mean_staleness(), 2.0);  // the reported mean is the pushes' own
  r.hold(-5);                                 // nonsense counts as nothing held
  EXPECT_NEAR(r.momentum_for(0.9f), 0.9 - 2.0 / 3.0, 1e-6);
}

TEST(staleness_rule, mean_staleness_is_the_plain_mean_then_an_exponential_one) {
  staleness_rule r(staleness_policy{}, 1);
  r.observe(1);
  r.observe(1);
  r.observe(4);
  EXPECT_DOUBLE_EQ(r.mean_staleness(), 2.0);
  r.observe(-3);  // from a confused peer: counts as fresh
  EXPECT_DOUBLE_EQ(r.mean_staleness(), 1.5);
  for (int i = 4; i < 100; ++i) r.observe(2);  // 100 pushes: (6 + 96 * 2) / 100
  EXPECT_NEAR(r.mean_staleness(), 1.98, 1e-12);
  r.observe(102);  // from now on each push weighs 1/100
  EXPECT_NEAR(r.mean_staleness(), 1.98 + (102 - 1.98) / 100, 1e-12);
  EXPECT_NEAR(r.momentum_for(0.9f), 0.9 - 2.9802 / 3.9802, 1e-6);
}

TEST(staleness_rule, sqrt_scales_the_step_by_the_mean_staleness_from_1_on) {
  staleness_policy p;
  p.kind = "sqrt";
  staleness_rule r(p, 1);
  EXPECT_FLOAT_EQ(r.step_factor(), 1.f);  // nothing observed yet
  r.observe(1);                           // a single worker, stale by its prefetch
  EXPECT_FLOAT_EQ(r.step_factor(), 1.f);
  r.observe(7);  // mean 4
  EXPECT_FLOAT_EQ(r.step_factor(), 0.5f);
  staleness_policy none;
  none.kind = "none";
  staleness_rule n(none, 1);
  n.observe(15);
  EXPECT_FLOAT_EQ(n.step_factor(), 1.f);
}

TEST(delay_compensation, corrects_a_stale_gradient_towards_the_current_weights) {
  staleness_policy p;
  p.delay_compensation = 0.5f;
  staleness_rule r(p, 2);
  r.handed_out(0, tensor(std::vector<float>{1.f, 2.f}));  // the weights the gradient came from
  std::vector<float> now{0.5f, 2.5f};                     // the shard's weights one update later
  std::vector<float> g{2.f, -1.f};
  auto out = r.compensate(now, g, 0, 1);
  // ms = 0.05 * g^2 = (0.2, 0.05); g + 0.5 * g^2 / sqrt(ms) * (w - w_b):
  EXPECT_NEAR(out[0], 2.0 + 0.5 * 4 / std::sqrt(0.2) * -0.5, 1e-5);   // -0.236068
  EXPECT_NEAR(out[1], -1.0 + 0.5 * 1 / std::sqrt(0.05) * 0.5, 1e-5);  // 0.118034
  EXPECT_EQ(r.uncompensated(), 0);
  // ms keeps running: 0.95 * 0.2 + 0.05 * 4 = 0.39 for the same gradient again.
  out = r.compensate(now, g, 0, 1);
  EXPECT_NEAR(out[0], 2.0 + 0.5 * 4 / std::sqrt(0.39) * -0.5, 1e-5);
}

TEST(delay_compensation, fresh_or_forgotten_weights_leave_the_gradient_as_is) {
  staleness_policy p;
  p.delay_compensation = 1.f;
  p.history = 2;
  staleness_rule r(p, 1);
  for (std::int64_t v = 0; v < 3; ++v) r.handed_out(v, tensor(std::vector<float>{float(v)}));
  EXPECT_EQ(r.kept(), 2u);  // versions 1 and 2; 0 dropped
  std::vector<float> now{5.f};
  std::vector<float> g{1.f};
  EXPECT_FLOAT_EQ(r.compensate(now, g, 0, 3)[0], 1.f);  // version 0 no longer kept
  EXPECT_EQ(r.uncompensated(), 1);
  EXPECT_FLOAT_EQ(r.compensate(now, g, 3, 0)[0], 1.f);  // fresh: nothing to correct
  EXPECT_EQ(r.uncompensated(), 1);
  // Kept version 2: ms = 0.0975 after two gradients of 1 (0.05, then 0.95 * 0.05 + 0.05).
  EXPECT_NEAR(r.compensate(now, g, 2, 1)[0], 1.0 + 1.0 / std::sqrt(0.0975 * 0.95 + 0.05) * 3, 1e-4);
  r.forget_weights();
  EXPECT_EQ(r.kept(), 0u);
}

TEST(delay_compensation, off_returns_the_gradient_itself_and_keeps_nothing) {
  staleness_rule r(staleness_policy{}, 1);  // off by default
  r.handed_out(0, tensor(std::vector<float>{1.f}));
  EXPECT_EQ(r.kept(), 0u);
  std::vector<float> now{5.f}, g{1.f};
  EXPECT_EQ(r.compensate(now, g, 0, 4).data(), g.data());
}

TEST(delay_compensation, refuses_a_gradient_of_the_wrong_length) {
  staleness_policy p;
  p.delay_compensation = 1.f;
  staleness_rule r(p, 2);
  std::vector<float> now{1.f, 2.f}, g{1.f};
  EXPECT_THAT([&] { r.compensate(now, g, 0, 1); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("the shard owns 2")));
}

TEST(optimizer_momentum, momentum_and_adam_expose_theirs_and_take_a_lower_one) {
  optim_spec s;
  s.lr = 0.1f;
  s.kind = "sgd";
  EXPECT_FLOAT_EQ(make_optimizer(s, 1)->momentum(), 0.f);
  s.kind = "momentum";
  s.momentum = 0.9f;
  auto m = make_optimizer(s, 1);
  EXPECT_FLOAT_EQ(m->momentum(), 0.9f);
  m->set_momentum(0.5f);
  EXPECT_FLOAT_EQ(m->momentum(), 0.9f);  // the configured one stays what it reports
  std::vector<float> w{1.f}, g{1.f};
  m->step(w, g, 0.1f);  // v = 1
  m->step(w, g, 0.1f);  // v = 0.5 * 1 + 1 = 1.5
  EXPECT_NEAR(w[0], 1.0 - 0.1 - 0.15, 1e-6);
  m->set_momentum(2.f);  // clamped to the configured 0.9
  m->step(w, g, 0.1f);   // v = 0.9 * 1.5 + 1 = 2.35
  EXPECT_NEAR(w[0], 0.75 - 0.235, 1e-6);

  s.kind = "adam";
  auto a = make_optimizer(s, 1);
  EXPECT_FLOAT_EQ(a->momentum(), 0.9f);  // beta1
  a->set_momentum(0.f);
  std::vector<float> wa{1.f}, ga{2.f};
  a->step(wa, ga, 0.1f);  // m = 2, v = 0.004, bias-corrected: 2 / sqrt(4) = 1
  EXPECT_NEAR(wa[0], 0.9, 1e-6);
  a->step(wa, ga, 0.1f);  // m = 2 (beta1 0), v = 0.999 * 0.004 + 0.004, c2 = 1 / (1 - 0.999^2)
  EXPECT_NEAR(wa[0], 0.8, 1e-5);
}

TEST(staleness_policy, validate_names_the_new_fields) {
  staleness_policy p;
  p.momentum = "halved";
  EXPECT_THAT([&] { validate(p); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("momentum")));
  p = {};
  p.delay_compensation = -1.f;
  EXPECT_THAT([&] { validate(p); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("delay_compensation")));
  p = {};
  p.history = 0;
  EXPECT_THAT([&] { validate(p); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("history")));
  p = {};
  p.buffer = -1;
  EXPECT_THAT([&] { validate(p); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("buffer")));
  p.buffer = 0;  // as many as the job's workers
  EXPECT_NO_THROW(validate(p));
}

}  // namespace
}  // namespace actrain
