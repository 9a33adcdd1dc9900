#pragma once
// Child processes for tests that run real `actrain` processes: spawned with their stdout and
// stderr captured, waited on by what they print (bounded), and SIGKILLed and reaped by the
// destructor if still running, so no test leaves a process behind.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace actrain::test {

struct child {
  pid_t pid = -1;
  int out = -1;      ///< read end of its stdout+stderr
  std::string text;  ///< what it printed so far
  int status = -1;   ///< waitpid status once reaped
  bool reaped = false;
};

struct process_group {
  std::vector<child> kids;

  process_group() = default;
  process_group(const process_group&) = delete;
  process_group& operator=(const process_group&) = delete;
  ~process_group() {
    for (auto& k : kids) {
      if (!k.reaped && k.pid > 0) {
        ::kill(k.pid, SIGKILL);
        ::waitpid(k.pid, &k.status, 0);
      }
      if (k.out >= 0) ::close(k.out);
    }
  }

  /// Starts argv[0] with argv; returns its index in kids.
  std::size_t spawn(const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    kids.push_back(child{pid, fds[0], {}, -1, false});
    return kids.size() - 1;
  }

  /// Reads whatever child k printed; true at end of file.
  static bool drain(child& k) {
    char buf[4096];
    for (;;) {
      auto n = ::read(k.out, buf, sizeof buf);
      if (n > 0)
        k.text.append(buf, static_cast<std::size_t>(n));
      else
        return n == 0;
    }
  }

  /// Waits (bounded) until child k printed `what` (at or after offset `from` of its output);
  /// returns the text after it up to the line end (empty when it never did).
  std::string wait_for_line(std::size_t k, const std::string& what, std::chrono::seconds bound,
                            std::size_t from = 0) {
    auto deadline = std::chrono::steady_clock::now() + bound;
    auto& c = kids[k];
    for (;;) {
      auto at = c.text.find(what, from);
      if (at != std::string::npos) {
        auto end = c.text.find('\n', at);
        if (end != std::string::npos)
          return c.text.substr(at + what.size(), end - at - what.size());
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      pollfd p{c.out, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 200)));
      if (drain(c) && c.text.find(what, from) == std::string::npos) return {};
    }
  }

  /// Waits (bounded) until child k exits, draining what it prints; true once reaped.
  bool wait_exit(std::size_t k, std::chrono::seconds bound) {
    auto deadline = std::chrono::steady_clock::now() + bound;
    auto& c = kids[k];
    int pfd = static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0));
    while (!c.reaped) {
      drain(c);
      if (::waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.reaped = true;
        break;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd fds[2] = {{pfd, POLLIN, 0}, {c.out, POLLIN, 0}};
      ::poll(pfd >= 0 ? fds : fds + 1, pfd >= 0 ? 2 : 1,
             static_cast<int>(std::min<long>(left.count(), 200)));
    }
    if (pfd >= 0) ::close(pfd);
    drain(c);
    return c.reaped;
  }

  /// Exit code of reaped child k (-1 when it did not exit normally).
  int exit_code(std::size_t k) const {
    auto& c = kids[k];
    return c.reaped && WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1;
  }

  /// Reaps every child, bounded; returns false (and names the ones left) if one was still
  /// running at the deadline. Waits on the exits themselves: poll() on a pidfd per child (it
  /// becomes readable when the process ends), draining output meanwhile.
  bool reap_all(std::chrono::seconds bound) {
    auto deadline = std::chrono::steady_clock::now() + bound;
    for (;;) {
      std::vector<pollfd> fds;
      for (auto& k : kids) {
        if (k.reaped) continue;
        drain(k);
        if (::waitpid(k.pid, &k.status, WNOHANG) == k.pid) {
          k.reaped = true;
          continue;
        }
        int pfd = static_cast<int>(::syscall(SYS_pidfd_open, k.pid, 0));
        if (pfd >= 0) fds.push_back(pollfd{pfd, POLLIN, 0});
      }
      if (std::all_of(kids.begin(), kids.end(), [](const child& k) { return k.reaped; }))
        return true;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() > 0 && !fds.empty())
        ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
      for (auto& f : fds) ::close(f.fd);
      if (std::chrono::steady_clock::now() > deadline || fds.empty()) {
        bool all = true;
        for (auto& k : kids) {
          if (!k.reaped && ::waitpid(k.pid, &k.status, WNOHANG) == k.pid) k.reaped = true;
          if (!k.reaped) {
            all = false;
            ADD_FAILURE() << "still running: pid " << k.pid << ":\n" << k.text;
          }
        }
        return all;
      }
    }
  }
};

}  // namespace actrain::test
