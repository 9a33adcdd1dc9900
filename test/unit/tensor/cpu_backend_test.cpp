// Every CPU backend op against a naive double-precision loop or a hand-computed value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include <actrain/backend.hpp>
#include "naive_gemm.hpp"

namespace actrain {
namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

class cpu_backend_test : public ::testing::Test {
 protected:
  std::unique_ptr<backend> b = make_cpu_backend();
};

TEST_F(cpu_backend_test, identity_and_allocation) {
  EXPECT_EQ(b->name(), "cpu");
  EXPECT_TRUE(b->is_host());
  buffer buf = b->allocate(13);
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.size(), 13u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf.data()) % 64, 0u);
  buffer moved = std::move(buf);
  EXPECT_EQ(buf.data(), nullptr);
  EXPECT_EQ(moved.size(), 13u);
  EXPECT_EQ(b->allocate(0).data(), nullptr);
}

TEST_F(cpu_backend_test, upload_download_copy_fill) {
  auto src = random_values(10, 1);
  buffer d = b->allocate(10), e = b->allocate(10);
  b->upload(d.data(), src.data(), 10);
  b->copy(e.data(), d.data(), 10);
  std::vector<float> out(10);
  b->download(out.data(), e.data(), 10);
  EXPECT_EQ(out, src);
  b->fill(10, 2.5f, d.data());
  b->download(out.data(), d.data(), 10);
  for (float v : out) EXPECT_EQ(v, 2.5f);
}

using testing_gemm::naive_gemm;

TEST_F(cpu_backend_test, gemm_all_transposes_against_double_loops) {
  const int m = 7, n = 5, k = 11;  // odd, non-square, all different
  const float alpha = 1.25f, beta = -0.5f;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE("trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb));
      auto a = random_values(m * k, 10 + ta);
      auto bm = random_values(k * n, 20 + tb);
      auto c = random_values(m * n, 30);
      auto want = naive_gemm(ta, tb, m, n, k, alpha, a, bm, beta, c);
      b->gemm(ta, tb, m, n, k, alpha, a.data(), bm.data(), beta, c.data());
      for (int i = 0; i < m * n; ++i) EXPECT_NEAR(c[i], want[i], 1e-5) << "at " << i;
    }
}

TEST_F(cpu_backend_test, gemm_beta_zero_ignores_garbage_and_k_zero_scales) {
  auto a = random_values(3 * 2, 1), bm = random_values(2 * 4, 2);
  std::vector<float> c(12, std::nanf(""));
  std::vector<float> zeros(12, 0.0f);
  auto want = naive_gemm(false, false, 3, 4, 2, 1.0, a, bm, 0.0, zeros);
  b->gemm(false, false, 3, 4, 2, 1.0f, a.data(), bm.data(), 0.0f, c.data());
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(c[i], want[i], 1e-6);
  std::vector<float> c2(12, 2.0f);
  b->gemm(false, false, 3, 4, 0, 1.0f, nullptr, nullptr, 0.5f, c2.data());
  for (float v : c2) EXPECT_EQ(v, 1.0f);
}

TEST_F(cpu_backend_test, axpy_and_scale) {
  auto x = random_values(37, 3), y = random_values(37, 4);
  auto y0 = y;
  b->axpy(37, -0.75f, x.data(), y.data());
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(y[i], y0[i] - 0.75 * double(x[i]), 1e-6);
  b->scale(37, 3.0f, x.data());
  auto x0 = random_values(37, 3);
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(x[i], 3.0 * double(x0[i]), 1e-6);
}

TEST_F(cpu_backend_test, add_row_vector_and_column_sums) {
  const int rows = 5, cols = 3;
  auto x = random_values(rows * cols, 5), v = random_values(cols, 6);
  auto x0 = x;
  b->add_row_vector(rows, cols, v.data(), x.data());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      EXPECT_NEAR(x[r * cols + c], double(x0[r * cols + c]) + v[c], 1e-6);
  std::vector<float> out(cols, 123.0f);  // garbage is overwritten, not accumulated into
  b->column_sums(rows, cols, x0.data(), out.data());
  for (int c = 0; c < cols; ++c) {
    double s = 0;
    for (int r = 0; r < rows; ++r) s += x0[r * cols + c];
    EXPECT_NEAR(out[c], s, 1e-5);
  }
}

