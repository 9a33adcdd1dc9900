// Every kernel of the CUDA backend against its CPU twin (make_cpu_backend) on random inputs of
// awkward shapes (1, odd, just past a block or warp multiple). Tolerances are stated per test:
// exact where both sides do the same single rounding, else relative to the magnitude the error
// can grow from (sum of |terms|).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "test/unit/cuda/cuda_test_util.hpp"

namespace actrain::test {
namespace {

const std::size_t kLengths[] = {1, 31, 1025, 100003};

class kernels : public cuda_vs_cpu {
 protected:
  // gemm over every transpose combination and awkward shapes (k = 0 included); error bound
  // relative to |alpha| sum_k |a_ik b_kj| + |beta c_ij|.
  void check_gemm(double tol) {
    const std::tuple<int, int, int> shapes[] = {{1, 1, 1},     {7, 13, 5},      {33, 65, 129},
                                                {64, 10, 256}, {257, 130, 511}, {5, 3, 0}};
    std::uint32_t seed = 100;
    for (auto [m, n, k] : shapes)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          const auto a = random_floats(std::size_t(m) * k, ++seed);
          const auto b = random_floats(std::size_t(k) * n, ++seed);
          const auto c = random_floats(std::size_t(m) * n, ++seed);
          const float alpha = 0.75f, beta = -0.5f;
          auto A = put(a), B = put(b), C = put(c);
          cpu_->gemm(ta, tb, m, n, k, alpha, A.cpu.data(), B.cpu.data(), beta, C.cpu.data());
          gpu_->gemm(ta, tb, m, n, k, alpha, A.gpu.data(), B.gpu.data(), beta, C.gpu.data());
          std::vector<double> scale(std::size_t(m) * n);
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
              double s = 0;
              for (int p = 0; p < k; ++p) {
                const float av = ta ? a[std::size_t(p) * m + i] : a[std::size_t(i) * k + p];
                const float bv = tb ? b[std::size_t(j) * k + p] : b[std::size_t(p) * n + j];
                s += std::fabs(double(av) * bv);
              }
              const std::size_t ij = std::size_t(i) * n + j;
              scale[ij] = std::fabs(alpha) * s + std::fabs(beta * c[ij]);
            }
          expect_close(get_gpu(C), get_cpu(C), scale, tol,
                       "gemm m=" + std::to_string(m) + " n=" + std::to_string(n) +
                           " k=" + std::to_string(k) + " trans_a=" + std::to_string(ta) +
                           " trans_b=" + std::to_string(tb));
        }
  }
};

class kernels_tf32 : public kernels {
 protected:
  kernels_tf32() { tf32_ = true; }
};

TEST_F(kernels, upload_download_copy_round_trip) {
  for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(3) << 20}) {
    const auto host = random_floats(n, 11);
    auto scratch = host;
    auto dev = gpu_->allocate(n);
    gpu_->upload(dev.data(), scratch.data(), n);
    // upload stages the data before returning: the caller may overwrite its copy at once.
    std::fill(scratch.begin(), scratch.end(), -7.f);
    auto dev2 = gpu_->allocate(n);
    gpu_->copy(dev2.data(), dev.data(), n);
    expect_same(read(*gpu_, dev2), host, "round trip n=" + std::to_string(n));
  }
}

TEST_F(kernels, uploads_queued_back_to_back_each_land_in_their_own_buffer) {
  // A training step uploads parameters, x and y without waiting in between; ten uploads wrap the
  // backend's staging slots twice, and sizes grow so slots are re-allocated while others are
  // still in flight. The one host vector is overwritten after every call.
  std::vector<float> scratch;
  std::vector<std::vector<float>> want;
  std::vector<buffer> dev;
  for (int i = 0; i < 10; ++i) {
    const std::size_t n = std::size_t(1000) << (i % 5);
    want.push_back(random_floats(n, 100 + i));
    scratch = want.back();
    dev.push_back(gpu_->allocate(n));
    gpu_->upload(dev.back().data(), scratch.data(), n);
    std::fill(scratch.begin(), scratch.end(), float(-i));
  }
  for (int i = 0; i < 10; ++i)
    expect_same(read(*gpu_, dev[i]), want[i], "upload " + std::to_string(i));
}

