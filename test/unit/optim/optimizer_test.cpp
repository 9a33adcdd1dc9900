// Each update rule against its first steps computed by hand, on 2-3 element vectors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <actrain/optim.hpp>

#include "optim/row_mean.hpp"

namespace actrain {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<optimizer> make(const std::string& kind, std::size_t n, float wd = 0.f,
                                float eps = 1e-8f) {
  optim_spec s;
  s.kind = kind;
  s.lr = 0.1f;
  s.momentum = 0.9f;
  s.weight_decay = wd;
  s.eps = eps;
  return make_optimizer(s, n);
}

void expect_near(const std::vector<float>& w, const std::vector<double>& want) {
  ASSERT_EQ(w.size(), want.size());
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], want[i], 1e-5) << "index " << i;
}

TEST(Optimizer, SgdSubtractsLrTimesGradient) {
  auto opt = make("sgd", 3);
  std::vector<float> w{1, 2, 3};
  const std::vector<float> g{0.5f, -1, 2};
  opt->step(w, g, 0.1f);
  expect_near(w, {1 - 0.05, 2 + 0.1, 3 - 0.2});
  opt->step(w, g, 0.1f);
  expect_near(w, {0.95 - 0.05, 2.1 + 0.1, 2.8 - 0.2});
  EXPECT_EQ(opt->steps(), 2);
  EXPECT_EQ(opt->state().slots.size(), 0u);
}

TEST(Optimizer, MomentumAccumulatesVelocity) {
  auto opt = make("momentum", 2);
  std::vector<float> w{1, 2};
  const std::vector<float> g{1, -2};
  opt->step(w, g, 0.1f);  // v = (1, -2); w -= 0.1 v
  expect_near(w, {0.9, 2.2});
  opt->step(w, g, 0.1f);  // v = 0.9 (1, -2) + (1, -2) = (1.9, -3.8)
  expect_near(w, {0.9 - 0.19, 2.2 + 0.38});
  opt->step(w, g, 0.1f);  // v = (2.71, -5.42)
  expect_near(w, {0.71 - 0.271, 2.58 + 0.542});
  expect_near(opt->state().slots.at(0), {2.71, -5.42});
}

TEST(Optimizer, NesterovLooksAhead) {
  auto opt = make("nesterov", 2);
  std::vector<float> w{1, 2};
  const std::vector<float> g{1, -2};
  opt->step(w, g, 0.1f);  // v = (1, -2); w -= 0.1 (g + 0.9 v) = 0.1 (1.9, -3.8)
  expect_near(w, {1 - 0.19, 2 + 0.38});
  opt->step(w, g, 0.1f);  // v = (1.9, -3.8); g + 0.9 v = (2.71, -5.42)
  expect_near(w, {0.81 - 0.271, 2.38 + 0.542});
}

TEST(Optimizer, AdagradDividesBySqrtOfSumOfSquaresPlusEps) {
  auto opt = make("adagrad", 2, 0.f, 0.5f);  // a large eps shows where it is added
  std::vector<float> w{1, 2};
  const std::vector<float> g{3, -4};
  opt->step(w, g, 0.1f);  // a = (9, 16): w -= 0.1 g / (sqrt(a) + 0.5)
  const double w0 = 1 - 0.1 * 3 / 3.5, w1 = 2 + 0.1 * 4 / 4.5;
  expect_near(w, {w0, w1});
  opt->step(w, g, 0.1f);  // a = (18, 32)
  expect_near(w, {w0 - 0.1 * 3 / (std::sqrt(18.0) + 0.5), w1 + 0.1 * 4 / (std::sqrt(32.0) + 0.5)});
  expect_near(opt->state().slots.at(0), {18, 32});
}

