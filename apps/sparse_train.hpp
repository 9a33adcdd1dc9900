#pragma once
// `actrain train` for sparse models ([model] kind = sparse_lr | fm): the job and its data from
// the same INI groups, run by run_sparse_job (include/actrain/sparse_engine.hpp).
#include <iosfwd>
#include <string>

#include "apps/job_config.hpp"

#include <actrain/sparse_data.hpp>
#include <actrain/sparse_engine.hpp>

namespace actrain {

bool is_sparse_model_kind(const std::string& kind);

/// A sparse job's training and test sets; truth_auc >= 0 when the data has a known ground truth
/// (synthetic_ctr), else -1.
struct sparse_job_data {
  sparse_dataset train, test;
  double truth_auc = -1;
  double truth_log_loss = -1;
};

/// The job of a parsed config whose model is sparse; throws std::invalid_argument naming a bad
/// key.
sparse_job sparse_job_from_config(const app_config& cfg);
/// Its data ([data] kind libsvm or synthetic_ctr); throws data_error / std::invalid_argument.
sparse_job_data load_sparse_data(const app_config& cfg);

/// Runs the job and prints its result line; `http` ("" = off; host:port) serves /metrics,
/// /status and the page while it runs. Returns the command's exit code.
int sparse_train(app_config& cfg, const std::string& http, std::ostream& out, std::ostream& err);

}  // namespace actrain
