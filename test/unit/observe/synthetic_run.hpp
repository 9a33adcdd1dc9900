#pragma once
// Test helpers: a deterministic synthetic run (what a coordinator would feed the hub) and a
// tiny blocking HTTP client over raw POSIX sockets with timeouts, so a misbehaving server makes
// a test fail instead of hang.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>

#include <actrain/run_state.hpp>

namespace actrain::observe::testing {

/// A two-class report with a class that has no rows (its AP undefined) and an AUC.
inline class_report two_class_report() {
  class_report c;
  c.precision = {0.5, 0.75};
  c.recall = {1.0, 0.25};
  c.average_precision = {0.9, NAN};
  c.support = {3, 0};
  c.macro_precision = 0.625;
  c.macro_recall = 0.625;
  c.macro_average_precision = 0.9;
  c.auc = 0.8;
  return c;
}

/// Curve point i of a synthetic run: loss decays, accuracy rises, throughput is steady.
inline curve_point synthetic_point(int i) {
  curve_point p;
  p.seconds = 0.5 * i;
  p.samples = 640LL * i;
  p.train_loss = 2.3 * std::exp(-0.05 * i) + 0.3;
  p.test_loss = i % 4 == 0 ? 2.3 * std::exp(-0.05 * i) + 0.35 : NAN;  // evaluated every 4th
  p.test_accuracy = i % 4 == 0 ? 0.85 - 0.75 * std::exp(-0.08 * i) : NAN;
  p.samples_per_s = 1180 + 100 * (1 - std::exp(-0.1 * i)) + 15 * std::sin(0.3 * i);
  return p;
}

/// A run with three workers (one stopped, so there is a stall line), two shards, two nodes,
/// a staleness histogram {0:10, 1:5, 3:2, 200:1} and `points` curve points.
inline run_snapshot synthetic_snapshot(int points = 20) {
  run_snapshot s;
  s.job = "fmnist-mlp";
  s.mode = "sync";
  s.epoch = 1;
  s.epochs = 5;
  s.step = 250;
  s.samples = 16000;
  s.samples_per_epoch = 12000;
  s.elapsed_s = 12.5;
  s.eta_s = 40;
  s.samples_per_s = 1280;
  s.train_loss = 0.61;
  s.test_loss = 0.66;
  s.test_accuracy = 0.78;
  s.workers = {{"worker-0", "local", 90, 5760, 460.5, 0.95, 0.6, 1, "computing", 0.1},
               {"worker-1", "local", 88, 5632, 450, 0.4, 0.62, 0, "waiting for shard-1", 0.2},
               {"worker-2", "node \"b\"", 72, 4608, 0, 0, 0.7, 2, "stopped", 2.4}};
  s.shards = {{"shard-0", "local", 120, 250, 260, 1, 2, 3, 4},
              {"shard-1", "local", 119, 249, 258, 0, 0, 1, 0}};
  s.nodes = {{"local", 1000, 2000}, {"node \"b\"", 30, 40}};
  s.staleness_histogram = {{0, 10}, {1, 5}, {3, 2}, {200, 1}};
  s.dropped_late = 4;
  s.stalls = {"sync step 12 on shard-0 waits 2.3 s for worker-2"};
  for (int i = 0; i < points; ++i) s.curve.push_back(synthetic_point(i));
  return s;
}

/// Connects to 127.0.0.1:port with send/receive timeouts; -1 on failure.
inline int connect_local(unsigned short port, double timeout_s = 5) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<long>(timeout_s);
  tv.tv_usec = static_cast<long>((timeout_s - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends all of `data` (errors ignored: the server may close early on garbage).
inline void send_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

/// Reads until EOF, error or timeout.
inline std::string read_all(int fd) {
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

/// Sends `raw` on a fresh connection, half-closes, and returns everything the server sent.
inline std::string raw_exchange(unsigned short port, const std::string& raw, double timeout_s = 5) {
  const int fd = connect_local(port, timeout_s);
  if (fd < 0) return "";
  send_all(fd, raw);
  ::shutdown(fd, SHUT_WR);
  std::string out = read_all(fd);
  ::close(fd);
  return out;
}

/// A parsed response (enough for tests: status, one header lookup, body).
struct response {
  int status = 0;
  std::string head;
  std::string body;
  std::string header(const std::string& name) const {
    // Case-insensitive search for "\r\nName: value\r\n".
    std::string lower_head = head, key = "\r\n" + name + ":";
    for (auto& c : lower_head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto at = lower_head.find(key);
    if (at == std::string::npos) return "";
    auto start = at + key.size();
    while (start < head.size() && head[start] == ' ') ++start;
    return head.substr(start, head.find("\r\n", start) - start);
  }
};

inline response parse_response(const std::string& raw) {
  response r;
  const auto end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + 9);
  r.head = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  return r;
}

inline response http_get(unsigned short port, const std::string& target,
                         const std::string& method = "GET") {
  return parse_response(raw_exchange(port, method + " " + target +
                                               " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                               "Connection: close\r\n\r\n"));
}

}  // namespace actrain::observe::testing
