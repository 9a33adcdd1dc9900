#pragma once
#include <atomic>
#include <functional>
#include <thread>

namespace actrain {

/// The exit code of a command stopped by SIGINT/SIGTERM (after its last checkpoint, when it
/// takes them): 0 is a completed job, 1 a failed one, 2 bad configuration, 3 a node refused or
/// unable to reach the coordinator.
constexpr int exit_stopped = 4;

/// SIGINT and SIGTERM for a command that runs actors: the first one calls `on_signal(signo)` on a
/// thread of the guard's own (never in the signal handler, never on a CAF thread); a second one
/// ends the process at once with 128 + signo. Handlers, not a blocked mask: threads started
/// before the guard (OpenBLAS starts its pool when the library loads, before main) may take the
/// signal, and a handler runs wherever it lands, where a mask that thread lacks would let the
/// default action kill the process. The handler only writes the signal number to a pipe.
/// One guard per process; restores the previous handlers when destroyed.
class signal_guard {
 public:
  explicit signal_guard(std::function<void(int)> on_signal);
  ~signal_guard();
  signal_guard(const signal_guard&) = delete;
  signal_guard& operator=(const signal_guard&) = delete;
  /// The first signal received, or 0.
  int received() const { return received_.load(); }

 private:
  std::atomic<int> received_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace actrain
