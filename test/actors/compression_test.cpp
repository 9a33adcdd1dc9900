// Dense gradient compression: the worker's encoder (fp16, top-k with error feedback) by hand, the
// receivers' expansion and what they refuse, a shard applying a compressed push exactly as the
// plain one, and whole jobs (async and sync) with the bytes they pushed.
#include <cmath>
#include <limits>
#include <numeric>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include <actrain/model.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/system.hpp>
#include "actors/compression.hpp"
#include "data/readers.hpp"
#include "test/actors/actor_fixture.hpp"
#include "test/support/jobs.hpp"

namespace actrain {
namespace {

std::vector<float> values_of(const gradient& g) {
  return std::vector<float>(g.values.data(), g.values.data() + g.values.size());
}

TEST(GradientEncoder, TopkSendsTheLargestEntriesAndKeepsTheRestAsResidual) {
  gradient_encoder enc("topk", 0.5, 4);
  std::vector<float> g1{0.1f, -0.5f, 0.2f, 0.05f};
  gradient a;
  enc.encode(a, g1.data(), 0, 4);
  // k = ceil(0.5 * 4) = 2: |-0.5| and |0.2| go, in index order.
  EXPECT_EQ(a.indices, (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(values_of(a), (std::vector<float>{-0.5f, 0.2f}));
  EXPECT_EQ(a.length, 4);
  EXPECT_EQ(enc.residual(), (std::vector<float>{0.1f, 0.f, 0.f, 0.05f}));
  // The next step's gradient joins the residual: 0.1 + 0.1 and 0.05 + 0.1 now lead.
  std::vector<float> g2{0.1f, 0.01f, -0.02f, 0.1f};
  gradient b;
  enc.encode(b, g2.data(), 0, 4);
  EXPECT_EQ(b.indices, (std::vector<std::uint32_t>{0, 3}));
  EXPECT_FLOAT_EQ(b.values[0], 0.2f);
  EXPECT_FLOAT_EQ(b.values[1], 0.15f);
  EXPECT_FLOAT_EQ(enc.residual()[1], 0.01f);
  EXPECT_FLOAT_EQ(enc.residual()[2], -0.02f);
  EXPECT_EQ(payload_bytes(b), 2 * 4 + 2 * 4);
}

TEST(GradientEncoder, ErrorFeedbackLosesNothingOverManySteps) {
  // Two slices of one vector, each with its own part of the residual: what was sent plus what is
  // held back is what was computed.
  const std::size_t n = 1000;
  gradient_encoder enc("topk", 0.01, n);
  std::vector<double> computed(n, 0), sent(n, 0);
  std::mt19937 rng(7);
  std::normal_distribution<float> z(0.f, 1.f);
  std::vector<float> grad(n);
  for (int step = 0; step < 200; ++step) {
    for (std::size_t i = 0; i < n; ++i) {
      grad[i] = z(rng) * (i % 7 == 0 ? 5.f : 1.f);
      computed[i] += grad[i];
    }
    for (auto [b, len] : {std::pair<std::size_t, std::size_t>{0, 400}, {400, 600}}) {
      gradient g;
      enc.encode(g, grad.data(), b, len);
      ASSERT_EQ(g.indices.size(), static_cast<std::size_t>(std::ceil(0.01 * len)));
      ASSERT_EQ(expand_gradient(g, len, "test"), caf::none);
      for (std::size_t i = 0; i < len; ++i) sent[b + i] += g.values[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_NEAR(sent[i] + enc.residual()[i], computed[i], 1e-3) << "entry " << i;
}

TEST(GradientEncoder, Fp16RoundTripsValuesHalfPrecisionHolds) {
  gradient_encoder enc("fp16", 0, 4);
  std::vector<float> g{0.5f, -1.25f, 3.f, 0.f};
  gradient a;
  enc.encode(a, g.data(), 0, 4);
  EXPECT_TRUE(a.values.empty());
  EXPECT_EQ(a.half_values.size(), 4u);
  EXPECT_EQ(payload_bytes(a), 8);
  ASSERT_EQ(expand_gradient(a, 4, "test"), caf::none);
  EXPECT_EQ(values_of(a), g);
  EXPECT_TRUE(a.half_values.empty());
  EXPECT_FALSE(is_compressed(a));
  // Beyond half precision's range a value becomes infinity, which every receiver refuses.
  std::vector<float> big{1e5f};
  gradient b;
  enc.encode(b, big.data(), 0, 1);
  ASSERT_EQ(expand_gradient(b, 1, "test"), caf::none);
  EXPECT_TRUE(std::isinf(b.values[0]));
}

TEST(GradientEncoder, BadKindsAndFractionsAreRefused) {
  EXPECT_THROW(gradient_encoder("zip", 0.1, 4), std::invalid_argument);
  EXPECT_THROW(gradient_encoder("topk", 0, 4), std::invalid_argument);
  EXPECT_THROW(gradient_encoder("topk", 1.5, 4), std::invalid_argument);
}

/// What a misbehaving peer may send: each is refused with what is wrong, and nothing is expanded.
TEST(ExpandGradient, RefusesMalformedCompressedSlices) {
  auto refused = [](gradient g, std::size_t n) {
    auto err = expand_gradient(g, n, "shard 0");
    return err ? describe_error(err) : std::string();
  };
  gradient topk;
  topk.worker = 3;
  topk.indices = {0, 2};
  topk.values = tensor(std::vector<float>{1.f, 2.f});
  topk.length = 3;
  EXPECT_EQ(refused(topk, 3), "");
  EXPECT_NE(refused(topk, 4).find("top-k of a slice of 3 values, expected 4"), std::string::npos);
  auto out_of_range = topk;
  out_of_range.indices = {0, 3};
  EXPECT_NE(refused(out_of_range, 3).find("index 3 is outside the slice of 3"), std::string::npos);
  auto unordered = topk;
  unordered.indices = {2, 0};
  EXPECT_NE(refused(unordered, 3).find("index 0 does not follow 2"), std::string::npos);
  auto repeated = topk;
  repeated.indices = {1, 1};
  EXPECT_NE(refused(repeated, 3).find("does not follow"), std::string::npos);
  auto short_values = topk;
  short_values.values = tensor(std::vector<float>{1.f});
  EXPECT_NE(refused(short_values, 3).find("1 top-k values for 2 indices"), std::string::npos);
  auto huge = topk;
  huge.length = std::numeric_limits<std::int64_t>::max();  // claims, never allocates
  EXPECT_NE(refused(huge, 3).find("expected 3"), std::string::npos);
  gradient half;
  half.worker = 3;
  half.half_values = {0, 0};
  EXPECT_NE(refused(half, 3).find("2 half-precision values, expected 3"), std::string::npos);
  auto both = half;
  both.indices = {0};
  EXPECT_NE(refused(both, 2).find("together with"), std::string::npos);
  EXPECT_NE(refused(both, 2).find("worker 3"), std::string::npos);
}

struct compressed_push : testing::front_probe {};

TEST_F(compressed_push, a_shard_applies_top_k_as_the_plain_slice_with_zeros) {
  make_shard();  // {1, 2, 3}, SGD at lr 1
  gradient g{0, 0, 0, 1, tensor(std::vector<float>{0.5f, -1.f})};
  g.indices = {0, 2};
  g.length = 3;
  self->send(sh, push_atom::value, g);
  gradient h{0, 1, 1, 1, {}};
  std::vector<float> plain{0.25f, 0.5f, -0.75f};
  gradient_encoder("fp16", 0, 3).encode(h, plain.data(), 0, 3);
  self->send(sh, push_atom::value, h);
  pull(sh, 0, 2);
  settle();
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(acks.size(), 2u);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].version, 2);
  EXPECT_EQ(values_of(answers[0]),
            (std::vector<float>{1.f - 0.5f - 0.25f, 2.f - 0.5f, 3.f + 1.f + 0.75f}));
}

TEST_F(compressed_push, a_shard_refuses_a_malformed_one_and_keeps_its_weights) {
  make_shard();
  gradient g{5, 0, 0, 1, tensor(std::vector<float>{9.f})};
  g.indices = {7};
  g.length = 3;
  self->send(sh, push_atom::value, g);
  pull(sh, 0, 0);
  settle();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("shard 0: gradient from worker 5: top-k index 7"), std::string::npos)
      << errors[0];
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(values_of(answers[0]), (std::vector<float>{1.f, 2.f, 3.f}));
  EXPECT_EQ(stats(sh).rejected, 1);
}

struct compressed_job : ::testing::Test {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  compressed_job() {
    prepare_config(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  /// The linear job at `mode` with `compression`: its result and its train MSE over least
  /// squares' (1 = the closed form).
  std::pair<engine_result, double> run(const std::string& mode, const std::string& compression,
                                       double fraction = 0.25) {
    auto job = test::linear_job(2);
    job.mode = mode;
    job.compression = compression;
    job.topk_fraction = fraction;
    auto data = std::make_shared<job_data>(load_job_data(job));
    fit_model_to_data(job, *data);
    auto res = run_job(*sys, job, data);
    auto cpu = make_cpu_backend();
    double ratio = 0;
    if (res.ok)
      ratio =
          evaluate(job.model, res.params, data->train, *cpu).loss / least_squares_mse(data->train);
    return {std::move(res), ratio};
  }
};

TEST_F(compressed_job, async_and_sync_reach_least_squares_and_push_the_bytes_they_should) {
  // 21 parameters over 2 shards (11 + 10); each worker makes 10000 / 32 = 313 steps per epoch.
  const std::int64_t steps = 2 * 6 * 313;
  for (const std::string mode : {"async", "sync"}) {
    auto [plain, plain_ratio] = run(mode, "none");
    auto [half, half_ratio] = run(mode, "fp16");
    auto [topk, topk_ratio] = run(mode, "topk");
    ASSERT_TRUE(plain.ok && half.ok && topk.ok) << plain.error << half.error << topk.error;
    // In async a worker done first may take a share of the other's epochs not started
    // (coordinator_test), and a share cut from a range adds a short batch per epoch: there the
    // steps are the pushes the shards counted (every step pushes to both), at least 2 x 6 x 313.
    auto steps_of = [&](const engine_result& r) -> std::int64_t {
      if (mode == "sync") return steps;
      EXPECT_EQ(r.shards.size(), 2u);
      if (r.shards.size() != 2) return -1;
      EXPECT_EQ(r.shards[0].pushes, r.shards[1].pushes);
      EXPECT_GE(r.shards[0].pushes, steps);
      return r.shards[0].pushes;
    };
    EXPECT_EQ(plain.bytes_pushed, steps_of(plain) * 21 * 4) << mode;
    EXPECT_EQ(half.bytes_pushed, steps_of(half) * 21 * 2) << mode;
    // top-k 25%: ceil(2.75) = 3 of 11 and ceil(2.5) = 3 of 10, each an index and a value.
    EXPECT_EQ(topk.bytes_pushed, steps_of(topk) * (3 + 3) * 8) << mode;
    // Weights travel uncompressed: the same bytes received per step whatever the compression
    // (exactly in sync; in async a taken share adds a pull or two to some 3756 steps).
    if (mode == "sync")
      EXPECT_EQ(plain.bytes_received, half.bytes_received);
    else
      EXPECT_NEAR(static_cast<double>(half.bytes_received) / static_cast<double>(steps_of(half)) /
                      (static_cast<double>(plain.bytes_received) /
                       static_cast<double>(steps_of(plain))),
                  1.0, 0.01);
    EXPECT_LT(plain_ratio, 1.01) << mode;
    EXPECT_LT(half_ratio, 1.01) << mode;
    EXPECT_LT(topk_ratio, 1.05) << mode;
  }
}

}  // namespace
}  // namespace actrain