TEST_F(kernels, fill_and_scale_are_exact) {
  for (std::size_t n : kLengths) {
    auto t = put(random_floats(n, 1));
    cpu_->scale(n, -0.37f, t.cpu.data());
    gpu_->scale(n, -0.37f, t.gpu.data());
    expect_same(get_gpu(t), get_cpu(t), "scale n=" + std::to_string(n));
    cpu_->fill(n, 2.5f, t.cpu.data());
    gpu_->fill(n, 2.5f, t.gpu.data());
    expect_same(get_gpu(t), get_cpu(t), "fill n=" + std::to_string(n));
  }
}

TEST_F(kernels, axpy_within_one_rounding) {
  // Tolerance 1e-6 of |y| + |alpha x|: one side may fuse the multiply-add, the other not.
  for (std::size_t n : kLengths) {
    const auto x = random_floats(n, 2), y = random_floats(n, 3);
    auto tx = put(x), ty = put(y);
    const float alpha = 1.7f;
    cpu_->axpy(n, alpha, tx.cpu.data(), ty.cpu.data());
    gpu_->axpy(n, alpha, tx.gpu.data(), ty.gpu.data());
    std::vector<double> scale(n);
    for (std::size_t i = 0; i < n; ++i) scale[i] = std::fabs(y[i]) + std::fabs(alpha * x[i]);
    expect_close(get_gpu(ty), get_cpu(ty), scale, 1e-6, "axpy n=" + std::to_string(n));
  }
}

TEST_F(kernels, gemm_fp32_rel_1e_5) {
  check_gemm(1e-5);
}

TEST_F(kernels_tf32, gemm_tf32_rel_2e_3) {
  check_gemm(2e-3);
}

const std::pair<int, int> kMatrices[] = {{1, 1}, {37, 129}, {1000, 3}, {3, 1000}, {513, 257}};