TEST(Optimizer, AdamBiasCorrectedWithEpsOutsideSqrt) {
  auto opt = make("adam", 2, 0.f, 0.1f);
  std::vector<float> w{1, 2};
  // Step 1: m = 0.1 g, v = 0.001 g^2; corrected: m^ = g, v^ = g^2; w -= 0.1 g / (|g| + 0.1).
  opt->step(w, std::vector<float>{3, -4}, 0.1f);
  const double a0 = 1 - 0.1 * 3 / 3.1, a1 = 2 + 0.1 * 4 / 4.1;
  expect_near(w, {a0, a1});
  // Step 2 with g = (1, 1): m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2,
  // corrections 1 - 0.9^2 = 0.19 and 1 - 0.999^2 = 0.001999.
  opt->step(w, std::vector<float>{1, 1}, 0.1f);
  const double m0 = 0.9 * 0.3 + 0.1, m1 = 0.9 * -0.4 + 0.1;
  const double v0 = 0.999 * 0.009 + 0.001, v1 = 0.999 * 0.016 + 0.001;
  expect_near(w, {a0 - 0.1 * (m0 / 0.19) / (std::sqrt(v0 / 0.001999) + 0.1),
                  a1 - 0.1 * (m1 / 0.19) / (std::sqrt(v1 / 0.001999) + 0.1)});
  const auto st = opt->state();
  EXPECT_EQ(st.steps, 2);
  ASSERT_EQ(st.slots.size(), 2u);
  expect_near(st.slots[0], {m0, m1});
  // Relative: 0.999f is 0.99900001, so 1 - beta2 in float is off from 0.001 by 1.3e-5.
  EXPECT_NEAR(st.slots[1][0], v0, v0 * 1e-4);
  EXPECT_NEAR(st.slots[1][1], v1, v1 * 1e-4);
}

TEST(Optimizer, AdamFirstStepIsLrTimesSignWithTinyEps) {
  auto opt = make("adam", 3);
  std::vector<float> w{0, 0, 0};
  opt->step(w, std::vector<float>{1e-3f, -50, 7}, 0.01f);
  expect_near(w, {-0.01, 0.01, -0.01});
}

TEST(Optimizer, WeightDecayAddsWdTimesWToTheGradient) {
  auto opt = make("sgd", 2, 0.1f);
  std::vector<float> w{1, 2};
  opt->step(w, std::vector<float>{0, 0}, 0.5f);  // w -= 0.5 * 0.1 w
  expect_near(w, {0.95, 1.9});
  opt->step(w, std::vector<float>{1, -1}, 0.5f);  // g' = (1 + 0.095, -1 + 0.19)
  expect_near(w, {0.95 - 0.5 * 1.095, 1.9 - 0.5 * -0.81});

  auto mom = make("momentum", 2, 0.1f);
  std::vector<float> u{1, 2};
  mom->step(u, std::vector<float>{1, 1}, 0.1f);  // v = g + 0.1 w = (1.1, 1.2)
  expect_near(u, {1 - 0.11, 2 - 0.12});
  expect_near(mom->state().slots.at(0), {1.1, 1.2});
}

TEST(Optimizer, RestoreRoundTripContinuesIdentically) {
  auto a = make("adam", 3);
  std::vector<float> wa{1, -2, 3};
  const std::vector<float> g1{0.3f, 0.1f, -0.7f}, g2{-0.2f, 0.5f, 0.05f};
  a->step(wa, g1, 0.01f);
  a->step(wa, g2, 0.01f);

  auto b = make("adam", 3);
  b->restore(a->state());
  EXPECT_EQ(b->steps(), 2);
  std::vector<float> wb = wa;
  a->step(wa, g1, 0.01f);
  b->step(wb, g1, 0.01f);
  EXPECT_EQ(wa, wb);  // bit-identical: same state, same arithmetic
  EXPECT_EQ(a->state().slots, b->state().slots);
}

TEST(Optimizer, RestoreRejectsWrongSizeOrSlotCount) {
  auto a = make("adam", 3);
  auto wrong_size = make("adam", 4);
  EXPECT_THAT([&] { wrong_size->restore(a->state()); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("expected 4")));
  auto sgd = make("sgd", 3);
  EXPECT_THAT([&] { a->restore(sgd->state()); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("slots")));
}

