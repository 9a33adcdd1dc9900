#include "apps/checkpoint_options.hpp"

namespace actrain {

std::shared_ptr<const checkpoint> find_resume_point(const std::string& dir, job_spec& job,
                                                    std::ostream& out) {
  checkpoint_store store(dir, std::max(1, job.checkpoint.keep));
  std::vector<std::string> refused;
  auto c = store.latest(job_fingerprint(job), &refused);
  for (auto& why : refused) out << "refused checkpoint " << why << std::endl;
  if (!c)
    throw checkpoint_error(dir + ": no good checkpoint of this job to resume from (" +
                           std::to_string(refused.size()) + " refused)");
  out << "resuming from checkpoint " << c->sequence << " in " << dir << " ("
      << (c->step >= 0 ? "global step " + std::to_string(c->step) + ", " : "") << c->samples
      << " samples, " << c->seconds << " s trained)" << std::endl;
  if (job.checkpoint.dir.empty()) job.checkpoint.dir = dir;
  return std::make_shared<const checkpoint>(std::move(*c));
}

std::string save_model_if_asked(const app_config& cfg, const job_spec& job,
                                const engine_result& res, const standardization& scaling,
                                std::ostream& out) {
  auto path = caf::get_or(caf::content(cfg), "checkpoint.model", std::string{});
  if (path.empty()) return {};
  try {
    auto bytes = save_model(path, {job.model, res.params, job.name, scaling});
    out << "model written: " << path << " (" << bytes << " bytes)" << std::endl;
  } catch (const std::exception& e) {
    return std::string("the model was not written: ") + e.what();
  }
  return {};
}

}  // namespace actrain
