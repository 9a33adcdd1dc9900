// The per-row update rules and the lazily created, bounded row table, against numbers worked out
// by hand.
#include "optim/row_table.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace actrain {
namespace {

table_spec table(int dim, float init = 0.f, std::int64_t max_rows = 0) {
  table_spec t;
  t.rows = 1000000;
  t.dim = dim;
  t.init_scale = init;
  t.max_rows = max_rows;
  return t;
}

row_optim_spec rule(const char* kind, float lr) {
  row_optim_spec o;
  o.kind = kind;
  o.lr = lr;
  return o;
}

TEST(row_table, rows_are_created_on_first_touch_with_seeded_values) {
  row_table a(table(3, 0.1f), rule("sgd", 0.1f));
  row_table b(table(3, 0.1f), rule("sgd", 0.1f));
  std::uint64_t ids_a[] = {7, 999, 12};
  std::uint64_t ids_b[] = {12, 7};  // other order, other table: the same values per id
  std::vector<float> ra(9), rb(6);
  std::int64_t v[3];
  a.pull(ids_a, 3, ra.data(), v);
  b.pull(ids_b, 2, rb.data(), nullptr);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(v[0], 0);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(ra[c], rb[3 + c]);  // id 7
    EXPECT_EQ(ra[6 + c], rb[c]);  // id 12
    EXPECT_EQ(ra[c], table_init_value(table(3, 0.1f), 7, c));
    EXPECT_LT(std::fabs(ra[c]), 0.1f);
  }
  EXPECT_NE(ra[0], ra[6]);
  table_spec other = table(3, 0.1f);
  other.seed = 43;
  EXPECT_NE(table_init_value(other, 7, 0), ra[0]);
}

TEST(row_table, adagrad_first_steps_by_hand) {
  auto o = rule("adagrad", 0.5f);
  o.initial_accumulator = 0.1f;
  o.eps = 0;
  row_table t(table(2), o);
  std::uint64_t id = 5;
  float g1[] = {0.3f, -0.4f};
  t.push(&id, 1, g1, nullptr);
  // a = 0.1 + g^2; w = 0 - 0.5 * g / sqrt(a)
  float a0 = 0.1f + 0.09f, a1 = 0.1f + 0.16f;
  float w0 = -0.5f * 0.3f / std::sqrt(a0), w1 = 0.5f * 0.4f / std::sqrt(a1);
  EXPECT_NEAR(t.find(id)[0], w0, 1e-7);
  EXPECT_NEAR(t.find(id)[1], w1, 1e-7);
  float g2[] = {0.1f, 0.2f};
  t.push(&id, 1, g2, nullptr);
  a0 += 0.01f;
  a1 += 0.04f;
  EXPECT_NEAR(t.find(id)[0], w0 - 0.5f * 0.1f / std::sqrt(a0), 1e-7);
  EXPECT_NEAR(t.find(id)[1], w1 - 0.5f * 0.2f / std::sqrt(a1), 1e-7);
  EXPECT_EQ(t.version(id), 2);
}

TEST(row_table, ftrl_first_steps_by_hand) {
  auto o = rule("ftrl", 0.1f);  // alpha
  o.beta = 1.f;
  o.l1 = 0.2f;
  o.l2 = 0.5f;
  row_table t(table(1), o);
  std::uint64_t id = 3;
  // Step 1, g = 0.5 at w = 0, n = 0: sigma = (0.5 - 0) / 0.1 = 5; z = 0.5 - 5 * 0 = 0.5;
  // n = 0.25; |z| > l1: w = -(0.5 - 0.2) / ((1 + 0.5) / 0.1 + 0.5) = -0.3 / 15.5.
  float g = 0.5f;
  t.push(&id, 1, &g, nullptr);
  double w = -0.3 / 15.5;
  EXPECT_NEAR(t.find(id)[0], w, 1e-7);
  // Step 2, g = -0.4: sigma = (sqrt(0.41) - 0.5) / 0.1; z = 0.5 + 0.4 - sigma * w; n = 0.41.
  g = -0.4f;
  t.push(&id, 1, &g, nullptr);
  double sigma = (std::sqrt(0.41) - 0.5) / 0.1;
  double z = 0.5 - 0.4 - sigma * w;
  double w2 = std::fabs(z) <= 0.2 ? 0 : -(z - 0.2) / ((1 + std::sqrt(0.41)) / 0.1 + 0.5);
  EXPECT_NEAR(t.find(id)[0], w2, 1e-6);
  // A small gradient keeps |z| within l1: the weight is exactly zero (sparsity).
  row_table u(table(1), o);
  g = 0.1f;
  u.push(&id, 1, &g, nullptr);
  EXPECT_EQ(u.find(id)[0], 0.f);
}

