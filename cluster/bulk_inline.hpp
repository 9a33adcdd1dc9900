#pragma once
// The bulk channel's execution unit for the threads that read its sockets (cluster/bulk.hpp):
// the actor a frame wakes runs on the reading thread, which is awake and has the frame's values
// in its cache, instead of waking another thread. Internal to actrain::cluster.
#include <cstddef>
#include <deque>
#include <functional>

#include <caf/actor_system.hpp>
#include <caf/execution_unit.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

namespace actrain::bulk {

/// On the ps node, runs the shard a connection thread hands a request to on that thread (on the
/// worker node, the worker an answer completes on the reader thread), instead of waking a
/// scheduler thread for it. CAF resumes an
/// actor on the execution unit its enqueuer passes when the message wakes it (only one unit
/// resumes an actor at a time), as its own scheduler workers do: this unit mirrors their loop.
/// What the shard wakes in turn runs here too, after it, as a scheduler worker runs what its own
/// jobs wake: a sync barrier's push to its shard and the shard's answer to the barrier make one
/// chain on this thread instead of a hop to a scheduler thread and back. The unit runs at most
/// `max_jobs` jobs of at most `max_inline` messages each per request (other connections'
/// requests among them); the rest goes to the scheduler, so the thread is soon back to reading
/// its own peer.
class inline_unit : public caf::execution_unit {
 public:
  static constexpr std::size_t max_jobs = 4;

  /// `max_inline`: messages per job and turn; `before_run` and `after_run`: called around each
  /// turn (the ps node holds answers back during it and writes them after it).
  explicit inline_unit(caf::actor_system& sys, std::size_t max_inline = 8,
                       std::function<void()> before_run = {},
                       std::function<void()> after_run = {})
      : caf::execution_unit(&sys),
        max_inline_(max_inline),
        before_run_(std::move(before_run)),
        after_run_(std::move(after_run)) {}

  void exec_later(caf::resumable* job) override {
    if (running_) {
      if (ran_ + later_.size() < max_jobs)
        later_.push_back(job);  // keeps the reference the enqueue took
      else
        system().scheduler().enqueue(job);
      return;
    }
    running_ = true;
    ran_ = 0;
    run(job);
    while (!later_.empty()) {
      auto* next = later_.front();
      later_.pop_front();
      run(next);
    }
    running_ = false;
  }

 private:
  void run(caf::resumable* job) {
    ++ran_;
    if (before_run_) before_run_();
    auto next = job->resume(this, max_inline_);
    if (after_run_) after_run_();
    switch (next) {
      case caf::resumable::resume_later:
        system().scheduler().enqueue(job);  // more in its mailbox: the scheduler goes on with it
        break;
      case caf::resumable::done:
      case caf::resumable::awaiting_message:
      case caf::resumable::shutdown_execution_unit:
        intrusive_ptr_release(job);
        break;
    }
  }

  std::size_t max_inline_;
  std::function<void()> before_run_;
  std::function<void()> after_run_;
  bool running_ = false;
  std::size_t ran_ = 0;
  std::deque<caf::resumable*> later_;
};

}  // namespace actrain::bulk