TEST_F(cpu_backend_test, relu_and_backward) {
  std::vector<float> x{-2, -0.0f, 0.5f, 3, -1e-7f, 1e-7f};
  std::vector<float> y(6);
  b->relu(6, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0.5f, 3, 0, 1e-7f}));
  std::vector<float> dy{1, 2, 3, 4, 5, 6};
  std::vector<float> dx(6);
  b->relu_backward(6, y.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 3, 4, 0, 6}));
  b->relu_backward(6, y.data(), dy.data(), dy.data());  // aliasing dy and dx
  EXPECT_EQ(dy, dx);
  b->relu(6, x.data(), x.data());  // in place
  EXPECT_EQ(x, y);
}

TEST_F(cpu_backend_test, relu_backward_on_a_long_vector_keeps_dy_exactly_where_y_is_positive) {
  // Long enough for the vectorized loop and an odd tail; dy holds inf and NaN where y <= 0 (they
  // must come out 0, not NaN), y holds -0 and the smallest denormal.
  const std::size_t n = 1037;
  std::vector<float> y(n), dy(n), dx(n);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = (i % 3 == 0) ? -static_cast<float>(i) : static_cast<float>(i % 7) - 2.0f;
    dy[i] = 0.25f * static_cast<float>(i) - 100.0f;
  }
  y[5] = -0.0f;
  y[6] = std::numeric_limits<float>::denorm_min();
  dy[3] = std::numeric_limits<float>::infinity();
  dy[9] = std::numeric_limits<float>::quiet_NaN();
  b->relu_backward(n, y.data(), dy.data(), dx.data());
  for (std::size_t i = 0; i < n; ++i) {
    float want = y[i] > 0.0f ? dy[i] : 0.0f;
    ASSERT_EQ(std::memcmp(&dx[i], &want, sizeof(float)), 0) << "element " << i;
  }
  EXPECT_EQ(dx[6], dy[6]);  // the denormal counts as positive
  auto copy = dy;
  b->relu_backward(n, y.data(), copy.data(), copy.data());  // in place
  EXPECT_EQ(std::memcmp(copy.data(), dx.data(), n * sizeof(float)), 0);
}

TEST_F(cpu_backend_test, softmax_xent_hand_checked) {
  // row 0: [0, 0], label 0 -> loss ln 2, softmax [1/2, 1/2], argmax 0 (first of ties) correct
  // row 1: [1, 3], label 1 -> loss log(1 + e^-2), correct
  // row 2: [2, -1], label 1 -> loss log(e^2 + e^-1) + 1 = 3 + log(1 + e^-3), wrong
  std::vector<float> logits{0, 0, 1, 3, 2, -1};
  std::vector<float> labels{0, 1, 1};
  std::vector<float> d(6);
  const float scale = 0.5f;
  auto r = b->softmax_xent(3, 2, logits.data(), labels.data(), scale, d.data());
  double want = std::log(2.0) + std::log1p(std::exp(-2.0)) + 3.0 + std::log1p(std::exp(-3.0));
  EXPECT_NEAR(r.loss, want, 1e-6);
  EXPECT_EQ(r.correct, 2);
  double p1 = 1.0 / (1.0 + std::exp(2.0));   // softmax of the 1 in [1, 3]
  double p2 = 1.0 / (1.0 + std::exp(-3.0));  // softmax of the 2 in [2, -1]
  std::vector<double> want_d{(0.5 - 1) * scale,    0.5 * scale, p1 * scale,
                             (1 - p1 - 1) * scale, p2 * scale,  (1 - p2 - 1) * scale};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(d[i], want_d[i], 1e-7) << i;

  // Without a gradient buffer: same loss and count.
  auto r2 = b->softmax_xent(3, 2, logits.data(), labels.data(), scale, nullptr);
  EXPECT_EQ(r2.loss, r.loss);
  EXPECT_EQ(r2.correct, r.correct);
}

TEST_F(cpu_backend_test, a_queued_loss_is_the_direct_loss_read_once) {
  // The CPU computes at once: queue_loss gives the direct call's sums and gradient, take_loss
  // hands them over once, and a bad label throws at queue_loss, as the direct call does.
  std::vector<float> logits{0, 0, 1, 3, 2, -1}, labels{0, 1, 1}, d_direct(6), d_queued(6);
  const auto want = b->softmax_xent(3, 2, logits.data(), labels.data(), 0.5f, d_direct.data());
  b->queue_loss(true, 3, 2, logits.data(), labels.data(), 0.5f, d_queued.data());
  const auto got = b->take_loss();
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.correct, 2);
  EXPECT_EQ(d_queued, d_direct);
  EXPECT_EQ(b->take_loss().loss, 0.0);  // read once
  std::vector<float> pred{1, 2}, target{0, 0};
  b->queue_loss(false, 2, 1, pred.data(), target.data(), 1.0f, nullptr);
  EXPECT_EQ(b->take_loss().loss, 5.0);  // 1^2 + 2^2
  std::vector<float> bad{0, 7, 1};
  EXPECT_THROW(b->queue_loss(true, 3, 2, logits.data(), bad.data(), 1.0f, nullptr),
               std::invalid_argument);
}

