// Sharding and mini-batch iteration.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include <actrain/data.hpp>

namespace actrain {
namespace {

/// rows x 2 features; row r holds (r, -r) and target r, so every row is identifiable.
dataset numbered(std::int64_t rows) {
  dataset d;
  d.rows = rows;
  d.features = 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    d.x.push_back(float(r));
    d.x.push_back(-float(r));
    d.y.push_back(float(r));
  }
  return d;
}

TEST(SliceRows, CopiesTheRange) {
  const dataset d = numbered(5);
  const dataset s = slice_rows(d, 1, 3);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.features, 2);
  EXPECT_EQ(s.x, (std::vector<float>{1, -1, 2, -2}));
  EXPECT_EQ(s.y, (std::vector<float>{1, 2}));
  EXPECT_EQ(slice_rows(d, 5, 5).rows, 0);
  EXPECT_THROW(slice_rows(d, 3, 6), std::out_of_range);
  EXPECT_THROW(slice_rows(d, 3, 2), std::out_of_range);
}

TEST(SplitShards, DisjointCoveringBalanced) {
  for (std::int64_t rows : {1, 7, 10, 103}) {
    for (int n : {1, 2, 3, 7}) {
      if (n > rows) continue;
      const dataset d = numbered(rows);
      const auto shards = split_shards(d, n);
      ASSERT_EQ(shards.size(), std::size_t(n));
      std::vector<float> seen;
      std::int64_t lo = rows, hi = 0, next = 0;
      for (int i = 0; i < n; ++i) {
        const auto& s = shards[i];
        lo = std::min(lo, s.rows);
        hi = std::max(hi, s.rows);
        const auto r = shard_range(rows, n, i);
        EXPECT_EQ(r.first, next) << "contiguous, in order";
        EXPECT_EQ(r.second - r.first, s.rows);
        next = r.second;
        seen.insert(seen.end(), s.y.begin(), s.y.end());
      }
      EXPECT_EQ(next, rows);
      EXPECT_LE(hi - lo, 1) << rows << " rows, " << n << " shards";
      std::vector<float> all(static_cast<std::size_t>(rows));
      std::iota(all.begin(), all.end(), 0.f);
      EXPECT_EQ(seen, all) << "each row exactly once";
    }
  }
  EXPECT_EQ(shard_range(10, 3, 0), (std::pair<std::int64_t, std::int64_t>{0, 4}));
  EXPECT_EQ(shard_range(10, 3, 2), (std::pair<std::int64_t, std::int64_t>{7, 10}));
}

TEST(SplitShards, RejectsBadCounts) {
  const dataset d = numbered(3);
  EXPECT_THROW(split_shards(d, 0), std::invalid_argument);
  EXPECT_THROW(split_shards(d, 4), std::invalid_argument);
  EXPECT_THROW(shard_range(3, 2, 2), std::invalid_argument);
}

/// The row ids (targets) of one epoch, batch by batch; checks x matches y on the way.
std::vector<std::vector<float>> epoch_of(batch_iterator& it) {
  std::vector<std::vector<float>> batches;
  std::vector<float> x, y;
  while (int n = it.next(x, y)) {
    EXPECT_EQ(x.size(), std::size_t(n) * 2);
    for (int r = 0; r < n; ++r) EXPECT_EQ(x[2 * r], y[r]);
    batches.push_back(y);
  }
  return batches;
}

std::vector<float> flat(const std::vector<std::vector<float>>& b) {
  std::vector<float> out;
  for (const auto& v : b) out.insert(out.end(), v.begin(), v.end());
  return out;
}

TEST(BatchIterator, EachRowOncePerEpoch) {
  const dataset d = numbered(10);
  batch_iterator it(d, 3, 42);
  EXPECT_EQ(it.batches_per_epoch(), 4);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(it.epoch(), e);
    const auto batches = epoch_of(it);
    ASSERT_EQ(batches.size(), 4u);
    EXPECT_EQ(batches.back().size(), 1u) << "short last batch";
    auto rows = flat(batches);
    std::sort(rows.begin(), rows.end());
    std::vector<float> all(10);
    std::iota(all.begin(), all.end(), 0.f);
    EXPECT_EQ(rows, all);
  }
  EXPECT_EQ(it.epoch(), 3);
}

