// Schedules at chosen steps, clipping, and staleness policies, against values worked by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <actrain/optim.hpp>

namespace actrain {
namespace {

using ::testing::HasSubstr;

TEST(Schedule, ConstantIgnoresStep) {
  optim_spec s;
  s.lr = 0.3f;
  EXPECT_FLOAT_EQ(scheduled_lr(s, 0), 0.3f);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 123456), 0.3f);
}

TEST(Schedule, StepMultipliesByGammaEveryStepSize) {
  optim_spec s;
  s.lr = 1;
  s.schedule = "step";
  s.step_size = 10;
  s.gamma = 0.5f;
  EXPECT_FLOAT_EQ(scheduled_lr(s, 0), 1);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 9), 1);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 10), 0.5f);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 25), 0.25f);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 30), 0.125f);
}

TEST(Schedule, CosineGoesFromLrToMinLrThenStays) {
  optim_spec s;
  s.lr = 1;
  s.min_lr = 0.1f;
  s.schedule = "cosine";
  s.total_steps = 100;
  // lr(t) = 0.1 + 0.45 (1 + cos(pi t / 100))
  EXPECT_FLOAT_EQ(scheduled_lr(s, 0), 1);
  EXPECT_NEAR(scheduled_lr(s, 25), 0.1 + 0.45 * (1 + std::sqrt(0.5)), 1e-6);
  EXPECT_NEAR(scheduled_lr(s, 50), 0.55, 1e-6);
  EXPECT_NEAR(scheduled_lr(s, 75), 0.1 + 0.45 * (1 - std::sqrt(0.5)), 1e-6);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 100), 0.1f);
  EXPECT_FLOAT_EQ(scheduled_lr(s, 5000), 0.1f);
  s.total_steps = 0;  // no horizon: constant
  EXPECT_FLOAT_EQ(scheduled_lr(s, 50), 1);
}

TEST(Clip, ScalesDownOnlyAboveMaxAndReturnsPreClipNorm) {
  std::vector<float> g{3, 4};
  EXPECT_DOUBLE_EQ(clip_by_norm(g, 10), 5);
  EXPECT_EQ(g, (std::vector<float>{3, 4}));
  EXPECT_DOUBLE_EQ(clip_by_norm(g, 0), 5);  // disabled
  EXPECT_EQ(g, (std::vector<float>{3, 4}));
  EXPECT_DOUBLE_EQ(clip_by_norm(g, 1), 5);
  EXPECT_FLOAT_EQ(g[0], 0.6f);
  EXPECT_FLOAT_EQ(g[1], 0.8f);
  std::vector<float> empty;
  EXPECT_DOUBLE_EQ(clip_by_norm(empty, 1), 0);
}

TEST(Clip, AccumulatesInDouble) {
  // 2^24 + 1 ones: a float running sum sticks at 2^24; the double sum is exact.
  std::vector<float> g((1 << 24) + 1, 1.f);
  EXPECT_DOUBLE_EQ(clip_by_norm(g, 0), std::sqrt(double((1 << 24) + 1)));
}

TEST(Staleness, Factors) {
  staleness_policy none;
  none.kind = "none";
  EXPECT_FLOAT_EQ(none.factor(0), 1);
  EXPECT_FLOAT_EQ(none.factor(1000), 1);

  staleness_policy inv{"inverse", 0};
  EXPECT_FLOAT_EQ(inv.factor(0), 1);
  EXPECT_FLOAT_EQ(inv.factor(1), 0.5f);
  EXPECT_FLOAT_EQ(inv.factor(3), 0.25f);
  EXPECT_FLOAT_EQ(inv.factor(999), 0.001f);
  inv.max_staleness = 2;
  EXPECT_FLOAT_EQ(inv.factor(2), 1.f / 3);
  EXPECT_FLOAT_EQ(inv.factor(3), 0);

  staleness_policy damped;  // the default: full steps up to 2 updates stale, sqrt(2 / s) beyond
  EXPECT_EQ(damped.kind, "damped");
  EXPECT_FLOAT_EQ(damped.factor(0), 1);
  EXPECT_FLOAT_EQ(damped.factor(2), 1);
  EXPECT_FLOAT_EQ(damped.factor(8), 0.5f);
  EXPECT_FLOAT_EQ(damped.factor(200), 0.1f);
  damped.tolerance = 4;
  EXPECT_FLOAT_EQ(damped.factor(4), 1);
  EXPECT_FLOAT_EQ(damped.factor(16), 0.5f);
  damped.max_staleness = 10;
  EXPECT_FLOAT_EQ(damped.factor(9), std::sqrt(4.f / 9.f));
  EXPECT_FLOAT_EQ(damped.factor(11), 0);

  staleness_policy drop{"drop", 2};
  EXPECT_FLOAT_EQ(drop.factor(0), 1);
  EXPECT_FLOAT_EQ(drop.factor(2), 1);
  EXPECT_FLOAT_EQ(drop.factor(3), 0);
  drop.max_staleness = 0;
  EXPECT_FLOAT_EQ(drop.factor(0), 1);
  EXPECT_FLOAT_EQ(drop.factor(1), 0);
}

TEST(Staleness, ValidateNamesTheBadField) {
  EXPECT_NO_THROW(validate(staleness_policy{}));
  EXPECT_THAT(
      [] {
        validate(staleness_policy{"linear", 0});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("kind")));
  EXPECT_THAT(
      [] {
        validate(staleness_policy{"drop", -1});
      },
      ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("max_staleness")));
  EXPECT_THAT(
      [] {
        staleness_policy p;
        p.tolerance = 0;
        validate(p);
      },
      ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("tolerance")));
  EXPECT_THAT(
      [] {
        staleness_policy p;
        p.average = -2;
        validate(p);
      },
      ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("average")));
  staleness_policy off;
  off.average = 0;
  EXPECT_NO_THROW(validate(off));
}

}  // namespace
}  // namespace actrain