TEST(Optimizer, StepRejectsMismatchedSizes) {
  auto opt = make("sgd", 3);
  std::vector<float> w{1, 2};
  EXPECT_THROW(opt->step(w, std::vector<float>{1, 2}, 0.1f), std::invalid_argument);
}

TEST(Optimizer, StepIntoWritesWhatStepWouldBitForBitAndLeavesWAsItWas) {
  // 37 values: vector bodies and a scalar tail; weight decay on, so each rule reads w.
  for (const char* kind : {"sgd", "momentum", "nesterov", "adagrad", "adam"}) {
    SCOPED_TRACE(kind);
    auto in_place = make(kind, 37, 0.01f);
    auto into = make(kind, 37, 0.01f);
    std::vector<float> w(37), g(37);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = std::sin(0.7f * static_cast<float>(i)) * 3.f;
      g[i] = std::cos(1.3f * static_cast<float>(i)) - 0.2f;
    }
    auto other = w;
    for (int k = 0; k < 4; ++k) {
      in_place->step(w, g, 0.05f);
      const auto before = other;
      std::vector<float> out(other.size(), -7.f);
      into->step_into(other, g, 0.05f, out);
      EXPECT_EQ(other, before);  // the weights handed in are not written
      EXPECT_EQ(out, w);
      other = out;
    }
    EXPECT_EQ(into->steps(), 4);
    EXPECT_EQ(into->state().slots, in_place->state().slots);
    std::vector<float> short_out(36);
    EXPECT_THROW(into->step_into(other, g, 0.05f, short_out), std::invalid_argument);
  }
}