TEST(BatchIterator, SeededAndReshuffledEachEpoch) {
  const dataset d = numbered(50);
  batch_iterator a(d, 8, 7), b(d, 8, 7), c(d, 8, 8);
  const auto a0 = flat(epoch_of(a)), b0 = flat(epoch_of(b)), c0 = flat(epoch_of(c));
  EXPECT_EQ(a0, b0) << "same seed, same order";
  EXPECT_NE(a0, c0) << "different seed, different order";
  std::vector<float> identity(50);
  std::iota(identity.begin(), identity.end(), 0.f);
  EXPECT_NE(a0, identity) << "shuffled";
  const auto a1 = flat(epoch_of(a));
  EXPECT_NE(a0, a1) << "a new order each epoch";
  EXPECT_EQ(a1, flat(epoch_of(b)));
}

TEST(BatchIterator, NoShuffleKeepsOrder) {
  const dataset d = numbered(5);
  batch_iterator it(d, 2, 1, /*shuffle=*/false);
  EXPECT_EQ(flat(epoch_of(it)), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(flat(epoch_of(it)), (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST(BatchIterator, DropLastSkipsTheShortBatch) {
  const dataset d = numbered(10);
  batch_iterator it(d, 3, 42, true, /*drop_last=*/true);
  EXPECT_EQ(it.batches_per_epoch(), 3);
  for (int e = 0; e < 2; ++e) {
    const auto batches = epoch_of(it);
    ASSERT_EQ(batches.size(), 3u);
    for (const auto& b : batches) EXPECT_EQ(b.size(), 3u);
    const auto rows = flat(batches);
    EXPECT_EQ(std::set<float>(rows.begin(), rows.end()).size(), 9u) << "no repeats";
  }
  EXPECT_THROW(batch_iterator(d, 0, 1), std::invalid_argument);
}

TEST(BatchIterator, ARangeReadInPlaceGivesTheSlicesBatches) {
  const dataset d = numbered(40);
  const dataset s = slice_rows(d, 11, 37);
  batch_iterator sliced(s, 5, 9);
  auto in_place = batch_iterator::over_rows(d, 11, 37, 5, 9);
  EXPECT_EQ(in_place.batches_per_epoch(), sliced.batches_per_epoch());
  for (int e = 0; e < 2; ++e) {
    const auto want = flat(epoch_of(sliced));
    const auto got = flat(epoch_of(in_place));
    ASSERT_EQ(want.size(), 26u);
    EXPECT_EQ(got, want) << "epoch " << e;
    EXPECT_EQ(*std::min_element(got.begin(), got.end()), 11.f);
    EXPECT_EQ(*std::max_element(got.begin(), got.end()), 36.f);
  }
  EXPECT_THROW(batch_iterator::over_rows(d, 30, 41, 5, 9), std::out_of_range);
  EXPECT_THROW(batch_iterator::over_rows(d, 12, 11, 5, 9), std::out_of_range);
  EXPECT_THROW(batch_iterator::over_rows(d, -1, 3, 5, 9), std::out_of_range);
}

TEST(InMemorySource, AWorkersRangeReadsThoseRowsWithoutACopy) {
  auto d = std::make_shared<dataset>(numbered(30));
  auto src = in_memory(d);
  auto reader = src->open(10, 20, 4, 3, /*shuffle=*/false);
  std::vector<float> x, y, rows;
  while (int n = reader->next(x, y)) rows.insert(rows.end(), y.begin(), y.begin() + n);
  std::vector<float> want(10);
  std::iota(want.begin(), want.end(), 10.f);
  EXPECT_EQ(rows, want);
  // Read in place: a change to the shared set shows in the next epoch's batches.
  d->x[2 * 15] = 99.f;
  reader->next(x, y);
  reader->next(x, y);
  EXPECT_EQ(x[2 * 1], 99.f) << "row 15 was copied when the reader opened";
}

}  // namespace
}  // namespace actrain
