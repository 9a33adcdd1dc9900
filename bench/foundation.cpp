// `actrain bench foundation`: sgemm ceilings and reference-trainer throughput on 1 BLAS thread.
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <actrain/reference_trainer.hpp>
#include "bench/bench.hpp"
#include "bench/median.hpp"
#include "tensor/cpu/sparse_gemm.hpp"

namespace actrain {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, 10, "model name") == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "unknown CPU";
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// Samples/s of `runs` reference-trainer runs of max_steps updates each, by the trainer's own
// (wall-clock) training time and by process CPU time. The CPU figure includes the final
// evaluation, which is why the test set is cut to 1000 rows.
struct trainer_rate {
  std::vector<double> wall, cpu;
};
trainer_rate trainer_samples_per_s(const job_spec& job, const job_data& data, int runs,
                                   std::int64_t steps) {
  trainer_rate t;
  for (int r = 0; r < runs; ++r) {
    const double c0 = process_cpu_seconds();
    const train_result res = reference_train(job, data, {}, steps);
    const double c = process_cpu_seconds() - c0;
    t.wall.push_back(res.samples_per_s);
    t.cpu.push_back(c > 0 ? static_cast<double>(res.samples) / c : 0);
  }
  return t;
}

}  // namespace

std::string bench_foundation(const foundation_options& opt) {
  set_blas_threads(1);
  std::unique_ptr<backend> cpu = make_cpu_backend();
  std::ostringstream md;
  auto emit = [&](const std::string& s) {
    std::cout << s << std::flush;
    md << s;
  };

  const job_spec mlp = reference_mlp_job(1, opt.fashion_dir);
  emit("## Foundation: sgemm and the reference trainer, 1 BLAS thread\n\n");
  emit("Reproduce: `actrain bench foundation`. Machine: " + cpu_model() + ", " +
       std::to_string(std::thread::hardware_concurrency()) +
       " hardware threads; OpenBLAS set to 1 thread. sgemm through the CPU backend "
       "(`backend::gemm`), median of " +
       std::to_string(opt.gemm_repeats) + " repeats of at least 50 ms each.\n\n");

  // sgemm: the BLAS peak, then every call the MLP makes per step, side by side.
  emit(
      "| sgemm m x n x k | where | GFLOP/s (wall) | GFLOP/s (CPU time) | of the 1024^3 peak "
      "(CPU time) |\n| --- | --- | --- | --- | --- |\n");
  const gemm_shape peak_shape{false, false, 1024, 1024, 1024, "BLAS peak"};
  const gemm_rate peak = measure_gemm(*cpu, peak_shape, opt.gemm_repeats);
  emit("| " + describe(peak_shape) + " | BLAS peak | " + fixed(peak.wall_gflops, 1) + " | " +
       fixed(peak.cpu_gflops, 1) + " | 100% |\n");
  double wall_per_sample = 0, cpu_per_sample = 0;  // sgemm seconds per sample at these rates
  for (const gemm_shape& s : model_gemm_shapes(mlp.model, 64)) {
    const gemm_rate g = measure_gemm(*cpu, s, opt.gemm_repeats);
    const double flop = 2.0 * s.m * s.n * s.k / 64;
    wall_per_sample += flop / (g.wall_gflops * 1e9);
    cpu_per_sample += flop / (g.cpu_gflops * 1e9);
    emit("| " + describe(s) + " | " + describe(mlp.model) + ", batch 64, " + s.use + " | " +
         fixed(g.wall_gflops, 1) + " | " + fixed(g.cpu_gflops, 1) + " | " +
         fixed(100 * g.cpu_gflops / peak.cpu_gflops, 0) + "% |\n");
  }
  emit("\nsgemm alone at these rates caps the MLP at " + fixed(1e-3 / wall_per_sample, 1) +
       " k samples/s (wall) / " + fixed(1e-3 / cpu_per_sample, 1) + " k samples/s (CPU time).\n\n");

  // The first layer's two GEMMs on real inputs: A is a batch of training images, half its
  // pixels zero. Dense BLAS and the zero-skipping path, each repeat of one right after the other.
  job_spec fm_job = mlp;
  fm_job.data.test_subset = 1000;
  const job_data fm = load_job_data(fm_job);
  const int in = mlp.model.input_dim;
  const float* batch_x = fm.train.x.data();
  const double zero_share = 1.0 - cpu::density(batch_x, static_cast<std::size_t>(64) * in);
  emit("The first layer's GEMMs on 64 Fashion-MNIST training images (" +
       fixed(100 * zero_share, 0) +
       "% of X's entries zero): dense BLAS against the CPU backend's zero-skipping path "
       "(tensor/cpu/sparse_gemm.hpp, on by default on AVX-512 machines: it runs when at most " +
       fixed(100 * cpu::max_density, 0) +
       "% of A's entries are nonzero), repeats alternating. GFLOP/s count the dense product's "
       "multiply-adds for both." +
       (cpu::sparse_path_available()
            ? std::string()
            : " This CPU has no AVX-512: the backend runs dense BLAS, and both columns time it.") +
       "\n\n| sgemm m x n x k | where | dense BLAS GFLOP/s (CPU time) | "
       "zero-skipping GFLOP/s (CPU time) | zero-skipping / dense |\n| --- | --- | --- | --- | --- |\n");
  double skip_per_sample = cpu_per_sample;  // the ceiling with the zero-skipping path
  for (const gemm_shape& s : model_gemm_shapes(mlp.model, 64)) {
    const bool first_layer = s.trans_a ? s.m == in : s.k == in && !s.trans_b;
    if (!first_layer) continue;
    std::vector<double> dense, skip;
    for (int r = 0; r < opt.gemm_repeats; ++r) {
      cpu::set_sparse_path(false);
      dense.push_back(measure_gemm(*cpu, s, 1, 0.05, batch_x).cpu_gflops);
      cpu::set_sparse_path(true);
      skip.push_back(measure_gemm(*cpu, s, 1, 0.05, batch_x).cpu_gflops);
    }
    const double flop = 2.0 * s.m * s.n * s.k / 64;
    skip_per_sample += flop / (median(skip) * 1e9) - flop / (median(dense) * 1e9);
    emit("| " + describe(s) + " | " + s.use + " | " + fixed(median(dense), 1) + " | " +
         fixed(median(skip), 1) + " | " + fixed(median(skip) / median(dense), 2) + "x |\n");
  }
  emit("\nWith the zero-skipping path, GEMMs alone cap the MLP on these images at " +
       fixed(1e-3 / skip_per_sample, 1) + " k samples/s (CPU time).\n\n");

  // The reference trainer, in samples/s, median of short runs.
  emit(
      "| reference trainer job | batch | updates per run | samples/s (wall, median) | samples/s "
      "(CPU time, median) | runs (wall) |\n| --- | --- | --- | --- | --- | --- |\n");
  auto row = [&](const job_spec& j, const job_data& d, std::int64_t steps) {
    const trainer_rate t = trainer_samples_per_s(j, d, opt.trainer_runs, steps);
    std::string all;
    for (double r : t.wall) all += (all.empty() ? "" : ", ") + fixed(r / 1000, 1) + " k";
    emit("| " + describe(j.model) + ", " + j.optim.kind + " lr " + fixed(j.optim.lr, 2) + " | " +
         std::to_string(j.batch) + " | " + std::to_string(steps) + " | " +
         fixed(median(t.wall) / 1000, 1) + " k | " + fixed(median(t.cpu) / 1000, 1) + " k | " +
         all + " |\n");
    return t;
  };
  // Throughput is measured with plain SGD, as PyTorch's reference figures are.
  job_spec mlp_sgd = fm_job;
  mlp_sgd.optim.kind = "sgd";
  mlp_sgd.optim.lr = 0.1f;
  mlp_sgd.optim.schedule = "constant";
  const trainer_rate mlp_rate = row(mlp_sgd, fm, opt.trainer_steps);
  double dense_wall = 0;
  {
    // The same job with dense BLAS only, runs alternating with the default's.
    std::vector<double> dense, skip;
    for (int r = 0; r < opt.trainer_runs; ++r) {
      cpu::set_sparse_path(false);
      dense.push_back(trainer_samples_per_s(mlp_sgd, fm, 1, opt.trainer_steps).wall[0]);
      cpu::set_sparse_path(true);
      skip.push_back(trainer_samples_per_s(mlp_sgd, fm, 1, opt.trainer_steps).wall[0]);
    }
    emit("| " + describe(mlp_sgd.model) + ", sgd lr 0.10, dense BLAS only (runs alternating with "
         "the default's: " + fixed(median(skip) / 1000, 1) + " k, " +
         fixed(median(skip) / median(dense), 2) + "x) | " + std::to_string(mlp_sgd.batch) +
         " | " + std::to_string(opt.trainer_steps) + " | " + fixed((dense_wall = median(dense)) / 1000, 1) +
         " k | - | - |\n");
  }
  if (opt.all_models) {
    job_spec soft = reference_softmax_job(1, opt.fashion_dir);
    soft.optim.schedule = "constant";
    soft.optim.lr = 0.1f;
    soft.data.test_subset = 1000;
    row(soft, fm, 5 * opt.trainer_steps);
    job_spec lin = reference_linear_job(100000, 100, 1);
    lin.optim.schedule = "constant";
    lin.optim.lr = 0.01f;
    lin.data.test_rows = 1000;
    row(lin, load_job_data(lin), 5 * opt.trainer_steps);
  }
  emit("\nThe MLP trainer reaches " + fixed(100 * median(mlp_rate.cpu) * skip_per_sample, 0) +
       "% (CPU time) of the GEMM-only ceiling with the zero-skipping path, and with dense BLAS "
       "only " + fixed(100 * dense_wall * wall_per_sample, 0) +
       "% (wall) of the sgemm-only one; the rest is bias, ReLU, softmax, the optimizer, "
       "and batch copies (the zero-skipping GEMMs' times include their lists).\n\n");
  return md.str();
}

}  // namespace actrain