TEST_F(kernels, add_row_vector_is_exact) {
  for (auto [rows, cols] : kMatrices) {
    auto x = put(random_floats(std::size_t(rows) * cols, 4));
    auto v = put(random_floats(std::size_t(cols), 5));
    cpu_->add_row_vector(rows, cols, v.cpu.data(), x.cpu.data());
    gpu_->add_row_vector(rows, cols, v.gpu.data(), x.gpu.data());
    expect_same(get_gpu(x), get_cpu(x),
                "add_row_vector " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

TEST_F(kernels, column_sums_rel_1e_5) {
  // Summation order differs (the GPU folds 32 strided partials): 1e-5 of sum |x_rc|.
  for (auto [rows, cols] : kMatrices) {
    const auto host = random_floats(std::size_t(rows) * cols, 6);
    auto x = put(host);
    auto out = put(std::vector<float>(std::size_t(cols), 99.f));
    cpu_->column_sums(rows, cols, x.cpu.data(), out.cpu.data());
    gpu_->column_sums(rows, cols, x.gpu.data(), out.gpu.data());
    std::vector<double> scale(std::size_t(cols), 0.0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) scale[c] += std::fabs(host[std::size_t(r) * cols + c]);
    expect_close(get_gpu(out), get_cpu(out), scale, 1e-5,
                 "column_sums " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

TEST_F(kernels, relu_and_backward_are_exact_in_place_too) {
  for (std::size_t n : kLengths) {
    auto host = random_floats(n, 7);
    if (n > 2) host[0] = 0.f, host[1] = -0.f;  // the boundary goes to the zero side
    auto x = put(host), y = put(std::vector<float>(n, 5.f)), dy = put(random_floats(n, 8));
    cpu_->relu(n, x.cpu.data(), y.cpu.data());
    gpu_->relu(n, x.gpu.data(), y.gpu.data());
    expect_same(get_gpu(y), get_cpu(y), "relu n=" + std::to_string(n));
    cpu_->relu_backward(n, y.cpu.data(), dy.cpu.data(), dy.cpu.data());  // dx aliases dy
    gpu_->relu_backward(n, y.gpu.data(), dy.gpu.data(), dy.gpu.data());
    expect_same(get_gpu(dy), get_cpu(dy), "relu_backward n=" + std::to_string(n));
    cpu_->relu(n, x.cpu.data(), x.cpu.data());  // y aliases x
    gpu_->relu(n, x.gpu.data(), x.gpu.data());
    expect_same(get_gpu(x), get_cpu(x), "relu in place n=" + std::to_string(n));
  }
}

TEST_F(kernels, softmax_xent_matches_cpu) {
  // Loss: 1e-5 relative to the summed loss (plus 1e-5 per row for near-zero losses); correct
  // count exact (random logits have no ties); gradient entries lie in [-1, 1] * grad_scale,
  // compared to 1e-6 * grad_scale absolute (a few float roundings of exp and the division).
  const std::pair<int, int> shapes[] = {{1, 1},    {7, 10},  {64, 10}, {1000, 33},
                                        {5, 1000}, {300, 2}, {33, 31}};
  std::uint32_t seed = 200;
  for (auto [rows, cols] : shapes)
    for (int mode = 0; mode < 3; ++mode) {  // 0: separate dlogits, 1: in place, 2: no gradient
      const auto logits = random_floats(std::size_t(rows) * cols, ++seed, -20.f, 20.f);
      const auto labels = random_labels(std::size_t(rows), cols, ++seed);
      const float grad_scale = 1.f / rows;
      auto z = put(logits), y = put(labels);
      auto d = put(std::vector<float>(std::size_t(rows) * cols, 3.f));
      float* dc = mode == 0 ? d.cpu.data() : mode == 1 ? z.cpu.data() : nullptr;
      float* dg = mode == 0 ? d.gpu.data() : mode == 1 ? z.gpu.data() : nullptr;
      const loss_sum want =
          cpu_->softmax_xent(rows, cols, z.cpu.data(), y.cpu.data(), grad_scale, dc);
      const loss_sum got =
          gpu_->softmax_xent(rows, cols, z.gpu.data(), y.gpu.data(), grad_scale, dg);
      const std::string what = "softmax_xent " + std::to_string(rows) + "x" + std::to_string(cols) +
                               " mode " + std::to_string(mode);
      EXPECT_NEAR(got.loss, want.loss, 1e-5 * (std::fabs(want.loss) + rows)) << what;
      EXPECT_EQ(got.correct, want.correct) << what;
      const twin& grad = mode == 1 ? z : d;
      expect_close(get_gpu(grad), get_cpu(grad), std::vector<double>(grad.cpu.size(), 1.0),
                   1e-6 * grad_scale, what);
    }
}

TEST_F(kernels, softmax_xent_rejects_a_bad_label_naming_the_row) {
  auto z = put(random_floats(40, 9)), y = put({0.f, 1.f, 2.f, 3.f, 10.f, 1.f, 2.5f, 0.f});
  try {
    gpu_->softmax_xent(8, 5, z.gpu.data(), y.gpu.data(), 1.f, nullptr);
    FAIL() << "label 10 of 5 classes was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cpu_->softmax_xent(8, 5, z.cpu.data(), y.cpu.data(), 1.f, nullptr),
               std::invalid_argument);
}

TEST_F(kernels, a_queued_loss_waits_only_in_take_loss_and_reports_a_bad_label_there) {
  // A model queues the loss, then its backward pass, then reads the loss: the sums must be the
  // direct call's, work queued in between must not disturb them, and a bad label is reported
  // by take_loss. A second loss or a sum_squares while one is queued would overwrite its
  // result: both are refused.
  const int rows = 64, cols = 10;
  auto z = put(random_floats(std::size_t(rows) * cols, 300, -5.f, 5.f));
  auto y = put(random_labels(rows, cols, 301));
  auto d = put(std::vector<float>(std::size_t(rows) * cols, 0.f));
  auto other = put(random_floats(4096, 302));
  const loss_sum want = gpu_->softmax_xent(rows, cols, z.gpu.data(), y.gpu.data(), 0.5f, nullptr);
  gpu_->queue_loss(true, rows, cols, z.gpu.data(), y.gpu.data(), 0.5f, d.gpu.data());
  gpu_->scale(4096, 2.f, other.gpu.data());  // other work queued behind the loss
  EXPECT_THROW(gpu_->sum_squares(4096, other.gpu.data()), std::logic_error);
  EXPECT_THROW(gpu_->queue_loss(false, rows, 1, z.gpu.data(), y.gpu.data(), 1.f, nullptr),
               std::logic_error);
  const loss_sum got = gpu_->take_loss();
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_GT(gpu_->sum_squares(4096, other.gpu.data()), 0.0);  // usable again
  auto bad = put({0.f, 1.f, 2.f, -1.f, 1.f});
  gpu_->queue_loss(true, 5, cols, z.gpu.data(), bad.gpu.data(), 1.f, nullptr);
  try {
    gpu_->take_loss();
    FAIL() << "label -1 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gpu_->take_loss().loss, 0.0);  // nothing queued any more
}

TEST_F(kernels, squared_error_matches_cpu) {
  // Both square the same float difference in double; only the order of the double sum differs:
  // 1e-12 relative. The gradient is one rounding chain on both sides: exact.
  for (std::size_t n : kLengths) {
    const int rows = int(n);
    auto p = put(random_floats(n, 10)), t = put(random_floats(n, 11));
    auto d = put(std::vector<float>(n, 0.f));
    for (float* dc : {d.cpu.data(), static_cast<float*>(nullptr)}) {
      float* dg = dc ? d.gpu.data() : nullptr;
      const loss_sum want = cpu_->squared_error(rows, p.cpu.data(), t.cpu.data(), 0.25f, dc);
      const loss_sum got = gpu_->squared_error(rows, p.gpu.data(), t.gpu.data(), 0.25f, dg);
      EXPECT_NEAR(got.loss, want.loss, 1e-12 * want.loss) << "rows " << rows;
      EXPECT_EQ(got.correct, 0);
    }
    expect_same(get_gpu(d), get_cpu(d), "squared_error gradient rows " + std::to_string(rows));
  }
}

TEST_F(kernels, sum_squares_rel_1e_12) {
  for (std::size_t n : {std::size_t(1), std::size_t(1025), std::size_t(3) << 20}) {
    auto x = put(random_floats(n, 12));
    const double want = cpu_->sum_squares(n, x.cpu.data());
    EXPECT_NEAR(gpu_->sum_squares(n, x.gpu.data()), want, 1e-12 * want) << "n " << n;
  }
}

TEST_F(kernels, empty_inputs_are_no_ops) {
  auto x = put({1.f, 2.f});
  gpu_->fill(0, 3.f, x.gpu.data());
  gpu_->scale(0, 3.f, x.gpu.data());
  gpu_->axpy(0, 3.f, x.gpu.data(), x.gpu.data());
  gpu_->relu(0, x.gpu.data(), x.gpu.data());
  gpu_->add_row_vector(0, 2, x.gpu.data(), x.gpu.data());
  gpu_->gemm(false, false, 0, 2, 2, 1.f, x.gpu.data(), x.gpu.data(), 0.f, x.gpu.data());
  EXPECT_EQ(gpu_->sum_squares(0, x.gpu.data()), 0.0);
  const loss_sum s = gpu_->softmax_xent(0, 10, x.gpu.data(), x.gpu.data(), 1.f, nullptr);
  EXPECT_EQ(s.loss, 0.0);
  EXPECT_EQ(gpu_->squared_error(0, x.gpu.data(), x.gpu.data(), 1.f, nullptr).loss, 0.0);
  EXPECT_EQ(gpu_->allocate(0).data(), nullptr);
  expect_same(get_gpu(x), {1.f, 2.f}, "untouched");
}

}  // namespace
}  // namespace actrain::test
