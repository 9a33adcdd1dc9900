#pragma once
// The simulated cluster the integration tests train linear_job (test/support/jobs.hpp) on.
#include <chrono>
#include <memory>

#include <actrain/engine.hpp>
#include <actrain/testing/sim_cluster.hpp>
#include "test/support/jobs.hpp"

namespace actrain::test {

/// A simulated cluster for `job` (model fitted to its data): 2 ps nodes, a token, bounded joins.
inline sim_cluster_config sim_config(job_spec job) {
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  sim_cluster_config c;
  c.job = job;
  c.data = data;
  c.ps_nodes = 2;
  c.cluster.token = "sim-token";
  c.cluster.join_timeout = std::chrono::seconds(10);
  return c;
}

}  // namespace actrain::test