TEST(Optimizer, ValidateNamesTheBadField) {
  auto msg = [](optim_spec s) {
    try {
      validate(s);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  optim_spec ok;
  EXPECT_NO_THROW(validate(ok));
  optim_spec s = ok;
  s.kind = "rmsprop";
  EXPECT_THAT(msg(s), HasSubstr("kind"));
  EXPECT_THAT(msg(s), HasSubstr("rmsprop"));
  s = ok, s.lr = 0;
  EXPECT_THAT(msg(s), HasSubstr("lr"));
  s = ok, s.lr = NAN;
  EXPECT_THAT(msg(s), HasSubstr("lr"));
  s = ok, s.kind = "momentum", s.momentum = 1;
  EXPECT_THAT(msg(s), HasSubstr("momentum"));
  s = ok, s.kind = "adam", s.beta2 = 1;
  EXPECT_THAT(msg(s), HasSubstr("beta2"));
  s = ok, s.kind = "adagrad", s.eps = 0;
  EXPECT_THAT(msg(s), HasSubstr("eps"));
  s = ok, s.weight_decay = -1;
  EXPECT_THAT(msg(s), HasSubstr("weight_decay"));
  s = ok, s.schedule = "linear";
  EXPECT_THAT(msg(s), HasSubstr("schedule"));
  s = ok, s.schedule = "step", s.step_size = 0;
  EXPECT_THAT(msg(s), HasSubstr("step_size"));
  s = ok, s.schedule = "cosine", s.min_lr = 1;
  EXPECT_THAT(msg(s), HasSubstr("min_lr"));
  s = ok, s.kind = "bogus";
  EXPECT_THROW(make_optimizer(s, 3), std::invalid_argument);
}

std::string validation_error(const optim_spec& s) {
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

/// w -= lr * sign(g) * scale, with a step count; a rule of one's own.
class sign_rule final : public slot_optimizer {
 public:
  sign_rule(std::size_t n, float scale) : slot_optimizer(n, 1), scale_(scale) {}
  void step(span<float> w, span<const float> g, float lr) override {
    for (std::size_t i = 0; i < n_; ++i) {
      float s = g[i] > 0 ? 1.f : (g[i] < 0 ? -1.f : 0.f);
      w[i] -= lr * scale_ * s;
      slots_[0][i] += s;  // how often each weight moved, as its state
    }
    ++steps_;
  }

 private:
  float scale_;
};

TEST(optimizer_registry, a_registered_rule_is_made_by_name_and_keeps_its_state) {
  optim_spec s;
  s.kind = "sign_test";
  s.lr = 0.5f;
  s.options["scale"] = "2";
  EXPECT_THAT(validation_error(s), HasSubstr("unknown optimizer 'sign_test'"));
  {
    optimizer_registration reg{"sign_test", [](const optim_spec& spec, std::size_t n) {
                                 return std::make_unique<sign_rule>(
                                     n, std::stof(spec.options.at("scale")));
                               }};
    auto opt = make_optimizer(s, 3);
    std::vector<float> w{1, 1, 1};
    opt->step(w, std::vector<float>{3, -0.1f, 0}, s.lr);
    EXPECT_EQ(w, (std::vector<float>{0, 2, 1}));  // 1 -+ 0.5 * 2
    EXPECT_EQ(opt->steps(), 1);
    EXPECT_EQ(opt->state().slots.at(0), (std::vector<float>{1, -1, 0}));
    // A rule with step() only steps out of place too (optimizer's default step_into).
    const std::vector<float> before{0, 2, 1};
    std::vector<float> out(3);
    opt->step_into(before, std::vector<float>{-1, 0, 5}, s.lr, out);
    EXPECT_EQ(out, (std::vector<float>{1, 2, 0}));
    EXPECT_EQ(before, (std::vector<float>{0, 2, 1}));
    EXPECT_EQ(opt->steps(), 2);
    auto again = make_optimizer(s, 3);
    again->restore(opt->state());
    EXPECT_EQ(again->state().slots, opt->state().slots);
    EXPECT_THROW((optimizer_registration{"sign_test",
                                         [](const optim_spec&, std::size_t n) {
                                           return std::make_unique<sign_rule>(n, 1.f);
                                         }}),
                 std::invalid_argument);
  }
  EXPECT_THROW(make_optimizer(s, 3), std::invalid_argument);  // gone with its registration
  EXPECT_THROW((optimizer_registration{"adam",
                                       [](const optim_spec&, std::size_t n) {
                                         return std::make_unique<sign_rule>(n, 1.f);
                                       }}),
               std::invalid_argument);
  optim_spec builtin;
  builtin.options["scale"] = "2";
  EXPECT_THAT(validation_error(builtin), HasSubstr("scale"));
}

// What barriers and aggregators apply: one batch's gradient made of every slice's rows.
TEST(row_weighted_mean, weights_each_slice_by_its_rows_and_starts_over_after_take) {
  row_weighted_mean m;
  EXPECT_EQ(m.size(), 0u);
  m.add(std::vector<float>{4, 0, 0}, 2);
  m.add(std::vector<float>{0, 4, 0}, 1);
  m.add(std::vector<float>{0, 0, 4}, 0);  // no row count: counts as one row
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.rows(), 4);
  EXPECT_EQ(m.take(), (std::vector<float>{2, 1, 1}));  // (2 * 4, 4, 4) / 4
  EXPECT_EQ(m.rows(), 0);
  EXPECT_EQ(m.take(), (std::vector<float>{0, 0, 0}));  // nothing added: zeros of the same size
}

// A sync step's mean does not depend on the order its slices arrive in: in float,
// (1e8 + 1) - 1e8 is 0 and (1e8 - 1e8) + 1 is 1.
TEST(row_weighted_mean, the_mean_is_the_same_in_every_arrival_order) {
  const std::vector<std::vector<float>> slices{{1e8f, 3.f}, {1.f, 1e-7f}, {-1e8f, -3.f}};
  std::vector<int> order{0, 1, 2};
  std::vector<float> first;
  do {
    row_weighted_mean m;
    for (int i : order) m.add(slices[static_cast<std::size_t>(i)], 1);
    auto mean = m.take();
    if (first.empty()) first = mean;
    EXPECT_EQ(mean, first) << "order " << order[0] << order[1] << order[2];
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(first[0], 1.f / 3.f);
}

}  // namespace
}  // namespace actrain
