// The recorded configurations of the reference runs, and a one-line description of a job.
#include <algorithm>
#include <sstream>

#include "bench/bench.hpp"

namespace actrain {
namespace {

std::int64_t steps_for(std::int64_t rows, int batch, int epochs) {
  return epochs * ((rows + batch - 1) / batch);
}

}  // namespace

job_spec reference_linear_job(std::int64_t rows, int features, int epochs) {
  job_spec j;
  j.name = "reference-linear";
  j.model.kind = "linear";
  j.model.input_dim = features;
  j.data.kind = "synthetic_linear";
  j.data.rows = rows;
  j.data.test_rows = 10000;
  j.data.features = features;
  j.data.noise = 0.01f;
  j.batch = 64;
  j.epochs = epochs;
  // Cosine decay to 0: constant-lr SGD stalls at an excess MSE of about lr * features / batch
  // times the noise (1.6% for PyTorch's lr 0.01 reference run); annealing removes it.
  j.optim.kind = "sgd";
  j.optim.lr = 0.02f;
  j.optim.schedule = "cosine";
  j.optim.total_steps = steps_for(rows, j.batch, epochs);
  j.optim.min_lr = 0;
  return j;
}

job_spec reference_softmax_job(int epochs, const std::string& fashion_dir) {
  job_spec j;
  j.name = "reference-softmax";
  j.model.kind = "softmax";
  j.model.input_dim = 784;
  j.model.output_dim = 10;
  j.data.kind = "fashion_mnist";
  j.data.path = fashion_dir;
  j.batch = 64;
  j.epochs = epochs;
  // A constant lr 0.1 wanders between 0.78 and 0.83 from epoch to epoch (PyTorch's run in
  // PyTorch's reference run); decaying it to 0 settles on the optimum instead. Measured here (seeds
  // 1, 2, 3, 42): lr 0.1 ends at 0.840, lr 0.2 at 0.843-0.845, lr 0.05 at 0.835.
  j.optim.kind = "sgd";
  j.optim.lr = 0.2f;
  j.optim.schedule = "cosine";
  j.optim.total_steps = steps_for(60000, j.batch, epochs);
  return j;
}

job_spec reference_mlp_job(int epochs, const std::string& fashion_dir) {
  job_spec j = reference_softmax_job(epochs, fashion_dir);
  j.name = "reference-mlp";
  j.model.kind = "mlp";
  j.model.hidden = {256};
  // Plain SGD with cosine decay ends at 0.875 (lr 0.1) to 0.887 (lr 0.3); momentum 0.9 lr 0.03
  // at 0.887; Adam lr 1e-3 with cosine decay at 0.890-0.893 (seeds 1, 2, 42), so Adam it is.
  j.optim.kind = "adam";
  j.optim.lr = 1e-3f;
  return j;
}

void fit_schedule_to_sync(job_spec& job, int k) {
  job.optim.total_steps = std::max<std::int64_t>(1, job.optim.total_steps / std::max(1, k));
}

std::string describe_hparams(const job_spec& job) {
  std::ostringstream os;
  const optim_spec& o = job.optim;
  os << describe(job.model) << ", " << o.kind << " lr " << o.lr;
  if (o.kind == "momentum" || o.kind == "nesterov") os << " momentum " << o.momentum;
  if (o.weight_decay > 0) os << " weight_decay " << o.weight_decay;
  if (o.schedule == "cosine")
    os << ", cosine to " << o.min_lr << " over " << o.total_steps << " steps";
  else if (o.schedule == "step")
    os << ", x" << o.gamma << " every " << o.step_size << " steps";
  else
    os << ", constant";
  os << ", batch " << job.batch << ", " << job.epochs << " epochs, seed " << job.seed;
  if (job.clip_norm > 0) os << ", clip " << job.clip_norm;
  return os.str();
}

}  // namespace actrain
