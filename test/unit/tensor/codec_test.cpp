// Half precision round trips and top-k selection, against IEEE 754 binary16 worked by hand.
#include "tensor/codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace actrain {
namespace {

TEST(codec, half_precision_bit_patterns_by_hand) {
  std::vector<float> x = {1.f, -2.f, 0.5f, 65504.f, 0.f, 1.f / 1024, 0.1f};
  std::vector<std::uint16_t> h(x.size());
  encode_half(x.data(), x.size(), h.data());
  // sign | 5-bit exponent (bias 15) | 10-bit fraction
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0xc000);
  EXPECT_EQ(h[2], 0x3800);
  EXPECT_EQ(h[3], 0x7bff);  // the largest finite half
  EXPECT_EQ(h[4], 0x0000);
  EXPECT_EQ(h[5], 0x1400);
  EXPECT_EQ(h[6], 0x2e66);  // 0.1 rounds to 0.0999755859375
  std::vector<float> back(x.size());
  decode_half(h.data(), h.size(), back.data());
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(back[i], x[i]) << i;
  EXPECT_FLOAT_EQ(back[6], 0.0999755859375f);
  float big = 1e6f;
  std::uint16_t hb;
  encode_half(&big, 1, &hb);
  float again;
  decode_half(&hb, 1, &again);
  EXPECT_TRUE(std::isinf(again));  // beyond the range: infinity, which receivers refuse
}

TEST(codec, relative_error_of_half_is_within_2_to_the_minus_11) {
  std::vector<float> x;
  for (int i = 1; i < 2000; ++i) x.push_back(std::ldexp(1.f + i / 2000.f, (i % 20) - 10));
  std::vector<std::uint16_t> h(x.size());
  std::vector<float> back(x.size());
  encode_half(x.data(), x.size(), h.data());
  decode_half(h.data(), h.size(), back.data());
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -11)) << x[i];
}

// Runs of 8 go through the processor's F16C instructions where it has them and single values
// through the compiler's conversion: both must give the same bits, ties, subnormals and
// overflow included.
TEST(codec, vector_and_single_value_conversions_agree_bit_for_bit) {
  std::vector<float> x;
  for (int e = -26; e <= 17; ++e)
    for (int m = 0; m < 64; ++m) {
      float v = std::ldexp(1.f + m / 64.f + 1.f / 4096, e);  // 1/4096: halfway cases
      x.push_back(v);
      x.push_back(-v);
    }
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::denorm_min());
  x.resize(x.size() / 8 * 8);
  std::vector<std::uint16_t> whole(x.size()), one(x.size());
  encode_half(x.data(), x.size(), whole.data());
  for (std::size_t i = 0; i < x.size(); ++i) encode_half(&x[i], 1, &one[i]);
  EXPECT_EQ(whole, one);
  std::vector<float> back_whole(x.size()), back_one(x.size());
  decode_half(whole.data(), whole.size(), back_whole.data());
  for (std::size_t i = 0; i < x.size(); ++i) decode_half(&whole[i], 1, &back_one[i]);
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::memcmp(&back_whole[i], &back_one[i], sizeof(float)), 0) << x[i];
}

// top_k against its definition (sort by score, larger first, ties by the lower index; take k;
// return in index order) on random scores with many ties.
TEST(codec, top_k_matches_a_full_sort_on_random_scores_with_ties) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::size_t n = 1 + rng() % 300;
    std::vector<float> s(n);
    for (auto& v : s) v = static_cast<float>(rng() % 17);  // many equal scores
    std::size_t k = rng() % (n + 2);
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return s[a] > s[b]; });
    order.resize(std::min(k, n));
    std::sort(order.begin(), order.end());
    ASSERT_EQ(top_k(s, k), order) << "trial " << trial;
  }
}

// Large vectors take the sampled path: the same answer as a full sort, with spread-out scores,
// with a few huge ones hidden between the sample's strides, and with all scores equal.
TEST(codec, top_k_of_large_vectors_matches_a_full_sort) {
  std::mt19937 rng(5);
  std::normal_distribution<float> z(0.f, 1.f);
  auto check = [](const std::vector<float>& s, std::size_t k) {
    std::vector<std::uint32_t> order(s.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return s[a] > s[b]; });
    order.resize(k);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(top_k(s, k), order);
  };
  std::vector<float> spread(100000);
  for (auto& v : spread) v = std::fabs(z(rng));
  check(spread, 1000);
  check(spread, 1);
  std::vector<float> hidden(100000, 0.f);
  for (std::size_t i = 0; i < 1000; ++i) hidden[i * 97 + 1] = 1.f + static_cast<float>(i);
  check(hidden, 1000);
  check(hidden, 900);
  check(std::vector<float>(50000, 2.f), 500);
}

TEST(codec, top_k_takes_the_largest_and_breaks_ties_by_index) {
  std::vector<float> s = {0.5f, 3.f, 1.f, 3.f, 2.f, 0.f};
  EXPECT_EQ(top_k(s, 2), (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(top_k(s, 3), (std::vector<std::uint32_t>{1, 3, 4}));
  EXPECT_EQ(top_k(s, 0), (std::vector<std::uint32_t>{}));
  EXPECT_EQ(top_k(s, 10).size(), 6u);
  std::vector<float> ties(5, 1.f);
  EXPECT_EQ(top_k(ties, 2), (std::vector<std::uint32_t>{0, 1}));
}

}  // namespace
}  // namespace actrain
