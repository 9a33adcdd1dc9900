#pragma once
// What `actrain train` and the coordinator node do with checkpoint and model files: find the
// checkpoint to resume from (--resume DIR) and write the trained model ([checkpoint] model).
#include <memory>
#include <ostream>
#include <string>

#include <actrain/checkpoint.hpp>
#include <actrain/protocol.hpp>
#include "apps/job_config.hpp"

namespace actrain {

/// The newest good checkpoint of `job` in `dir`; each file refused on the way gets a line on
/// `out`, and so does the one resumed from. Throws checkpoint_error when none is good. A job
/// without [checkpoint] dir goes on checkpointing into `dir`.
std::shared_ptr<const checkpoint> find_resume_point(const std::string& dir, job_spec& job,
                                                    std::ostream& out);

/// Writes the trained model to [checkpoint] model when the config names a file, with a line on
/// `out`. Returns "" or why it could not be written.
std::string save_model_if_asked(const app_config& cfg, const job_spec& job,
                                const engine_result& res, const standardization& scaling,
                                std::ostream& out);

}  // namespace actrain
