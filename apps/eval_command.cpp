// `actrain eval --model FILE --config JOB`: the trained model of a file, evaluated on the test set
// the job file names (no actors: one backend on this thread).
#include <iostream>

#include <actrain/backend.hpp>
#include <actrain/checkpoint.hpp>
#include <actrain/job.hpp>
#include "apps/commands.hpp"
#include "apps/job_config.hpp"

namespace actrain {

int eval_command(const std::vector<std::string>& argv) {
  auto args = argv;
  auto model_path = take_option(args, "--model");
  app_config cfg;
  if (auto msg = load_app_config(cfg, args); !msg.empty()) {
    std::cerr << "actrain eval: " << msg << "\n";
    return 2;
  }
  if (cfg.cli_helptext_printed) return 0;
  if (model_path.empty()) {
    std::cerr << "actrain eval: give --model FILE (written by [checkpoint] model)\n";
    return 2;
  }
  try {
    auto m = load_model(model_path);
    auto job = job_from_config(cfg);
    // The test rows are scaled as the training rows were (the model file keeps the statistics),
    // not refitted on the test file.
    job.data.standardize = false;
    auto data = load_job_data(job);
    if (data.test.features != m.spec.input_dim)
      throw std::invalid_argument(
          model_path + ": " + describe(m.spec) + " takes " + std::to_string(m.spec.input_dim) +
          " features, the test set has " + std::to_string(data.test.features));
    if (data.test.num_classes > 0 && data.test.num_classes > m.spec.output_dim)
      throw std::invalid_argument(model_path + ": " + describe(m.spec) + " has " +
                                  std::to_string(m.spec.output_dim) + " outputs, the test set " +
                                  std::to_string(data.test.num_classes) + " classes");
    apply(m.scaling, data.test);
    auto cpu = make_cpu_backend();
    auto res = evaluate(m.spec, m.params, data.test, *cpu);
    std::cout << "model " << describe(m.spec) << " (job " << m.job << ") on " << res.rows
              << " test rows: test loss " << res.loss << ", test accuracy " << res.accuracy
              << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "actrain eval: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace actrain
