#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// What one request gets back; routing is a pure function so it is testable without sockets.
struct http_reply {
  unsigned status = 200;
  std::string content_type;
  std::string body;
};

/// Routes one request: GET /metrics (Prometheus text 0.0.4), GET /status (JSON), GET / (the
/// dashboard page); other paths 404; other methods 405. A query string is ignored.
http_reply route_request(const metrics_hub& hub, std::string_view method, std::string_view target);

/// "host:port" as given to `--http`; "port" alone means 127.0.0.1. IPv6 as "[::1]:port".
struct http_address {
  std::string host = "127.0.0.1";
  unsigned short port = 0;
};
/// Throws std::invalid_argument naming `--http` and what is wrong.
http_address parse_http_address(const std::string& text);

/// Limits that keep one bad client from hurting the job.
///
/// The connection table never locks a newcomer out. When a new connection would exceed
/// `max_connections_per_client` (connections from its remote address) or `max_connections`
/// (all connections), the server closes one open connection to make room, chosen in this order:
/// a connection already answered and lingering in its close; else the one that has waited
/// longest without a complete request (a fresh connection, a keep-alive connection between
/// requests, headers still arriving); else the one whose response has been pending longest (a
/// client that does not read). At the per-client limit the choice is among that address's
/// connections only, so one address can never push out another address's connections and can
/// never hold more than `max_connections_per_client` of the table. Clients behind one address
/// (a proxy, NAT, or every client on 127.0.0.1) share that address's quota: a new connection
/// is always taken, and it survives until that many newer connections from its address have
/// arrived without it sending its request; a client that sends its request as it connects is
/// answered before any later connection is looked at, so a scraper is served even while
/// another client on its address floods.
struct http_limits {
  std::size_t header_bytes = 64 * 1024;  ///< request line + headers
  std::size_t body_bytes = 64 * 1024;
  /// Deadline for a complete request line and headers, counted from the accept or from the end
  /// of the previous response on a keep-alive connection; a connection that sends nothing, or
  /// trickles its headers, is closed when it passes. A deadline, not an idle gap: bytes that do
  /// arrive do not extend it.
  double idle_timeout_s = 2;
  double timeout_s = 5;                         ///< reading the body; writing the response
  std::size_t max_connections = 128;            ///< open connections, all clients together
  std::size_t max_connections_per_client = 64;  ///< open connections from one remote address
};

/// One request's bytes parsed under `limits` as a connection parses them (Beast's parser) and
/// answered as the server answers: the reply, or nullopt where the server would close the
/// connection without one (an incomplete request). Pure: for tests and the fuzz target.
std::optional<http_reply> answer_raw_request(const metrics_hub& hub, std::string_view raw,
                                             const http_limits& limits = {});

/// A small HTTP/1.1 server (Boost.Beast) serving a metrics_hub on its own thread.
/// All network work runs on one io_context thread with asynchronous operations, so a slow or
/// malicious client never blocks another; a read, parse or write error closes that connection
/// only, and a flood of connections makes room as `http_limits` describes instead of locking
/// newcomers out. On Linux the listener defers the accept (TCP_DEFER_ACCEPT) until a
/// connection's first bytes arrive, or about 1 s without any; a connection that never sends
/// therefore meets the idle deadline about 1 s late. The hub must outlive the server.
class http_server {
 public:
  /// Throws std::invalid_argument naming the limit when a timeout is not positive or a
  /// connection limit is 0.
  http_server(metrics_hub& hub, std::string host = "127.0.0.1", unsigned short port = 0,
              http_limits limits = {});
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds and listens (synchronously, so port() is valid on return), then starts the thread.
  /// Throws std::runtime_error naming host:port when it cannot bind. Call at most once.
  void start();
  /// The bound port (the one the OS chose when constructed with port 0); 0 before start().
  unsigned short port() const { return bound_port_; }
  const std::string& host() const { return host_; }
  /// Closes the listener and every connection and joins the thread. Idempotent.
  void stop();
  /// Connections accepted so far (for tests and diagnostics).
  std::size_t connections_accepted() const { return accepted_.load(); }
  /// Open connections closed to make room for a new one (for tests and diagnostics).
  std::size_t connections_evicted() const { return evicted_.load(); }

  struct impl;  // Asio state; public name so the .cpp's session type can reach it

 private:
  metrics_hub& hub_;
  std::string host_;
  unsigned short requested_port_;
  http_limits limits_;
  unsigned short bound_port_ = 0;
  std::atomic<std::size_t> accepted_{0};
  std::atomic<std::size_t> evicted_{0};
  std::unique_ptr<impl> impl_;
  std::thread thread_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace actrain::observe
