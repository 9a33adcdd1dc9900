// A job file's text -> app_config -> job_spec -> validate(): what `actrain train --config` does
// with the file before anything runs. Bad input must end as the loader's message or
// std::invalid_argument (job_from_config and validate name the field).
#include <stdexcept>
#include <string>

#include "apps/job_config.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string ini(reinterpret_cast<const char*>(data), size);
  actrain::app_config cfg;
  auto msg = actrain::load_app_config_text(cfg, "fuzz.ini", ini);
  if (!msg.empty()) return 0;
  try {
    auto job = actrain::job_from_config(cfg);
    actrain::validate(job);
    if (job.model.input_dim > 0 && job.model.output_dim > 0) {
      actrain::plan_topology(job, actrain::placement::one_process);
      actrain::plan_topology(job, actrain::placement::cluster);
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