TEST_F(cpu_backend_test, does_not_record_and_runs_nothing_when_asked_to) {
  int runs = 0;
  EXPECT_EQ(b->record([&] { ++runs; }), nullptr);
  EXPECT_EQ(runs, 0);  // the caller runs its work itself
}

TEST_F(cpu_backend_test, softmax_xent_three_classes_and_aliasing) {
  std::vector<float> logits{1, 2, 3};
  std::vector<float> labels{2};
  auto r = b->softmax_xent(1, 3, logits.data(), labels.data(), 1.0f, logits.data());
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(r.loss, std::log(z) - 3.0, 1e-6);  // 0.40760596
  EXPECT_EQ(r.correct, 1);
  EXPECT_NEAR(logits[0], std::exp(1.0) / z, 1e-7);
  EXPECT_NEAR(logits[1], std::exp(2.0) / z, 1e-7);
  EXPECT_NEAR(logits[2], std::exp(3.0) / z - 1.0, 1e-7);
}

TEST_F(cpu_backend_test, softmax_xent_stable_for_large_logits) {
  // Naive exp() overflows at 89 in float; max-subtraction keeps everything finite.
  std::vector<float> logits{1000, 1000, 1000, 0, -1000, 1000, 5000, -5000};
  std::vector<float> labels{1, 1, 0, 1};
  std::vector<float> d(8);
  auto r = b->softmax_xent(4, 2, logits.data(), labels.data(), 1.0f, d.data());
  // ln2 + 1000 + 2000 + 10000 (each row: lse - z_label)
  EXPECT_NEAR(r.loss, std::log(2.0) + 1000.0 + 2000.0 + 10000.0, 1e-3);
  EXPECT_EQ(r.correct, 0);  // row 0 ties -> argmax 0, label 1
  // rows: tie -> [1/2, -1/2]; [1, 0] label 1 -> [1, -1]; [0, 1] label 0 -> [-1, 1];
  // [1, 0] label 1 -> [1, -1]
  std::vector<float> want{0.5f, -0.5f, 1, -1, -1, 1, 1, -1};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(d[i], want[i], 1e-6) << i;
  for (float v : d) EXPECT_TRUE(std::isfinite(v));
}

TEST_F(cpu_backend_test, softmax_xent_rejects_bad_labels) {
  std::vector<float> logits{0, 0};
  for (float bad : {2.0f, -1.0f, 0.5f, std::nanf("")}) {
    std::vector<float> labels{bad};
    EXPECT_THROW(b->softmax_xent(1, 2, logits.data(), labels.data(), 1.0f, nullptr),
                 std::invalid_argument)
        << bad;
  }
}

TEST_F(cpu_backend_test, squared_error_and_sum_squares) {
  std::vector<float> pred{1, 2, 3}, target{0, 2, 5};
  std::vector<float> d(3);
  auto r = b->squared_error(3, pred.data(), target.data(), 0.25f, d.data());
  EXPECT_DOUBLE_EQ(r.loss, 1.0 + 0.0 + 4.0);
  EXPECT_EQ(r.correct, 0);
  EXPECT_EQ(d, (std::vector<float>{0.5f, 0.0f, -1.0f}));  // 2 (pred - target) / 4
  EXPECT_DOUBLE_EQ(b->squared_error(3, pred.data(), target.data(), 1.0f, nullptr).loss, 5.0);
  std::vector<float> x{3, -4, 0.5f};
  EXPECT_DOUBLE_EQ(b->sum_squares(3, x.data()), 25.25);
}

// The count is process-wide and the host's: set_blas_threads sets it, and actrain's default
// (default_blas_threads, what the engine calls) no longer touches it afterwards.
TEST_F(cpu_backend_test, blas_threads_can_be_set) {
  set_blas_threads(2);
  EXPECT_EQ(blas_threads(), 2);
  EXPECT_FALSE(default_blas_threads(1));
  EXPECT_EQ(blas_threads(), 2);
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  auto a = random_values(4, 1), bm = random_values(4, 2);
  std::vector<float> c(4);
  b->gemm(false, false, 2, 2, 2, 1.0f, a.data(), bm.data(), 0.0f, c.data());
  EXPECT_NEAR(c[0], double(a[0]) * bm[0] + double(a[1]) * bm[2], 1e-6);
}

}  // namespace
}  // namespace actrain
