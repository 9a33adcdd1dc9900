// sgemm throughput through the backend seam, for the shapes a model actually runs.
#include <chrono>
#include <ctime>
#include <random>
#include <stdexcept>

#include "bench/bench.hpp"
#include "bench/median.hpp"

namespace actrain {

std::string describe(const gemm_shape& s) {
  std::string op = s.trans_a ? (s.trans_b ? "A^T B^T" : "A^T B") : (s.trans_b ? "A B^T" : "A B");
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " (" + op +
         ")";
}

std::vector<gemm_shape> model_gemm_shapes(const model_spec& spec, int batch) {
  // Layer sizes as model/dense_stack.cpp lays them out: in -> hidden... -> out.
  std::vector<int> sizes{spec.input_dim};
  for (int h : spec.hidden) sizes.push_back(h);
  sizes.push_back(spec.output_dim);
  const std::size_t layers = sizes.size() - 1;
  std::vector<gemm_shape> out;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string L = std::to_string(l + 1);
    out.push_back(
        {false, false, batch, sizes[l + 1], sizes[l], "layer " + L + " forward: Z = X W"});
  }
  for (std::size_t l = layers; l-- > 0;) {
    const std::string L = std::to_string(l + 1);
    out.push_back(
        {true, false, sizes[l], sizes[l + 1], batch, "layer " + L + " backward: dW = X^T dZ"});
    if (l > 0)
      out.push_back(
          {false, true, batch, sizes[l], sizes[l + 1], "layer " + L + " backward: dX = dZ W^T"});
  }
  return out;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double measure_gemm_gflops(backend& b, const gemm_shape& s, int repeats, double min_seconds) {
  return measure_gemm(b, s, repeats, min_seconds).wall_gflops;
}

gemm_rate measure_gemm(backend& b, const gemm_shape& s, int repeats, double min_seconds,
                       const float* a_values) {
  if (repeats < 1 || s.m < 1 || s.n < 1 || s.k < 1)
    throw std::invalid_argument("measure_gemm_gflops: bad shape " + describe(s) + " or repeats " +
                                std::to_string(repeats));
  const std::size_t na = static_cast<std::size_t>(s.m) * s.k;
  const std::size_t nb = static_cast<std::size_t>(s.k) * s.n;
  const std::size_t nc = static_cast<std::size_t>(s.m) * s.n;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> host(std::max(na, nb));
  buffer a = b.allocate(na), bb = b.allocate(nb), c = b.allocate(nc);
  for (auto& v : host) v = u(rng);
  b.upload(a.data(), a_values ? a_values : host.data(), na);
  b.upload(bb.data(), host.data(), nb);
  b.fill(nc, 0.f, c.data());

  auto run = [&] {
    b.gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.f, a.data(), bb.data(), 0.f, c.data());
  };
  using clk = std::chrono::steady_clock;
  // Calibrate: how many calls make one repeat last min_seconds (this also warms the caches).
  long iters = 1;
  for (;;) {
    const auto t0 = clk::now();
    for (long i = 0; i < iters; ++i) run();
    b.synchronize();
    const double t = std::chrono::duration<double>(clk::now() - t0).count();
    if (t >= min_seconds) break;
    iters =
        t > 0 ? std::max(iters * 2, static_cast<long>(iters * 1.2 * min_seconds / t)) : iters * 2;
  }
  const double flops = 2.0 * s.m * s.n * s.k * static_cast<double>(iters);
  std::vector<double> wall, cpu;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = clk::now();
    const double c0 = process_cpu_seconds();
    for (long i = 0; i < iters; ++i) run();
    b.synchronize();
    const double c = process_cpu_seconds() - c0;
    wall.push_back(flops / std::chrono::duration<double>(clk::now() - t0).count() / 1e9);
    cpu.push_back(c > 0 ? flops / c / 1e9 : 0);
  }
  return {median(wall), median(cpu)};
}

}  // namespace actrain
