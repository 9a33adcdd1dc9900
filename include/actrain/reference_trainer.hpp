#pragma once
#include <functional>
#include <vector>

#include <actrain/job.hpp>

namespace actrain {

/// One line of progress from a trainer.
struct progress_point {
  int epoch = 0;
  std::int64_t step = 0;
  std::int64_t samples = 0;
  double seconds = 0;
  double train_loss = 0;  ///< mean loss over the epoch's batches
  double test_loss = 0;
  double test_accuracy = 0;
  class_report classes{};  ///< the evaluation's per-class report (eval_result::classes)
};

struct train_result {
  std::vector<float> params;
  std::vector<progress_point> history;  ///< one point per evaluation
  double seconds = 0;                   ///< training time, evaluation excluded
  std::int64_t samples = 0;
  double samples_per_s = 0;
  eval_result test;  ///< final evaluation
};

/// The single-threaded ground truth: no actors, one model, plain mini-batch SGD (the job's
/// optimizer applied to the whole vector as one slice), batches from batch_iterator with the job's
/// seed. Engine runs are compared against it, and it is the "bare loop" in benchmarks.
/// `on_progress` is called after each evaluation when set. `max_steps` > 0 stops after that many
/// updates.
train_result reference_train(const job_spec& job, const job_data& data,
                             const std::function<void(const progress_point&)>& on_progress = {},
                             std::int64_t max_steps = 0);

}  // namespace actrain
