#include "apps/node_command.hpp"
#include "observe/console.hpp"
#include "observe/http_server.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <pthread.h>

#include <actrain/backend.hpp>
#include "apps/checkpoint_options.hpp"
#include "apps/job_config.hpp"
#include "apps/signal_guard.hpp"
#include "apps/sparse_train.hpp"

namespace actrain {

cluster_options cluster_from_config(const caf::actor_system_config& cfg) {
  using caf::get_or;
  auto& c = caf::content(cfg);
  cluster_options o;
  auto ms = [&](const char* key, std::chrono::milliseconds def) {
    auto v = get_or(c, key, static_cast<std::int64_t>(def.count()));
    if (v <= 0)
      throw std::invalid_argument(std::string(key) + " must be > 0 ms, got " + std::to_string(v));
    return std::chrono::milliseconds(v);
  };
  o.host = get_or(c, "cluster.host", o.host);
  auto port = [&](const char* key) {
    auto p = get_or(c, key, static_cast<std::int64_t>(0));
    if (p < 0 || p > 65535)
      throw std::invalid_argument(std::string(key) + " must be in [0, 65535], got " +
                                  std::to_string(p));
    return static_cast<std::uint16_t>(p);
  };
  o.port = port("cluster.port");
  o.token = get_or(c, "cluster.token", o.token);
  auto ps = get_or(c, "cluster.ps-nodes", static_cast<std::int64_t>(o.ps_nodes));
  if (ps < 1 || ps > 4096)
    throw std::invalid_argument("cluster.ps-nodes must be in [1, 4096], got " + std::to_string(ps));
  o.ps_nodes = static_cast<int>(ps);
  o.name = get_or(c, "cluster.name", o.name);
  o.port_file = get_or(c, "cluster.port-file", o.port_file);
  auto max_workers = get_or(c, "cluster.max-workers", static_cast<std::int64_t>(o.max_workers));
  if (max_workers < 0 || max_workers > max_cluster_workers)
    throw std::invalid_argument("cluster.max-workers must be in [0, " +
                                std::to_string(max_cluster_workers) + "], got " +
                                std::to_string(max_workers));
  o.max_workers = static_cast<int>(max_workers);
  auto replicas = get_or(c, "cluster.replicas", static_cast<std::int64_t>(o.replicas));
  if (replicas < 0 || replicas > 1)
    throw std::invalid_argument("cluster.replicas must be 0 or 1, got " +
                                std::to_string(replicas));
  o.replicas = static_cast<int>(replicas);
  o.heartbeat = ms("cluster.heartbeat", o.heartbeat);
  o.connection_timeout = ms("cluster.connection-timeout", o.connection_timeout);
  o.join_timeout = ms("cluster.join-timeout", o.join_timeout);
  auto node_timeout =
      get_or(c, "cluster.node-timeout", static_cast<std::int64_t>(o.node_timeout.count()));
  if (node_timeout < 0)
    throw std::invalid_argument("cluster.node-timeout must be >= 0 ms (0 = off), got " +
                                std::to_string(node_timeout));
  o.node_timeout = std::chrono::milliseconds(node_timeout);
  auto rejoin = get_or(c, "cluster.rejoin-timeout", static_cast<std::int64_t>(0));
  if (rejoin < 0)
    throw std::invalid_argument("cluster.rejoin-timeout must be >= 0 ms, got " +
                                std::to_string(rejoin));
  o.rejoin_timeout = std::chrono::milliseconds(rejoin);
  o.worker_delay_s = get_or(c, "cluster.worker-delay", o.worker_delay_s);
  auto chunk = get_or(c, "cluster.chunk-bytes", static_cast<std::int64_t>(o.chunking.chunk_bytes));
  if (chunk < 0)
    throw std::invalid_argument("cluster.chunk-bytes must be >= 0, got " + std::to_string(chunk));
  o.chunking.chunk_bytes = static_cast<std::size_t>(chunk);
  o.chunking.window = static_cast<int>(
      get_or(c, "cluster.chunk-window", static_cast<std::int64_t>(o.chunking.window)));
  validate(o.chunking);
  o.direct_connections = get_or(c, "cluster.direct-connections", o.direct_connections);
  o.listen_host = get_or(c, "cluster.listen-host", o.listen_host);
  o.listen_port = port("cluster.listen-port");
  o.bulk_channel = get_or(c, "cluster.bulk-channel", o.bulk_channel);
  o.bulk_port = port("cluster.bulk-port");
  o.advertise_host = get_or(c, "cluster.advertise-host", o.advertise_host);
  o.tls.certificate = get_or(c, "cluster.tls-certificate", o.tls.certificate);
  o.tls.key = get_or(c, "cluster.tls-key", o.tls.key);
  o.tls.ca = get_or(c, "cluster.tls-ca", o.tls.ca);
  if (o.connection_timeout <= o.heartbeat)
    throw std::invalid_argument("cluster.connection-timeout must exceed cluster.heartbeat");
  if (o.node_timeout.count() > 0 && o.node_timeout <= o.heartbeat)
    throw std::invalid_argument("cluster.node-timeout must exceed cluster.heartbeat (or be 0)");
  return o;
}

namespace {

/// Bounds the actor system's shutdown once a node's work is done. CAF 0.17 can block in the
/// system's destructor on a middleman connection whose peer is shutting down at the same moment
/// (seen once in CI: a worker node printed its outcome, then never exited). Everything the node
/// says is flushed before arming, so if shutdown takes longer than `grace` the process exits
/// with the node's status instead of hanging. Declared before the actor system so that it
/// outlives the system's destructor.
class exit_watchdog {
 public:
  /// Starts the countdown; returns `rc` for `return watchdog.arm(rc);`.
  int arm(int rc, std::chrono::seconds grace = std::chrono::seconds(5)) {
    std::cout.flush();
    std::cerr.flush();
    thread_ = std::thread([this, rc, grace] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, grace, [this] { return done_; })) {
        std::cerr << "actrain node: shutdown took over " << grace.count() << " s; exiting anyway"
                  << std::endl;
        std::_Exit(rc);
      }
    });
    return rc;
  }
  ~exit_watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// SIGINT/SIGTERM: a ps or worker node stops its actors (a worker's rows go to the others); the
