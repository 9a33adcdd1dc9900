// `actrain train`: a whole cluster in this process, with console progress, an optional HTTP
// endpoint (--http host:port), a metrics file and curve plots next to it.
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <actrain/checkpoint.hpp>
#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "apps/checkpoint_options.hpp"
#include "apps/commands.hpp"
#include "apps/job_config.hpp"
#include "apps/signal_guard.hpp"
#include "apps/sparse_train.hpp"
#include "observe/console.hpp"
#include "observe/http_server.hpp"
#include "observe/metrics_file.hpp"
#include "observe/svg_plot.hpp"

namespace actrain {

namespace {

std::string strip_extension(const std::string& path) {
  auto dot = path.find_last_of('.');
  auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path;
  return path.substr(0, dot);
}

/// Where a signal goes once the job runs: its coordinator.
struct stop_target_t {
  std::mutex mutex;
  caf::actor_addr coordinator;
};

}  // namespace

int train_command(const std::vector<std::string>& argv) {
  // SIGINT/SIGTERM: the job ends as stopped after a last checkpoint (with checkpoints on), exit
  // code 4; before the job runs there is nothing to save, and the process ends at once.
  auto stop_target = std::make_shared<stop_target_t>();
  signal_guard guard{[stop_target](int signo) {
    std::lock_guard<std::mutex> lock{stop_target->mutex};
    std::cerr << "actrain train: " << strsignal(signo) << " received, stopping" << std::endl;
    if (!stop_target->coordinator) std::_Exit(128 + signo);  // the job has not started
    if (auto c = caf::actor_cast<coordinator_actor>(stop_target->coordinator))
      caf::anon_send(c, stop_atom::value, std::string("signal ") + sigabbrev_np(signo));
    // else the job has ended already; the command finishes as it was
  }};
  auto args = argv;
  auto http = take_http_option(args);
  auto resume_dir = take_option(args, "--resume");
  app_config cfg;
  if (auto msg = load_app_config(cfg, args); !msg.empty()) {
    std::cerr << "actrain train: " << msg << "\n";
    return 2;
  }
  if (cfg.cli_helptext_printed) return 0;  // printed what was asked for; no job runs
  if (is_sparse_model_kind(caf::get_or(caf::content(cfg), "model.kind", std::string{})))
    return sparse_train(cfg, http, std::cout, std::cerr);
  job_spec job;
  std::shared_ptr<job_data> data;
  std::optional<observe::http_address> http_at;
  std::unique_ptr<observe::metrics_file_writer> metrics;
  std::shared_ptr<const checkpoint> resume;
  try {
    if (!http.empty()) http_at = observe::parse_http_address(http);
    job = job_from_config(cfg);
    data = std::make_shared<job_data>(load_job_data(job));
    fit_model_to_data(job, *data);
    validate(job);
    if (auto w = data_warning(job, *data); !w.empty())
      std::cerr << "actrain train: warning: " << w << "\n";
    if (!job.metrics_path.empty())
      metrics = std::make_unique<observe::metrics_file_writer>(job.metrics_path);
    if (!resume_dir.empty()) resume = find_resume_point(resume_dir, job, std::cout);
  } catch (const std::exception& e) {
    std::cerr << "actrain train: " << e.what() << "\n";
    return 2;
  }
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  std::cout << "job " << job.name << ": " << describe(job.model) << ", " << job.mode << ", "
            << job.workers << " worker(s), " << job.shards << " shard(s), batch " << job.batch
            << ", " << job.epochs << " epoch(s), " << data->train.rows << " training rows"
            << std::endl;
  observe::metrics_hub hub;
  std::unique_ptr<observe::http_server> server;
  if (http_at) {
    server = std::make_unique<observe::http_server>(hub, http_at->host, http_at->port);
    server->start();
    std::cout << "dashboard: http://" << http_at->host << ":" << server->port()
              << "/  (metrics: /metrics, status: /status)" << std::endl;
  }
  observe::progress_reporter console(std::cout, observe::progress_reporter::stdout_is_terminal(),
                                     5);
  engine_hooks hooks;
  hooks.hub = &hub;
  hooks.stall_after_s = caf::get_or(caf::content(cfg), "job.stall-after", 1.0);
  if (!(hooks.stall_after_s > 0)) {
    std::cerr << "actrain train: job.stall-after must be > 0\n";
    return 2;
  }
  hooks.on_eval = [&](const progress_point& p) {
    std::cout << (observe::progress_reporter::stdout_is_terminal() ? "\n" : "") << "epoch "
              << p.epoch << "/" << job.epochs << "  step " << p.step << "  train loss "
              << std::setprecision(4) << p.train_loss << "  test loss " << p.test_loss
              << "  test acc " << p.test_accuracy << observe::class_summary(p.classes) << "  "
              << static_cast<long>(p.samples / std::max(p.seconds, 1e-9)) << " samples/s  "
              << std::setprecision(3) << p.seconds << " s" << std::endl;
    if (metrics)
      metrics->append({p.seconds, p.samples, p.train_loss, p.test_loss, p.test_accuracy,
                       p.samples / std::max(p.seconds, 1e-9), p.classes});
  };
  hooks.on_event = [](const std::string& line) { std::cout << line << std::endl; };
  hooks.on_tick = [&](const progress_point&, double) {
    auto snap = hub.snapshot();
    console.report(snap);
  };
  auto cc = wire_job(sys, job, data, hooks);
  cc.resume = resume;
  auto coord = spawn_coordinator(sys, std::move(cc));
  {
    std::lock_guard<std::mutex> lock{stop_target->mutex};
    stop_target->coordinator = coord.address();
  }
  auto res = run_coordinator(sys, coord);
  auto snap = hub.snapshot();
  console.finish(snap);
  if (!job.metrics_path.empty()) {
    for (auto& file : observe::write_curve_plots(strip_extension(job.metrics_path), snap.curve))
      std::cout << "plot: " << file << "\n";
  }
  if (server) server->stop();
  if (!res.ok && guard.received() != 0) {
    std::cerr << "actrain train: " << res.error << "\n";
    return exit_stopped;
  }
  if (!res.ok) {
    std::cerr << "actrain train: job failed: " << res.error << "\n";
    return 1;
  }
  if (auto why = save_model_if_asked(cfg, job, res, data->scaling, std::cout); !why.empty()) {
    std::cerr << "actrain train: " << why << "\n";
    return 1;
  }
  // Six significant digits: enough to compare with `actrain eval` and between runs.
  std::cout << observe::run_summary(snap) << std::setprecision(6) << "result: test loss "
            << res.test.loss << ", test accuracy " << res.test.accuracy << ", "
            << static_cast<long>(res.samples_per_s) << " samples/s over " << res.seconds << " s"
            << std::endl;
  if (res.bytes_pushed > 0)
    std::cout << "traffic: workers pushed " << std::setprecision(4) << res.bytes_pushed / 1e6
              << " MB of gradients (compression " << job.compression << ") and received "
              << res.bytes_received / 1e6 << " MB of weights" << std::endl;
  return 0;
}

}  // namespace actrain
