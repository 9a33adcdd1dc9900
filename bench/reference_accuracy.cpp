// `actrain bench reference`: the reference trainer's full runs for acceptance 3.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <actrain/reference_trainer.hpp>
#include "bench/bench.hpp"
#include "data/readers.hpp"

namespace actrain {
namespace {

using clk = std::chrono::steady_clock;

std::string num(double v, int digits, bool sci = false) {
  std::ostringstream os;
  os << (sci ? std::scientific : std::fixed) << std::setprecision(digits) << v;
  return os.str();
}

double since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// Mean squared error of the closed-form solution (w then b, in double) on d.
double solution_mse(const dataset& d, const std::vector<double>& sol) {
  const int f = d.features;
  double sum = 0;
  for (std::int64_t r = 0; r < d.rows; ++r) {
    double p = sol[static_cast<std::size_t>(f)];
    const float* x = d.x.data() + r * f;
    for (int c = 0; c < f; ++c) p += sol[static_cast<std::size_t>(c)] * x[c];
    const double e = p - d.y[static_cast<std::size_t>(r)];
    sum += e * e;
  }
  return d.rows ? sum / static_cast<double>(d.rows) : 0;
}

struct run_output {
  train_result result;
  job_data data;
  double wall = 0;
};

run_output run(job_spec job, std::ostream& log) {
  run_output out;
  const auto t0 = clk::now();
  out.data = load_job_data(job);
  fit_model_to_data(job, out.data);
  log << job.name << ": " << describe_hparams(job) << "\n";
  out.result = reference_train(job, out.data, [&](const progress_point& p) {
    log << "  epoch " << p.epoch << ": train loss " << num(p.train_loss, 5) << ", test loss "
        << num(p.test_loss, 5);
    if (p.test_accuracy > 0) log << ", test accuracy " << num(p.test_accuracy, 4);
    log << ", " << num(p.seconds, 1) << " s training\n";
    log.flush();
  });
  out.wall = since(t0);
  return out;
}

std::string epochs_list(const train_result& r) {
  std::string s;
  for (const progress_point& p : r.history) s += (s.empty() ? "" : ", ") + num(p.test_accuracy, 3);
  return s;
}

}  // namespace

std::string bench_reference_accuracy(const reference_options& opt) {
  set_blas_threads(1);
  std::ostringstream md;
  auto emit = [&](const std::string& s) {
    std::cout << s << std::flush;
    md << s;
  };
  emit("## Reference trainer accuracy\n\n");
  emit(
      "Reproduce: `actrain bench reference`. Single thread (OpenBLAS 1 thread), no actors; "
      "the test set is evaluated after every epoch and at the end.\n\n");

  if (opt.linear) {
    const job_spec job =
        reference_linear_job(opt.linear_rows, opt.linear_features, opt.linear_epochs);
    run_output o = run(job, std::cout);
    job_spec fitted = job;
    fit_model_to_data(fitted, o.data);
    std::unique_ptr<backend> cpu = make_cpu_backend();
    const double train_mse = evaluate(fitted.model, o.result.params, o.data.train, *cpu).loss;
    std::vector<double> sol;
    const double best = least_squares_mse(o.data.train, &sol);
    const double gap = (train_mse - best) / best;
    const double best_test = solution_mse(o.data.test, sol);
    emit("### Linear regression, " + std::to_string(job.data.rows) + " x " +
         std::to_string(job.data.features) + " synthetic rows (noise sd " + num(job.data.noise, 3) +
         ")\n\n");
    emit("Hyper-parameters: " + describe_hparams(fitted) + ".\n\n");
    emit("| | training MSE | test MSE (" + std::to_string(o.data.test.rows) +
         " rows) |\n| --- | --- | --- |\n");
    emit("| reference trainer | " + num(train_mse, 4, true) + " | " +
         num(o.result.test.loss, 4, true) + " |\n");
    emit("| closed-form least squares | " + num(best, 4, true) + " | " + num(best_test, 4, true) +
         " |\n\n");
    emit("Relative gap on the training set: " + num(gap, 2, true) + " (acceptance: < 1e-3, " +
         (gap < 1e-3 ? "met" : "NOT met") + "). " + num(o.result.samples_per_s / 1e6, 2) +
         " M samples/s; wall time " + num(o.wall, 1) + " s including data generation.\n\n");
  }

  struct fm_run {
    bool on;
    job_spec job;
    double target;
    const char* title;
  };
  const fm_run fm_runs[] = {{opt.softmax, reference_softmax_job(opt.epochs, opt.fashion_dir), 0.84,
                             "Softmax regression, Fashion-MNIST"},
                            {opt.mlp, reference_mlp_job(opt.epochs, opt.fashion_dir), 0.88,
                             "MLP 784-256-10 (ReLU), Fashion-MNIST"}};
  for (const fm_run& f : fm_runs) {
    if (!f.on) continue;
    run_output o = run(f.job, std::cout);
    const train_result& r = o.result;
    const bool met = r.test.accuracy >= f.target;
    emit(std::string("### ") + f.title + "\n\n");
    emit("Hyper-parameters: " + describe_hparams(f.job) + ". 60,000 training rows, test on " +
         std::to_string(r.test.rows) + ".\n\n");
    emit(
        "| test accuracy after each epoch | final | target | samples/s | training s | wall s |\n"
        "| --- | --- | --- | --- | --- | --- |\n");
    emit("| " + epochs_list(r) + " | " + num(r.test.accuracy, 4) + " | >= " + num(f.target, 2) +
         (met ? " (met)" : " (NOT met)") + " | " + num(r.samples_per_s / 1000, 1) + " k | " +
         num(r.seconds, 1) + " | " + num(o.wall, 1) + " |\n\n");
  }
  return md.str();
}

}  // namespace actrain