/// coordinator ends the job as stopped (a dense one after a last checkpoint). A second signal
/// ends at once.
std::function<void(int)> stop_on_signal(std::shared_ptr<node_control> control) {
  return [control](int signo) {
    std::cerr << "actrain node: " << strsignal(signo) << " received, stopping" << std::endl;
    control->stop(std::string("signal ") + sigabbrev_np(signo));
  };
}

/// Serves /metrics, /status and the page from `hub` at `http` (host:port); throws
/// std::invalid_argument for a bad address.
std::unique_ptr<observe::http_server> start_dashboard(observe::metrics_hub& hub,
                                                      const std::string& http,
                                                      const std::string& tag) {
  auto at = observe::parse_http_address(http);
  auto server = std::make_unique<observe::http_server>(hub, at.host, at.port);
  server->start();
  std::cout << tag << "dashboard: http://" << at.host << ":" << server->port() << "/" << std::endl;
  return server;
}

/// A coordinator node's hooks: its port and events on stdout, stoppable through `control`.
node_hooks coordinator_hooks(const std::string& tag, std::shared_ptr<node_control> control) {
  node_hooks hooks;
  hooks.control = std::move(control);
  hooks.on_listening = [tag](std::uint16_t port) {
    std::cout << tag << "listening on port " << port << std::endl;
  };
  hooks.on_event = [tag](const std::string& line) { std::cout << tag << line << std::endl; };
  return hooks;
}

/// How a ps or worker node ends: its line, and the exit code (4 stopped, 1 the job failed, 3
/// refused or the coordinator unreachable).
int finish_member(const node_outcome& out, int signal, node_role role, const std::string& tag,
                  exit_watchdog& watchdog) {
  if (signal != 0) {
    std::cerr << "actrain node: stopped by " << sigabbrev_np(signal) << ": " << out.message << "\n";
    return watchdog.arm(exit_stopped);
  }
  if (!out.ok) {
    std::cerr << "actrain node: " << out.message << "\n";
    return watchdog.arm(out.job_stopped ? exit_stopped : out.job_failed ? 1 : 3);
  }
  std::cout << tag << to_string(role) << " " << out.index << ": " << out.message << std::endl;
  return watchdog.arm(0);
}

}  // namespace

