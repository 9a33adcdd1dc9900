#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>

#include "actors/engine.hpp"
#include "actors/system.hpp"
#include "apps/commands.hpp"
#include "apps/job_config.hpp"

namespace actrain {

int train_command(const std::vector<std::string>& args) {
  app_config cfg;
  if (auto msg = load_app_config(cfg, args); !msg.empty()) {
    std::cerr << "actrain train: " << msg << "\n";
    return 2;
  }
  job_spec job;
  std::shared_ptr<job_data> data;
  try {
    job = job_from_config(cfg);
    data = std::make_shared<job_data>(load_job_data(job));
    fit_model_to_data(job, *data);
    validate(job);
  } catch (const std::exception& e) {
    std::cerr << "actrain train: " << e.what() << "\n";
    return 2;
  }
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  std::cout << "job " << job.name << ": " << describe(job.model) << ", " << job.mode << ", "
            << job.workers << " worker(s), " << job.shards << " shard(s), batch " << job.batch
            << ", " << job.epochs << " epoch(s), " << data->train.rows << " training rows\n";
  engine_hooks hooks;
  hooks.on_eval = [&](const progress_point& p) {
    std::cout << "epoch " << p.epoch << "/" << job.epochs << "  step " << p.step << "  train loss "
              << std::setprecision(4) << p.train_loss << "  test loss " << p.test_loss
              << "  test acc " << p.test_accuracy << "  " << static_cast<long>(p.samples / std::max(p.seconds, 1e-9))
              << " samples/s  " << std::setprecision(3) << p.seconds << " s" << std::endl;
  };
  hooks.on_event = [](const std::string& line) { std::cout << line << std::endl; };
  auto res = run_job(sys, job, data, hooks);
  if (!res.ok) {
    std::cerr << "actrain train: job failed: " << res.error << "\n";
    return 1;
  }
  std::cout << "result: test loss " << res.test.loss << ", test accuracy " << res.test.accuracy
            << ", " << static_cast<long>(res.samples_per_s) << " samples/s over " << res.seconds
            << " s\n";
  return 0;
}

}  // namespace actrain
