#pragma once
// A real actrain job running on a background thread, publishing to a metrics hub that an HTTP
// endpoint (127.0.0.1, port 0) serves: what `actrain train --http` does, inside a test.
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <thread>

#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "observe/http_server.hpp"

namespace actrain::job_testing {

/// Owns the actor system, the hub, the endpoint and the job's thread. Construct, poke the
/// endpoint, then wait(). The destructor waits too (a job is never left running).
class running_job {
 public:
  running_job(job_spec job, double stall_after_s = 1.0) : job_(std::move(job)) {
    prepare_config(cfg_);
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    auto data = std::make_shared<job_data>(load_job_data(job_));
    fit_model_to_data(job_, *data);
    data_ = data;
    server_ = std::make_unique<observe::http_server>(hub_);
    server_->start();
    engine_hooks hooks;
    hooks.hub = &hub_;
    hooks.stall_after_s = stall_after_s;
    started_ = std::chrono::steady_clock::now();
    thread_ = std::thread([this, hooks] {
      try {
        promise_.set_value(run_job(*sys_, job_, data_, hooks));
      } catch (...) {
        promise_.set_exception(std::current_exception());
      }
    });
    result_ = promise_.get_future();
  }

  ~running_job() {
    if (thread_.joinable()) wait();
  }

  running_job(const running_job&) = delete;
  running_job& operator=(const running_job&) = delete;

  unsigned short port() const { return server_->port(); }
  observe::metrics_hub& hub() { return hub_; }
  observe::http_server& server() { return *server_; }
  const job_spec& job() const { return job_; }
  /// When the job's thread was started (before run_job spawned anything).
  std::chrono::steady_clock::time_point started() const { return started_; }
  bool done() const {
    return result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  /// Waits for the job, at most `bound`; a job that does not end is a hang: the process is
  /// aborted with a message rather than left to ctest's timeout.
  engine_result wait(std::chrono::seconds bound = std::chrono::seconds(90)) {
    if (result_.wait_for(bound) != std::future_status::ready) {
      std::cerr << "job " << job_.name << " did not finish within " << bound.count() << " s\n";
      std::abort();
    }
    thread_.join();
    auto res = result_.get();
    server_->stop();
    return res;
  }

 private:
  job_spec job_;
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::shared_ptr<const job_data> data_;
  observe::metrics_hub hub_;
  std::unique_ptr<observe::http_server> server_;
  std::promise<engine_result> promise_;
  std::future<engine_result> result_;
  std::thread thread_;
  std::chrono::steady_clock::time_point started_;
};

/// Softmax regression on a Fashion-MNIST subset, async, 2 workers and 2 shards: a job of a few
/// seconds that evaluates every epoch, so accuracy shows up while it runs.
inline job_spec small_fashion_job(std::int64_t train_rows, int epochs) {
  job_spec job;
  job.name = "watch-softmax";
  job.model.kind = "softmax";
  job.data.kind = "fashion_mnist";
  job.data.train_subset = train_rows;
  job.data.test_subset = 2000;
  job.workers = 2;
  job.shards = 2;
  job.batch = 32;
  job.epochs = epochs;
  job.eval_every = 1;
  job.optim.kind = "sgd";
  job.optim.lr = 0.05f;
  return job;
}

}  // namespace actrain::job_testing
