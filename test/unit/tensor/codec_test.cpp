// Half precision round trips and top-k selection, against IEEE 754 binary16 worked by hand.
#include "tensor/codec.hpp"

#include <cmath>
#include <limits>
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