/// `actrain node` of a sparse job: the same roles, registration and signals as a dense one.
static int sparse_node(app_config& cfg, node_role role, const cluster_options& opts, sparse_job job,
                       const std::shared_ptr<sparse_job_data>& data, const std::string& http) {
  prepare_cluster_config(cfg, opts);
  auto control = std::make_shared<node_control>();
  signal_guard guard{stop_on_signal(control)};
  exit_watchdog watchdog;
  caf::actor_system sys{cfg};
  auto tag = "[" + to_string(role) + "] ";
  if (role == node_role::coordinator) {
    auto hooks = coordinator_hooks(tag, control);
    job.on_event = hooks.on_event;
    observe::metrics_hub hub;
    std::unique_ptr<observe::http_server> server;
    sparse_result r;
    try {
      if (!http.empty()) {
        server = start_dashboard(hub, http, tag);
        job.hub = &hub;
      }
      r = run_sparse_coordinator_node(sys, job, data->train.rows, data->test, opts, hooks);
    } catch (const std::exception& e) {
      std::cerr << "actrain node: " << e.what() << "\n";
      return watchdog.arm(2);
    }
    if (server) server->stop();
    if (!r.ok) {
      std::cerr << "actrain node: job failed: " << r.error << "\n";
      return watchdog.arm(guard.received() != 0 ? exit_stopped : 1);
    }
    std::cout << tag << std::setprecision(6) << "result: test AUC " << r.test_auc
              << ", test log loss " << r.test_log_loss << ", test accuracy " << r.test_accuracy;
    if (data->truth_auc >= 0) std::cout << " (ground truth: AUC " << data->truth_auc << ")";
    std::cout << ", " << static_cast<long>(r.samples_per_s) << " samples/s over " << r.seconds
              << " s, " << static_cast<long>(r.bytes_per_step) << " bytes per step, workers lost "
              << r.workers_lost << std::endl;
    std::cout << observe::traffic_summary(r.nodes) << std::flush;
    return watchdog.arm(0);
  }
  auto train = std::shared_ptr<const sparse_dataset>(data, &data->train);
  auto out = role == node_role::ps ? run_sparse_ps_node(sys, job, opts, control)
                                   : run_sparse_worker_node(sys, job, train, opts, control);
  return finish_member(out, guard.received(), role, tag, watchdog);
}

