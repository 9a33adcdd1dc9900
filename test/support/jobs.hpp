#pragma once
// The linear-regression job the tests train (the seed's case study, small enough to finish in
// seconds): 20,000 rows of 20 features, 6 epochs, cosine-annealed SGD.
#include <actrain/job.hpp>

namespace actrain::test {

inline job_spec linear_job(int workers, int epochs = 6) {
  job_spec job;
  job.name = "integration-linear";
  job.model.kind = "linear";
  job.data.kind = "synthetic_linear";
  job.data.rows = 20000;
  job.data.test_rows = 1000;
  job.data.features = 20;
  job.data.noise = 0.01f;
  job.workers = workers;
  job.shards = 2;
  job.batch = 32;
  job.epochs = epochs;
  job.eval_every = 100;  // only the final evaluation
  job.optim.kind = "sgd";
  job.optim.lr = 0.02f;
  job.optim.schedule = "cosine";
  job.optim.total_steps = epochs * 20000 / 32;
  job.optim.min_lr = 1e-4f;
  return job;
}

/// A quicker linear job for tests of coordination rather than of convergence: 4000 rows of 10
/// features, batch 16, 2 epochs, 2 shards, plain SGD, only the final evaluation.
inline job_spec small_linear_job(int workers) {
  job_spec job;
  job.model.kind = "linear";
  job.data.kind = "synthetic_linear";
  job.data.rows = 4000;
  job.data.test_rows = 200;
  job.data.features = 10;
  job.workers = workers;
  job.shards = 2;
  job.batch = 16;
  job.epochs = 2;
  job.eval_every = 100;
  job.optim.kind = "sgd";
  job.optim.lr = 0.02f;
  return job;
}

}  // namespace actrain::test
