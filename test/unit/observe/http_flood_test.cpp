// The HTTP endpoint under connection floods on 127.0.0.1 port 0: held and re-opened connections,
// idle and trickling clients, per-address limits (other 127.x.y.z source addresses stand for
// other hosts: all of 127.0.0.0/8 is loopback on Linux). Every wait is on a socket event with a
// bound in time; every loop is bounded in count too.
#include <poll.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "observe/http_server.hpp"
#include "synthetic_run.hpp"

namespace actrain::observe {
namespace {

using clock_type = std::chrono::steady_clock;
using testing::connect_local;
using testing::parse_response;
using testing::send_all;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Connects from source address `from` to 127.0.0.1:port; -1 on failure.
int connect_from(const char* from, unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Reads until the peer closes or `bound_s` passes; sets `closed` when it closed (EOF or reset).
std::string read_until_closed(int fd, double bound_s, bool& closed) {
  closed = false;
  std::string out;
  char buf[16384];
  const auto t0 = clock_type::now();
  for (int i = 0; i < 100000; ++i) {
    const double left = bound_s - seconds_since(t0);
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, std::max(1, static_cast<int>(left * 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      closed = true;
      break;
    }
  }
  return out;
}

/// True when the server closes `fd` within `bound_s`.
bool closed_within(int fd, double bound_s) {
  bool closed = false;
  read_until_closed(fd, bound_s, closed);
  return closed;
}

/// True when nothing (no data, no close) is pending on `fd` right now.
bool quiet(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

struct timed_reply {
  testing::response response;
  double seconds = -1;  // from connect to the server's close after the reply
  bool complete = false;
};

/// GET `target` on a fresh connection from `from`, waiting at most `bound_s` for the whole reply.
timed_reply timed_get(unsigned short port, const std::string& target, double bound_s,
                      const char* from = "127.0.0.1") {
  timed_reply r;
  const auto t0 = clock_type::now();
  const int fd = connect_from(from, port);
  if (fd < 0) return r;
  send_all(fd, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  bool closed = false;
  const std::string raw = read_until_closed(fd, bound_s, closed);
  r.seconds = seconds_since(t0);
  ::close(fd);
  r.response = parse_response(raw);
  const std::string length = r.response.header("Content-Length");
  r.complete = closed && !length.empty() && std::stoul(length) == r.response.body.size();
  return r;
}

/// A flood connection: silent, or stopped in the middle of its request line or headers.
int open_flood_connection(unsigned short port, int i) {
  const int fd = connect_local(port, 2);
  if (fd < 0) return fd;
  if (i % 3 == 1) send_all(fd, "GET /metrics HT");
  if (i % 3 == 2) send_all(fd, "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  return fd;
}

class http_flood : public ::testing::Test {
 protected:
  void SetUp() override {
    hub_.update([](run_snapshot& s) { s = testing::synthetic_snapshot(12); });
  }
  metrics_hub hub_;
};

/// GETs /metrics and /status, each within 1 s, and prints how long /metrics took.
void expect_answers_within_1s(unsigned short port, const char* when) {
  const auto m = timed_get(port, "/metrics", 1);
  std::cout << "[ measured ] /metrics " << when << ": " << m.seconds * 1000 << " ms\n";
  EXPECT_EQ(m.response.status, 200) << when;
  EXPECT_TRUE(m.complete) << when;
  EXPECT_LT(m.seconds, 1.0) << when;
  EXPECT_NE(m.response.body.find("\nactrain_samples_per_second 1280\n"), std::string::npos);
  const auto s = timed_get(port, "/status", 1);
  EXPECT_EQ(s.response.status, 200) << when;
  EXPECT_TRUE(s.complete) << when;
  EXPECT_LT(s.seconds, 1.0) << when;
}

TEST_F(http_flood, metrics_answers_within_1s_with_200_connections_held_by_one_client) {
  http_server server(hub_);  // the shipped limits: 128 in all, 64 per address
  server.start();
  std::vector<int> held, partial, silent;
  for (int i = 0; i < 200; ++i) {
    const int fd = open_flood_connection(server.port(), i);
    ASSERT_GE(fd, 0) << i;
    held.push_back(fd);
    (i % 3 == 0 ? silent : partial).push_back(fd);
  }
  ASSERT_EQ(partial.size(), 133u);
  // The kernel hands over the 133 that sent part of a request at once, and the server keeps
  // the newest 64 of them: once it has closed the 69th, it has seen them all.
  EXPECT_TRUE(closed_within(partial[68], 5));
  EXPECT_TRUE(quiet(partial[69]));
  EXPECT_TRUE(quiet(partial.back()));
  expect_answers_within_1s(server.port(), "with 200 connections held");

  // About 1 s after their handshake the 67 silent ones are handed over too and push out the
  // partial ones that are left (or these reach their idle deadline first).
  EXPECT_TRUE(closed_within(partial.back(), 5));
  expect_answers_within_1s(server.port(), "with 200 connections held, silent ones handed over");

  EXPECT_GE(server.connections_accepted(), 133u + 64u + 4u);
  EXPECT_GE(server.connections_evicted(), 69u);
  for (int fd : held) ::close(fd);
}

TEST_F(http_flood, a_client_reopening_connections_in_a_loop_does_not_blind_the_endpoint) {
  http_server server(hub_);
  server.start();
  const unsigned short port = server.port();
  std::atomic<bool> done{false};
  std::atomic<std::size_t> reopened{0};
  std::mutex mutex;
  std::condition_variable cv;
  std::thread flooder([&] {
    // Holds 200 connections and re-opens each one the server closes (each re-open makes the
    // server close another, so the churn feeds itself); the 4 oldest are re-opened every round
    // too, so the pressure never lets up. Bounded in rounds and in time.
    std::deque<int> fds;
    for (int i = 0; i < 200; ++i)
      if (const int fd = open_flood_connection(port, i); fd >= 0) fds.push_back(fd);
    const auto t0 = clock_type::now();
    std::vector<pollfd> ps;
    for (int round = 0; round < 100000 && !done.load() && seconds_since(t0) < 20; ++round) {
      ps.clear();
      for (int fd : fds) ps.push_back({fd, POLLIN, 0});
      ::poll(ps.data(), ps.size(), 5);
      // The re-opened ones are the newest now and go to the back.
      std::deque<int> kept, fresh;
      for (std::size_t k = 0; k < ps.size(); ++k) {
        if (ps[k].revents == 0 && k >= 4) {  // still held, and not among the oldest
          kept.push_back(fds[k]);
          continue;
        }
        ::close(fds[k]);
        if (const int fd = open_flood_connection(port, static_cast<int>(round + k)); fd >= 0) {
          fresh.push_back(fd);
          reopened.fetch_add(1);
        }
      }
      fds = std::move(kept);
      fds.insert(fds.end(), fresh.begin(), fresh.end());
      cv.notify_all();
    }
    for (int fd : fds) ::close(fd);
  });

  {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return reopened >= 200; }));
  }
  // Request after request (20 at least) while the flood re-opens another 1000 connections.
  const std::size_t before = reopened.load();
  const auto t0 = clock_type::now();
  double worst = 0;
  int requests = 0;
  for (; requests < 2000 && (requests < 20 || reopened.load() < before + 1000) &&
         seconds_since(t0) < 20;
       ++requests) {
    const auto r = timed_get(port, requests % 2 ? "/status" : "/metrics", 1);
    EXPECT_EQ(r.response.status, 200) << requests << " after " << r.seconds << " s";
    EXPECT_TRUE(r.complete) << requests;
    EXPECT_LT(r.seconds, 1.0) << requests;
    worst = std::max(worst, r.seconds);
  }
  const std::size_t during = reopened.load() - before;
  done = true;
  flooder.join();
  std::cout << "[ measured ] worst of " << requests << " requests while " << during
            << " connections were re-opened: " << worst * 1000 << " ms\n";
  EXPECT_GE(during, 1000u);  // the flood really went on while the requests were answered
  EXPECT_GE(requests, 20);
}

TEST_F(http_flood, idle_and_trickling_connections_are_closed_at_the_idle_deadline) {
  http_limits limits;
  limits.idle_timeout_s = 0.2;
  http_server server(hub_, "127.0.0.1", 0, limits);
  server.start();
  const auto t0 = clock_type::now();
  const int silent = connect_local(server.port(), 2);
  const int partial = connect_local(server.port(), 2);
  const int kept_alive = connect_local(server.port(), 2);
  ASSERT_GE(silent, 0);
  ASSERT_GE(partial, 0);
  ASSERT_GE(kept_alive, 0);
  send_all(partial, "GET /metrics HTTP/1.1\r\nHost: 1");
  // A keep-alive request is answered at once; then the connection idles and is closed too.
  send_all(kept_alive, "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  bool closed = false;
  const auto reply = parse_response(read_until_closed(kept_alive, 2, closed));
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(closed_within(partial, 2));
  const double waited = seconds_since(t0);
  EXPECT_GE(waited, 0.15);
  EXPECT_LT(waited, 1.0);
  // One that never sends a byte reaches the server only after about 1 s (TCP_DEFER_ACCEPT),
  // then gets the same deadline.
  EXPECT_TRUE(closed_within(silent, 4));
  EXPECT_GE(seconds_since(t0), 0.15);

  // A client that trickles its headers a byte every 50 ms is closed at the same deadline: the
  // bytes it sends do not extend it. The whole request would take about 2.5 s.
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: aaaaaaaaaa\r\n\r\n";
  const int trickle = connect_local(server.port(), 2);
  ASSERT_GE(trickle, 0);
  const auto t1 = clock_type::now();
  std::size_t sent = 0;
  bool trickle_closed = false;
  for (; sent < request.size() && !trickle_closed; ++sent) {
    send_all(trickle, request.substr(sent, 1));
    trickle_closed = closed_within(trickle, 0.05);  // paces the bytes and watches for the close
  }
  EXPECT_TRUE(trickle_closed);
  EXPECT_LT(sent, request.size());
  EXPECT_LT(seconds_since(t1), 1.0);

  // Prompt requests are unaffected by the short deadline.
  EXPECT_EQ(timed_get(server.port(), "/metrics", 1).response.status, 200);
  for (int fd : {silent, partial, kept_alive, trickle}) ::close(fd);
}

TEST_F(http_flood, per_client_limit_evicts_that_clients_own_oldest_connections) {
  http_limits limits;
  limits.max_connections = 8;
  limits.max_connections_per_client = 4;
  limits.idle_timeout_s = 30;  // nothing here may close for idleness
  http_server server(hub_, "127.0.0.1", 0, limits);
  server.start();
  std::vector<int> a, b;
  // Each sends a first byte, so it is handed over at once and in order.
  auto open_from = [&](const char* from) {
    const int fd = connect_from(from, server.port());
    send_all(fd, "G");
    return fd;
  };
  for (int i = 0; i < 6; ++i) a.push_back(open_from("127.0.0.2"));
  for (int fd : a) ASSERT_GE(fd, 0);
  // Over its quota of 4, client A loses its own two oldest connections.
  EXPECT_TRUE(closed_within(a[0], 2));
  EXPECT_TRUE(closed_within(a[1], 2));
  for (int i = 0; i < 4; ++i) b.push_back(open_from("127.0.0.3"));
  for (int fd : b) ASSERT_GE(fd, 0);
  // The table is full (4 + 4). A third client still gets in: the oldest waiting connection of
  // all, A's third, makes room.
  const int c = open_from("127.0.0.4");
  ASSERT_GE(c, 0);
  EXPECT_TRUE(closed_within(a[2], 2));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(quiet(a[i])) << i;
  for (int fd : b) EXPECT_TRUE(quiet(fd));  // B flooded nobody and lost nothing
  EXPECT_EQ(server.connections_evicted(), 3u);

  // B, at its quota, opens a fifth: only B's own oldest goes, never A's or C's.
  const auto r = timed_get(server.port(), "/metrics", 1, "127.0.0.3");
  EXPECT_EQ(r.response.status, 200);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(closed_within(b[0], 2));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(quiet(a[i])) << i;
  EXPECT_TRUE(quiet(c));
  EXPECT_EQ(server.connections_evicted(), 4u);
  for (int fd : a) ::close(fd);
  for (int fd : b) ::close(fd);
  ::close(c);
}

TEST(http_server, limits_are_validated) {
  metrics_hub hub;
  auto bad = [&](auto change) {
    http_limits l;
    change(l);
    return [&hub, l] { http_server s(hub, "127.0.0.1", 0, l); };
  };
  EXPECT_THROW(bad([](http_limits& l) { l.idle_timeout_s = 0; })(), std::invalid_argument);
  EXPECT_THROW(bad([](http_limits& l) { l.timeout_s = -1; })(), std::invalid_argument);
  EXPECT_THROW(bad([](http_limits& l) { l.max_connections = 0; })(), std::invalid_argument);
  EXPECT_THROW(bad([](http_limits& l) { l.max_connections_per_client = 0; })(),
               std::invalid_argument);
}

}  // namespace
}  // namespace actrain::observe
