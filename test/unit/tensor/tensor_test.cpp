// The tensor value type: shared immutable buffers, slices, reshapes, checks.
#include <actrain/tensor.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

namespace actrain {
namespace {

TEST(tensor, shape_helpers) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({3, 4, 5}), 60);
  EXPECT_EQ(shape_numel({3, 0}), 0);
  EXPECT_EQ(shape_string({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_THROW(shape_numel({2, -1}), std::invalid_argument);
  // {2^32, 2^32} has 2^64 elements: a plain product wraps to 0 (and would pass as an empty
  // tensor); it is refused instead. A zero dimension still makes any shape empty.
  const std::int64_t big = std::int64_t{1} << 32;
  EXPECT_THROW(shape_numel({big, big}), std::invalid_argument);
  std::int64_t n = -1;
  EXPECT_FALSE(try_shape_numel({big, big}, n));
  EXPECT_FALSE(try_shape_numel({3, -1}, n));
  EXPECT_TRUE(try_shape_numel({big, big, 0}, n));
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(try_shape_numel({big, 1 << 30}, n));  // 2^62 fits
  EXPECT_EQ(n, std::int64_t{1} << 62);
}

TEST(tensor, adopts_vector_without_copy) {
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  const float* p = v.data();
  tensor t(std::move(v), {2, 3});
  EXPECT_EQ(t.data(), p);  // the vector's storage moved into the tensor
  EXPECT_EQ(t.rank(), 2u);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.dim(1), 3);
  EXPECT_EQ(t.size(), 6u);
  EXPECT_EQ(t[5], 6.0f);
  tensor flat(std::vector<float>{1, 2});
  EXPECT_EQ(flat.shape(), (shape_t{2}));
}

TEST(tensor, constructor_rejects_size_mismatch) {
  try {
    tensor t(std::vector<float>(5), {2, 3});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
}

TEST(tensor, copies_share_the_buffer) {
  tensor a(std::vector<float>{1, 2, 3});
  EXPECT_EQ(a.use_count(), 1);
  tensor b = a;
  EXPECT_EQ(a.use_count(), 2);
  EXPECT_EQ(b.data(), a.data());
  {
    tensor c = b;
    EXPECT_EQ(a.use_count(), 3);
  }
  EXPECT_EQ(a.use_count(), 2);
}

TEST(tensor, slices_share_the_buffer) {
  tensor a(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}, {2, 4});
  tensor s = a.slice(3, 4);
  EXPECT_EQ(s.data(), a.data() + 3);
  EXPECT_EQ(s.shape(), (shape_t{4}));
  EXPECT_EQ(s[0], 3.0f);
  EXPECT_EQ(a.use_count(), 2);
  tensor ss = s.slice(1, 2);  // a slice of a slice keeps absolute offsets
  EXPECT_EQ(ss.data(), a.data() + 4);
  EXPECT_EQ(ss.to_vector(), (std::vector<float>{4, 5}));
  EXPECT_EQ(a.slice(8, 0).size(), 0u);  // empty slice at the end is allowed
  EXPECT_THROW(a.slice(5, 4), std::out_of_range);
  EXPECT_THROW(a.slice(9, 0), std::out_of_range);
  EXPECT_THROW(s.slice(1, 4), std::out_of_range);
}

TEST(tensor, reshape_shares_and_checks) {
  tensor a = tensor::filled({2, 6}, 1.5f);
  tensor r = a.reshape({3, 4});
  EXPECT_EQ(r.data(), a.data());
  EXPECT_EQ(r.shape(), (shape_t{3, 4}));
  EXPECT_EQ(a.shape(), (shape_t{2, 6}));  // the original is unchanged
  EXPECT_THROW(a.reshape({5, 2}), std::invalid_argument);
  EXPECT_EQ(a.slice(2, 6).reshape({2, 3}).data(), a.data() + 2);
}

TEST(tensor, zeros_and_filled) {
  auto z = tensor::zeros({3, 2});
  EXPECT_EQ(z.size(), 6u);
  for (float v : z.values()) EXPECT_EQ(v, 0.0f);
  auto f = tensor::filled({4}, -2.0f);
  for (float v : f.values()) EXPECT_EQ(v, -2.0f);
  auto scalar = tensor::zeros({});
  EXPECT_EQ(scalar.size(), 1u);
}

TEST(tensor, to_vector_is_a_private_copy) {
  tensor a(std::vector<float>{1, 2, 3});
  auto v = a.to_vector();
  v[0] = 99;
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_NE(v.data(), a.data());
}

TEST(tensor, all_finite) {
  EXPECT_TRUE(tensor().all_finite());
  EXPECT_TRUE(tensor(std::vector<float>{1, -1e30f, 0}).all_finite());
  EXPECT_FALSE(tensor(std::vector<float>{1, std::nanf(""), 0}).all_finite());
  EXPECT_FALSE(tensor(std::vector<float>{std::numeric_limits<float>::infinity()}).all_finite());
  EXPECT_FALSE(tensor(std::vector<float>{0, -std::numeric_limits<float>::infinity()}).all_finite());
  // a slice that excludes the bad value is finite
  tensor t(std::vector<float>{std::nanf(""), 1, 2});
  EXPECT_TRUE(t.slice(1, 2).all_finite());
}

TEST(tensor, all_finite_of_a_run_of_floats_sees_every_value) {
  std::vector<float> v(1001, 0.5f);  // odd length: the vectorized loop's tail counts too
  EXPECT_TRUE(all_finite(span<const float>(v)));
  for (std::size_t at : {std::size_t{0}, std::size_t{517}, std::size_t{1000}}) {
    auto bad = v;
    bad[at] = at == 517 ? -std::numeric_limits<float>::infinity() : std::nanf("");
    EXPECT_FALSE(all_finite(span<const float>(bad))) << "a bad value at " << at;
  }
  EXPECT_TRUE(all_finite(span<const float>(v.data(), 0)));
}

// A mark says the writer checked the values: copies, slices and reshapes keep it; a tensor built
// from a vector (as a deserializer builds one) or a reclaimed one does not have it.
TEST(tensor, a_finite_mark_travels_with_copies_and_views_and_nothing_else) {
  tensor t(std::vector<float>{1, std::nanf(""), 3, 4});
  EXPECT_FALSE(t.all_finite());
  t.mark_finite();  // a wrong mark, to see that it is what all_finite trusts
  EXPECT_TRUE(t.all_finite());
  tensor copy = t;
  EXPECT_TRUE(copy.all_finite());
  EXPECT_TRUE(t.slice(0, 2).all_finite());
  EXPECT_TRUE(t.reshape({2, 2}).all_finite());
  EXPECT_FALSE(tensor(t.to_vector()).all_finite());
  copy = tensor();
  std::vector<float> out;
  ASSERT_TRUE(t.reclaim(out));
  t = tensor(std::move(out));
  EXPECT_FALSE(t.all_finite());
}

TEST(tensor, default_is_empty) {
  tensor t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_EQ(t.use_count(), 0);
}

}  // namespace
}  // namespace actrain