int node_command(const std::vector<std::string>& argv) {
  auto args = argv;
  auto http = take_http_option(args);  // coordinator only: /metrics, /status, the live page
  auto resume_dir = take_option(args, "--resume");  // coordinator only: a restarted cluster
  std::vector<std::string> rest;
  std::string role_arg;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--role" && i + 1 < args.size())
      role_arg = args[++i];
    else if (args[i].rfind("--role=", 0) == 0)
      role_arg = args[i].substr(7);
    else
      rest.push_back(args[i]);
  }
  app_config cfg;
  if (auto msg = load_app_config(cfg, rest); !msg.empty()) {
    std::cerr << "actrain node: " << msg << "\n";
    return 2;
  }
  if (cfg.cli_helptext_printed) return 0;  // printed what was asked for; no node starts
  node_role role;
  cluster_options opts;
  job_spec job;
  std::shared_ptr<job_data> data;
  std::shared_ptr<const checkpoint> resume;
  const bool sparse =
      is_sparse_model_kind(caf::get_or(caf::content(cfg), "model.kind", std::string{}));
  sparse_job sjob;
  std::shared_ptr<sparse_job_data> sdata;
  try {
    if (role_arg.empty()) role_arg = caf::get_or(caf::content(cfg), "cluster.role", std::string{});
    if (role_arg.empty()) throw std::invalid_argument("--role (or cluster.role) is required");
    role = parse_role(role_arg);
    if (!http.empty() && role != node_role::coordinator)
      throw std::invalid_argument("--http is served by the coordinator node only");
    if (!resume_dir.empty() && role != node_role::coordinator)
      throw std::invalid_argument("--resume is given to the coordinator node only");
    opts = cluster_from_config(cfg);
    validate(opts.tls);  // bad certificate files named before anything listens
    if (sparse) {
      if (!resume_dir.empty())
        throw std::invalid_argument("--resume: sparse jobs have no checkpoints yet");
      // Every node reads or generates the same rows from the same config.
      sjob = sparse_job_from_config(cfg);
      sdata = std::make_shared<sparse_job_data>(load_sparse_data(cfg));
      prepare_sparse_job(sjob, sdata->train.rows,
                         std::max(sdata->train.id_space, sdata->test.id_space));
    }
  } catch (const std::exception& e) {
    std::cerr << "actrain node: " << e.what() << "\n";
    return 2;
  }
  if (sparse) return sparse_node(cfg, role, opts, sjob, sdata, http);
  try {
    job = job_from_config(cfg);
    // Every node derives the same data from the same config (synthetic data from the seed), so
    // no data crosses the network; ps nodes need it only for the model's dimensions.
    data = std::make_shared<job_data>(load_job_data(job));
    fit_model_to_data(job, *data);
    validate(job);
    if (auto w = data_warning(job, *data); !w.empty() && role == node_role::coordinator)
      std::cerr << "actrain node: warning: " << w << "\n";
    if (!resume_dir.empty()) resume = find_resume_point(resume_dir, job, std::cout);
  } catch (const std::exception& e) {
    std::cerr << "actrain node: " << e.what() << "\n";
    return 2;
  }
  prepare_cluster_config(cfg, opts);
  auto control = std::make_shared<node_control>();
  signal_guard guard{stop_on_signal(control)};
  exit_watchdog watchdog;
  caf::actor_system sys{cfg};
  auto tag = "[" + to_string(role) + "] ";
  if (role == node_role::coordinator) {
    auto hooks = coordinator_hooks(tag, control);
    hooks.engine.on_eval = [&](const progress_point& p) {
      std::cout << tag << "epoch " << p.epoch << "/" << job.epochs << "  step " << p.step
                << "  train loss " << std::setprecision(4) << p.train_loss << "  test loss "
                << p.test_loss << "  test acc " << p.test_accuracy
                << observe::class_summary(p.classes) << std::endl;
    };
    hooks.engine.on_event = hooks.on_event;
    observe::metrics_hub hub;
    std::unique_ptr<observe::http_server> server;
    if (!http.empty()) {
      try {
        server = start_dashboard(hub, http, tag);
      } catch (const std::exception& e) {
        std::cerr << "actrain node: " << e.what() << "\n";
        return watchdog.arm(2);
      }
      hooks.engine.hub = &hub;
    }
    engine_result res;
    try {
      res = run_coordinator_node(sys, job, data, opts, hooks, resume);
    } catch (const std::exception& e) {
      std::cerr << "actrain node: " << e.what() << "\n";
      return watchdog.arm(2);
    }
    if (!res.ok && (guard.received() != 0 || res.stopped)) {
      std::cerr << "actrain node: " << res.error << "\n";
      return watchdog.arm(exit_stopped);
    }
    if (!res.ok) {
      std::cerr << "actrain node: job failed: " << res.error << "\n";
      return watchdog.arm(1);
    }
    if (auto why = save_model_if_asked(cfg, job, res, data->scaling, std::cout); !why.empty()) {
      std::cerr << "actrain node: " << why << "\n";
      return watchdog.arm(1);
    }
    // The training-set loss of the final parameters: what the closed-form least-squares MSE
    // is compared with (tests and the launcher print it).
    auto cpu = make_cpu_backend();
    auto train = evaluate(job.model, res.params, data->train, *cpu);
    std::cout << tag << "result: train loss " << std::setprecision(9) << train.loss
              << ", test loss " << res.test.loss << ", test accuracy " << res.test.accuracy << ", "
              << static_cast<long>(res.samples_per_s) << " samples/s over " << res.seconds
              << " s, workers lost " << res.workers_lost << std::endl;
    std::cout << tag << "traffic: workers pushed " << res.bytes_pushed
              << " bytes of gradients and received " << res.bytes_received
              << " bytes of weights (payload)" << std::endl
              << observe::traffic_summary(res.nodes) << std::flush;
    return watchdog.arm(0);
  }
  auto out = role == node_role::ps ? run_ps_node(sys, job, opts, control)
                                   : run_worker_node(sys, job, data, opts, control);
  return finish_member(out, guard.received(), role, tag, watchdog);
}

}  // namespace actrain