TEST(row_table, ftrl_keeps_a_nonzero_initial_value_until_the_first_update) {
  auto o = rule("ftrl", 0.1f);
  o.l1 = 0.01f;
  o.l2 = 0.1f;
  row_table t(table(4, 0.05f), o);
  std::uint64_t id = 11;
  std::vector<float> w(4);
  t.pull(&id, 1, w.data(), nullptr);
  std::vector<float> zero(4, 0.f);
  t.push(&id, 1, zero.data(), nullptr);  // a zero gradient leaves w where it was
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(t.find(id)[c], w[c], 1e-7) << c;
}

TEST(row_table, sgd_and_staleness_per_row_version) {
  row_table t(table(1), rule("sgd", 0.5f));
  std::uint64_t ids[] = {1, 2};
  std::vector<float> w(2);
  std::int64_t base[2];
  t.pull(ids, 2, w.data(), base);
  float g[] = {1.f, 2.f};
  EXPECT_EQ(t.push(ids, 2, g, base), 0);  // fresh
  EXPECT_EQ(t.push(ids, 1, g, base), 1);  // row 1 moved on once since `base`
  EXPECT_FLOAT_EQ(t.find(1)[0], -1.f);
  EXPECT_FLOAT_EQ(t.find(2)[0], -1.f);
  EXPECT_EQ(t.version(1), 2);
}

TEST(row_table, a_bounded_table_evicts_the_least_recently_used_row) {
  row_table t(table(1, 0.f, 3), rule("sgd", 1.f));
  float g = 1.f;
  for (std::uint64_t id : {1, 2, 3}) t.push(&id, 1, &g, nullptr);
  std::uint64_t one = 1;
  float w;
  t.pull(&one, 1, &w, nullptr);  // 1 is now the most recent; 2 the least
  std::uint64_t four = 4;
  t.pull(&four, 1, &w, nullptr);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.evicted(), 1);
  EXPECT_EQ(t.find(2), nullptr);
  ASSERT_NE(t.find(1), nullptr);
  EXPECT_FLOAT_EQ(t.find(1)[0], -1.f);  // kept its learned value
  EXPECT_NE(t.find(3), nullptr);
  // Many more ids than room: the size stays bounded.
  for (std::uint64_t id = 100; id < 10000; ++id) t.pull(&id, 1, &w, nullptr);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_NE(t.find(9999), nullptr);
}

TEST(row_table, hottest_rows_by_traffic) {
  row_table t(table(1), rule("sgd", 0.1f));
  float w;
  for (int i = 0; i < 5; ++i) {
    std::uint64_t id = 42;
    t.pull(&id, 1, &w, nullptr);
  }
  for (std::uint64_t id : {7, 7, 9}) t.pull(&id, 1, &w, nullptr);
  auto hot = t.hottest(2);
  ASSERT_EQ(hot.size(), 2u);
  EXPECT_EQ(hot[0].first, 42u);
  EXPECT_EQ(hot[0].second, 5);
  EXPECT_EQ(hot[1].first, 7u);
}

TEST(table_partition, range_and_hash_cover_every_shard) {
  table_spec t = table(1);
  t.rows = 10;
  t.partition = "range";
  // shard_range(10, 3): [0,4) [4,7) [7,10)
  int expect[] = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
  for (std::uint64_t id = 0; id < 10; ++id) EXPECT_EQ(table_shard_of(t, 3, id), expect[id]) << id;
  t.partition = "hash";
  t.rows = 1u << 20;
  std::vector<int> count(4);
  for (std::uint64_t id = 0; id < 40000; ++id) count[table_shard_of(t, 4, id)] += 1;
  for (int c : count) EXPECT_NEAR(c, 10000, 500);
}

TEST(table_spec, bad_values_are_named) {
  table_spec t = table(0);
  EXPECT_THROW(
      {
        try {
          validate(t);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("table.dim"), std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
  row_optim_spec o = rule("rmsprop", 0.1f);
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = rule("adagrad", 0.1f);
  o.eps = 0;
  EXPECT_THROW(validate(o), std::invalid_argument);
}

}  // namespace
}  // namespace actrain