namespace actrain {
namespace {

TEST(tensor_reclaim, only_the_last_owner_of_a_whole_buffer_gets_the_storage_back) {
  tensor t(std::vector<float>{1.f, 2.f, 3.f});
  const float* p = t.data();
  std::vector<float> out;
  {
    tensor copy = t;  // a receiver still reads it
    EXPECT_FALSE(t.reclaim(out));
    auto view = t.slice(1, 2);
    copy = tensor();
    EXPECT_FALSE(t.reclaim(out));     // the slice still shares the buffer
    EXPECT_FALSE(view.reclaim(out));  // a slice never reclaims
  }
  ASSERT_TRUE(t.reclaim(out));
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(out.data(), p);  // the same storage, not a copy
  EXPECT_EQ(out, (std::vector<float>{1.f, 2.f, 3.f}));
}

// Readers on other threads hold copies, read every value and drop them; the owner reclaims the
// storage only after the last one let go and then writes to it. Each reader checks what it read,
// so a reclaim before a reader finished shows as a wrong sum; under ThreadSanitizer
// (docs/testing.md, "ThreadSanitizer") the writes after reclaim() must not race with the reads.
TEST(tensor_reclaim, readers_on_other_threads_finish_before_the_owner_writes) {
  constexpr int rounds = 200, readers = 3;
  constexpr std::size_t n = 4096;
  std::atomic<int> bad_sums{0};
  for (int r = 0; r < rounds; ++r) {
    tensor t(std::vector<float>(n, static_cast<float>(r)));
    std::vector<std::thread> threads;
    for (int k = 0; k < readers; ++k)
      threads.emplace_back([copy = t, r, &bad_sums]() mutable {
        double sum = 0;
        for (std::size_t i = 0; i < copy.size(); ++i) sum += copy.data()[i];
        if (sum != static_cast<double>(r) * n) bad_sums.fetch_add(1);
        copy = tensor();  // the release this reader's reads happen before
      });
    std::vector<float> out;
    // Bounded: each reader ends after one pass over 4096 floats.
    for (int spin = 0; !t.reclaim(out) && spin < 10'000'000; ++spin) std::this_thread::yield();
    ASSERT_EQ(out.size(), n) << "round " << r << ": never reclaimed";
    for (auto& v : out) v = -1.f;  // the owner writes the storage it got back
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(bad_sums.load(), 0);
}

TEST(tensor_pool, recycles_released_buffers_and_allocates_otherwise) {
  tensor_pool pool(2);
  tensor a(std::vector<float>(5, 1.f));
  const float* pa = a.data();
  tensor held = a;
  pool.keep(std::move(a));
  auto fresh = pool.take(5);  // `held` still reads a's buffer: a new, zeroed vector
  EXPECT_NE(fresh.data(), pa);
  EXPECT_EQ(fresh, std::vector<float>(5, 0.f));
  held = tensor();
  auto recycled = pool.take(5);  // now released: its storage comes back
  EXPECT_EQ(recycled.data(), pa);
  EXPECT_EQ(pool.take(5).size(), 5u);  // the pool is empty again: a new one
}

}  // namespace
}  // namespace actrain
