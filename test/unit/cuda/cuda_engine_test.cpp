// On a GPU machine: a job with a GPU worker and CPU shards trains end to end,
// and reaches the CPU worker's test accuracy within 0.5 points (same seed, same batches). One
// worker, so both jobs apply the same gradients in the same order and differ only by rounding
// (with two async workers the interleaving alone moves accuracy by a point or more).
#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "cuda_test_util.hpp"

namespace actrain {
namespace {

TEST(cuda_engine_test, gpu_worker_with_cpu_shards_matches_the_cpu_worker) {
  ACTRAIN_REQUIRE_GPU();
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  job_spec job;
  job.model = model_spec{"mlp", 0, 0, {256}};
  job.data.kind = "fashion_mnist";
  job.data.train_subset = 20000;
  job.optim.kind = "sgd";
  job.optim.lr = 0.1f;
  job.workers = 1;
  job.shards = 2;
  job.epochs = 2;
  job.eval_every = 1e9;
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  job.device = "cuda:0";
  auto gpu = run_job(sys, job, data);
  ASSERT_TRUE(gpu.ok) << gpu.error;
  job.device = "cpu";
  auto cpu = run_job(sys, job, data);
  ASSERT_TRUE(cpu.ok) << cpu.error;
  EXPECT_GT(gpu.test.accuracy, 0.75);  // learned: chance is 0.10; the CPU job reaches ~0.80
  EXPECT_NEAR(gpu.test.accuracy, cpu.test.accuracy, 0.005)
      << "gpu " << gpu.test.accuracy << " cpu " << cpu.test.accuracy;
}

}  // namespace
}  // namespace actrain
