// `actrain bench foundation`: sgemm ceilings and reference-trainer throughput on 1 BLAS thread.
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "bench/bench.hpp"
#include "bench/median.hpp"
#include "train/reference_trainer.hpp"

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

// Samples/s of `runs` reference-trainer runs of max_steps updates each; returns the median and
// fills `all` with each run's figure. The test set is cut to 1000 rows: its final evaluation is
// not timed, but it costs wall time.
double trainer_samples_per_s(job_spec job, const job_data& data, int runs, std::int64_t steps,
                             std::vector<double>& all) {
  all.clear();
  for (int r = 0; r < runs; ++r) all.push_back(reference_train(job, data, {}, steps).samples_per_s);
  return median(all);
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
  emit("| sgemm m x n x k | where | GFLOP/s | of the 1024^3 peak |\n| --- | --- | --- | --- |\n");
  const gemm_shape peak_shape{false, false, 1024, 1024, 1024, "BLAS peak"};
  const double peak = measure_gemm_gflops(*cpu, peak_shape, opt.gemm_repeats);
  emit("| " + describe(peak_shape) + " | BLAS peak | " + fixed(peak, 1) + " | 100% |\n");
  double seconds_per_sample = 0;  // sgemm time per sample at the measured rates
  for (const gemm_shape& s : model_gemm_shapes(mlp.model, 64)) {
    const double g = measure_gemm_gflops(*cpu, s, opt.gemm_repeats);
    seconds_per_sample += 2.0 * s.m * s.n * s.k / (g * 1e9) / 64;
    emit("| " + describe(s) + " | " + describe(mlp.model) + ", batch 64, " + s.use + " | " +
         fixed(g, 1) + " | " + fixed(100 * g / peak, 0) + "% |\n");
  }
  const double gemm_ceiling = 1 / seconds_per_sample;
  emit("\nsgemm alone at these rates caps the MLP at " + fixed(gemm_ceiling / 1000, 1) +
       " k samples/s.\n\n");

  // The reference trainer, in samples/s, median of short runs.
  emit("| reference trainer job | batch | updates per run | samples/s (median) | runs |\n"
       "| --- | --- | --- | --- | --- |\n");
  job_spec fm_job = mlp;
  fm_job.data.test_subset = 1000;
  const job_data fm = load_job_data(fm_job);
  std::vector<double> runs;
  auto row = [&](const job_spec& j, const job_data& d, std::int64_t steps) {
    const double sps = trainer_samples_per_s(j, d, opt.trainer_runs, steps, runs);
    std::string all;
    for (double r : runs) all += (all.empty() ? "" : ", ") + fixed(r / 1000, 1) + " k";
    emit("| " + describe(j.model) + ", " + j.optim.kind + " lr " + fixed(j.optim.lr, 2) + " | " +
         std::to_string(j.batch) + " | " + std::to_string(steps) + " | " + fixed(sps / 1000, 1) +
         " k | " + all + " |\n");
    return sps;
  };
  // Throughput is measured with plain SGD, as PyTorch's figures in BENCHMARKS.md are.
  job_spec mlp_const = fm_job;
  mlp_const.optim.kind = "sgd";
  mlp_const.optim.lr = 0.1f;
  mlp_const.optim.schedule = "constant";
  const double mlp_sps = row(mlp_const, fm, opt.trainer_steps);
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
  emit("\nThe MLP trainer reaches " + fixed(100 * mlp_sps / gemm_ceiling, 0) +
       "% of the sgemm-only ceiling (the rest: bias, ReLU, softmax, optimizer, batch copies).\n\n");
  return md.str();
}

}  // namespace actrain
