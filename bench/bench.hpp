#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <actrain/backend.hpp>
#include <actrain/job.hpp>

namespace actrain {

// Benchmarks behind `actrain bench foundation` and `actrain bench reference`. Each prints its
// progress and results to stdout and returns a markdown section for docs/benchmarks.md.
// They set OpenBLAS to 1 thread for the whole process (peers are compared at 1 thread too).
// No CAF: this library sits on train/.

/// One sgemm call as the backend sees it: C (m x n) = op(A) (m x k) * op(B) (k x n).
struct gemm_shape {
  bool trans_a = false;
  bool trans_b = false;
  int m = 0;
  int n = 0;
  int k = 0;
  std::string use;  ///< where it comes from, e.g. "layer 1 forward: X W1"
};
std::string describe(const gemm_shape& s);  ///< e.g. "784x256x64 (A^T B)"

/// The sgemm calls model/dense_stack.cpp makes for one forward_backward of `spec` at `batch`
/// rows, in call order (forward layers, then backward layers last to first).
std::vector<gemm_shape> model_gemm_shapes(const model_spec& spec, int batch);

/// GFLOP/s by wall-clock time and by this process's CPU time. On a shared machine other
/// processes take cores away: wall time then understates what the code does, CPU time does not
/// (with 1 BLAS thread the process computes on one core at a time).
struct gemm_rate {
  double wall_gflops = 0;
  double cpu_gflops = 0;
};
/// Medians over `repeats` timed repeats of b.gemm on `s`; each repeat loops the call until it
/// has run at least `min_seconds` (small shapes take microseconds). A holds uniform values in
/// [-1, 1), or the m*k values at `a_values` (as stored: k x m when trans_a). GFLOP/s count every
/// multiply-add of the dense product, zeros in A included.
gemm_rate measure_gemm(backend& b, const gemm_shape& s, int repeats = 5, double min_seconds = 0.05,
                       const float* a_values = nullptr);
/// measure_gemm(...).wall_gflops.
double measure_gemm_gflops(backend& b, const gemm_shape& s, int repeats = 5,
                           double min_seconds = 0.05);

/// Seconds of CPU time this process has used (all threads).
double process_cpu_seconds();

struct foundation_options {
  int gemm_repeats = 7;               ///< sgemm: median of this many repeats (>= 5)
  int trainer_runs = 3;               ///< reference trainer: median of this many runs
  std::int64_t trainer_steps = 2000;  ///< updates per trainer run (batch 64)
  bool all_models = true;             ///< also time softmax and linear regression
  std::string fashion_dir;            ///< "" = Debian's directory
};
/// Acceptance 4: sgemm GFLOP/s for 1024^3 (the BLAS peak) and for the MLP 784-256-10's shapes
/// at batch 64, and the reference trainer's samples/s on that MLP, all on 1 BLAS thread.
std::string bench_foundation(const foundation_options& opt = {});

struct reference_options {
  int epochs = 10;        ///< softmax and MLP budget (acceptance: within 10)
  int linear_epochs = 5;  ///< cosine over 5 epochs: gap 3e-4 (3 epochs: 6e-4)
  std::int64_t linear_rows = 100000;
  int linear_features = 100;
  std::string fashion_dir;  ///< "" = Debian's directory
  bool linear = true;
  bool softmax = true;
  bool mlp = true;
};
/// Acceptance 3: full reference runs (linear regression vs the closed form, softmax and MLP on
/// Fashion-MNIST), each with the hyper-parameters it used.
std::string bench_reference_accuracy(const reference_options& opt = {});

/// The recorded configurations of the reference runs (also usable as engine jobs).
job_spec reference_linear_job(std::int64_t rows, int features, int epochs);
job_spec reference_softmax_job(int epochs, const std::string& fashion_dir = "");
job_spec reference_mlp_job(int epochs, const std::string& fashion_dir = "");

/// One line with a job's model, optimizer, schedule, batch, epochs and seed.
std::string describe_hparams(const job_spec& job);

/// A sync job whose steps each take `k` workers' slices: its shards take k times fewer steps,
/// so the schedule's total_steps (counted in shard steps) shrinks by k (at least 1).
void fit_schedule_to_sync(job_spec& job, int k);

}  // namespace actrain
