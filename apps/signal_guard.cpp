#include "apps/signal_guard.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace actrain {

namespace {

int pipe_fds[2] = {-1, -1};
volatile sig_atomic_t signals_seen = 0;
struct sigaction previous_int, previous_term;

void on_signal_handler(int signo) {
  if (signals_seen++ > 0) std::_Exit(128 + signo);  // the second one: stop waiting
  unsigned char b = static_cast<unsigned char>(signo);
  auto saved = errno;
  [[maybe_unused]] auto n = ::write(pipe_fds[1], &b, 1);
  errno = saved;
}

}  // namespace

signal_guard::signal_guard(std::function<void(int)> on_signal) {
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("signal_guard: pipe failed");
  struct sigaction sa {};
  sa.sa_handler = on_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &previous_int);
  ::sigaction(SIGTERM, &sa, &previous_term);
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    while (!done_) {
      pollfd p{pipe_fds[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      unsigned char b = 0;
      if (::read(pipe_fds[0], &b, 1) == 1 && received_.load() == 0) {
        received_ = b;
        on_signal(b);
      }
    }
  });
}

signal_guard::~signal_guard() {
  done_ = true;
  thread_.join();
  ::sigaction(SIGINT, &previous_int, nullptr);
  ::sigaction(SIGTERM, &previous_term, nullptr);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  pipe_fds[0] = pipe_fds[1] = -1;
  signals_seen = 0;
}

}  // namespace actrain
