// A model's forward_backward on the GPU against the same model on the CPU, and a short SGD run
// on both that must reach the same accuracy. Tolerances: fp32 loss 1e-5 relative, gradient 1e-4
// of the gradient's largest entry; TF32 1e-3 and 2e-2.
#include <algorithm>
#include <cmath>

#include <actrain/model.hpp>
#include "test/unit/cuda/cuda_test_util.hpp"

namespace actrain::test {
namespace {

struct case_spec {
  model_spec spec;
  int rows;
};

model_spec mlp(int in, std::vector<int> hidden, int classes) {
  model_spec s;
  s.kind = "mlp", s.input_dim = in, s.hidden = std::move(hidden), s.output_dim = classes;
  return s;
}

class model_on_gpu : public cuda_vs_cpu {
 protected:
  void compare(const model_spec& spec, int rows, double loss_tol, double grad_tol) {
    auto m_cpu = make_model(spec, *cpu_, rows);
    auto m_gpu = make_model(spec, *gpu_, rows);
    const auto params = m_cpu->init_params(42);
    ASSERT_EQ(params, m_gpu->init_params(42));
    const auto x = random_floats(std::size_t(rows) * spec.input_dim, 5, 0.f, 1.f);
    const auto y = m_cpu->is_classifier() ? random_labels(std::size_t(rows), spec.output_dim, 6)
                                          : random_floats(std::size_t(rows), 6);
    auto P = put(params), X = put(x), Y = put(y);
    auto G = put(std::vector<float>(params.size(), 0.f));
    const loss_sum want =
        m_cpu->forward_backward(P.cpu.data(), {rows, X.cpu.data(), Y.cpu.data()}, G.cpu.data());
    const loss_sum got =
        m_gpu->forward_backward(P.gpu.data(), {rows, X.gpu.data(), Y.gpu.data()}, G.gpu.data());
    const std::string what = describe(spec) + " rows " + std::to_string(rows);
    EXPECT_NEAR(got.loss, want.loss, loss_tol * std::fabs(want.loss)) << what;
    EXPECT_EQ(got.correct, want.correct) << what;
    const auto g_cpu = get_cpu(G);
    double gmax = 0;
    for (float g : g_cpu) gmax = std::max(gmax, double(std::fabs(g)));
    expect_close(get_gpu(G), g_cpu, std::vector<double>(g_cpu.size(), gmax), grad_tol,
                 what + " gradient");
    const loss_sum eval = m_gpu->evaluate(P.gpu.data(), {rows, X.gpu.data(), Y.gpu.data()});
    EXPECT_NEAR(eval.loss, got.loss, 1e-6 * std::fabs(got.loss)) << what << " evaluate";
    EXPECT_EQ(eval.correct, got.correct) << what << " evaluate";
  }
};

class model_on_gpu_tf32 : public model_on_gpu {
 protected:
  model_on_gpu_tf32() { tf32_ = true; }
};

TEST_F(model_on_gpu, forward_backward_matches_cpu) {
  compare(mlp(37, {64, 33}, 10), 50, 1e-5, 1e-4);
  compare(mlp(37, {64, 33}, 10), 1, 1e-5, 1e-4);
  compare(mlp(784, {256}, 10), 64, 1e-5, 1e-4);
  model_spec softmax;
  softmax.kind = "softmax", softmax.input_dim = 20, softmax.output_dim = 7;
  compare(softmax, 13, 1e-5, 1e-4);
  model_spec linear;
  linear.kind = "linear", linear.input_dim = 9, linear.output_dim = 1;
  compare(linear, 17, 1e-5, 1e-4);
}

TEST_F(model_on_gpu_tf32, forward_backward_matches_cpu_within_tf32_error) {
  compare(mlp(784, {256}, 10), 64, 1e-3, 2e-2);
}

TEST_F(model_on_gpu, sgd_reaches_the_same_accuracy_as_on_cpu) {
  // Labels from a random linear teacher, so the MLP can learn them; 300 steps of SGD lr 0.1 on
  // both backends from the same start. Accuracy on a held-out batch within 0.5 points.
  const model_spec spec = mlp(20, {32}, 4);
  const int rows = 64, eval_rows = 2000, steps = 300;
  const auto teacher = random_floats(20 * 4, 77);
  auto make_batch = [&](int n, std::uint32_t seed, std::vector<float>& x, std::vector<float>& y) {
    x = random_floats(std::size_t(n) * 20, seed);
    y.assign(std::size_t(n), 0.f);
    for (int r = 0; r < n; ++r) {
      float best = -1e30f;
      for (int c = 0; c < 4; ++c) {
        float s = 0;
        for (int i = 0; i < 20; ++i) s += x[std::size_t(r) * 20 + i] * teacher[i * 4 + c];
        if (s > best) best = s, y[r] = float(c);
      }
    }
  };
  auto m_cpu = make_model(spec, *cpu_, eval_rows);
  auto m_gpu = make_model(spec, *gpu_, eval_rows);
  auto P = put(m_cpu->init_params(3));
  auto G = put(std::vector<float>(m_cpu->num_params(), 0.f));
  std::vector<float> x, y;
  for (int step = 0; step < steps; ++step) {
    make_batch(rows, 1000 + step, x, y);
    auto X = put(x), Y = put(y);
    m_cpu->forward_backward(P.cpu.data(), {rows, X.cpu.data(), Y.cpu.data()}, G.cpu.data());
    m_gpu->forward_backward(P.gpu.data(), {rows, X.gpu.data(), Y.gpu.data()}, G.gpu.data());
    cpu_->axpy(P.cpu.size(), -0.1f, G.cpu.data(), P.cpu.data());
    gpu_->axpy(P.gpu.size(), -0.1f, G.gpu.data(), P.gpu.data());
  }
  make_batch(eval_rows, 9, x, y);
  auto X = put(x), Y = put(y);
  const double acc_cpu =
      100.0 * m_cpu->evaluate(P.cpu.data(), {eval_rows, X.cpu.data(), Y.cpu.data()}).correct /
      eval_rows;
  const double acc_gpu =
      100.0 * m_gpu->evaluate(P.gpu.data(), {eval_rows, X.gpu.data(), Y.gpu.data()}).correct /
      eval_rows;
  EXPECT_GT(acc_cpu, 60.0) << "the CPU run did not learn; the comparison would be empty";
  EXPECT_NEAR(acc_gpu, acc_cpu, 0.5);
}

TEST_F(model_on_gpu, a_recorded_training_step_replays_what_the_step_computes) {
  // One SGD step (forward_backward, then axpy) recorded as a CUDA graph and replayed 5 times
  // against the same step run 5 times: the same kernels on the same buffers, so the parameters
  // match to the last bit-ish (1e-6 of the largest), and take_loss after a replay reads that
  // replay's loss. Inside the recording, take_loss returns zeros and nothing runs.
  const model_spec spec = mlp(784, {256}, 10);
  const int rows = 64;
  auto m_eager = make_model(spec, *gpu_, rows);
  auto m_graph = make_model(spec, *gpu_, rows);
  const auto init = m_eager->init_params(7);
  auto x = gpu_->allocate(std::size_t(rows) * 784), y = gpu_->allocate(rows);
  const auto hx = random_floats(std::size_t(rows) * 784, 8, 0.f, 1.f);
  const auto hy = random_labels(rows, 10, 9);
  gpu_->upload(x.data(), hx.data(), hx.size());
  gpu_->upload(y.data(), hy.data(), hy.size());
  auto pe = gpu_->allocate(init.size()), pg = gpu_->allocate(init.size());
  auto ge = gpu_->allocate(init.size()), gg = gpu_->allocate(init.size());
  gpu_->upload(pe.data(), init.data(), init.size());
  gpu_->upload(pg.data(), init.data(), init.size());
  const batch_view bv{rows, x.data(), y.data()};
  loss_sum inside{-1, -1};
  auto step = gpu_->record([&] {
    inside = m_graph->forward_backward(pg.data(), bv, gg.data());
    gpu_->axpy(init.size(), -0.1f, gg.data(), pg.data());
  });
  ASSERT_TRUE(step) << "the CUDA backend records";
  EXPECT_EQ(inside.loss, 0.0);
  EXPECT_EQ(read(*gpu_, pg), init) << "recording ran nothing";
  for (int i = 0; i < 5; ++i) {
    const loss_sum want = m_eager->forward_backward(pe.data(), bv, ge.data());
    gpu_->axpy(init.size(), -0.1f, ge.data(), pe.data());
    step->replay();
    const loss_sum got = gpu_->take_loss();
    EXPECT_NEAR(got.loss, want.loss, 1e-6 * std::fabs(want.loss)) << "step " << i;
    EXPECT_EQ(got.correct, want.correct) << "step " << i;
  }
  const auto want = read(*gpu_, pe), got = read(*gpu_, pg);
  double pmax = 0;
  for (float v : want) pmax = std::max(pmax, double(std::fabs(v)));
  expect_close(got, want, std::vector<double>(want.size(), pmax), 1e-6, "replayed parameters");
  // Replays whose loss nobody reads: the next replay replaces it; the stream stays in order.
  for (int i = 0; i < 3; ++i) step->replay();
  EXPECT_GT(gpu_->take_loss().loss, 0.0);
}

TEST_F(model_on_gpu, recording_refuses_host_transfers_and_leaves_the_backend_usable) {
  auto b = gpu_->allocate(16);
  const std::vector<float> h(16, 1.f);
  EXPECT_THROW(gpu_->record([&] { gpu_->upload(b.data(), h.data(), h.size()); }),
               std::logic_error);
  EXPECT_THROW(gpu_->record([&] { gpu_->sum_squares(16, b.data()); }), std::logic_error);
  gpu_->upload(b.data(), h.data(), h.size());  // the capture was ended: the stream works
  EXPECT_EQ(gpu_->sum_squares(16, b.data()), 16.0);
}

}  // namespace
}  // namespace actrain::test
