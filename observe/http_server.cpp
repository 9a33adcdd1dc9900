#include "observe/http_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "observe/dashboard.hpp"
#include "observe/prometheus.hpp"
#include "observe/status_json.hpp"

namespace actrain::observe {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// ---------------------------------------------------------------------------------------------
// Routing (pure)

http_reply route_request(const metrics_hub& hub, std::string_view method, std::string_view target) {
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const bool known =
      path == "/" || path == "/index.html" || path == "/metrics" || path == "/status";
  if (!known) return {404, "text/plain; charset=utf-8", "not found\n"};
  if (method != "GET") return {405, "text/plain; charset=utf-8", "method not allowed\n"};
  if (path == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8", prometheus_text(hub.snapshot())};
  if (path == "/status")
    return {
        200, "application/json",
        status_json(hub.snapshot()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
            "\n"};
  return {200, "text/html; charset=utf-8", dashboard_html()};
}

http_address parse_http_address(const std::string& text) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("--http '" + text + "': " + why);
  };
  http_address a;
  std::string port_text = text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos) fail("missing ']' after IPv6 host");
    a.host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') fail("expected ':port' after ']'");
    port_text = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    a.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (a.host.empty()) fail("empty host");
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos)
    fail("port must be a number 0..65535");
  const unsigned long p = std::stoul(port_text);
  if (p > 65535) fail("port must be a number 0..65535");
  a.port = static_cast<unsigned short>(p);
  return a;
}

// ---------------------------------------------------------------------------------------------
// Asio state. Member order matters: the io_context is destroyed after the acceptor and before
// the counters and the session table that the sessions it owns still touch in their destructors.

namespace {

using request_parser = http::request_parser<http::string_body>;

/// What a connection answers once its parser stopped with `ec`: a 4xx for a malformed or
/// oversized request (the connection then closes), the routed reply for a complete one, nothing
/// for a transport error (reset, timeout, a client gone mid-message: the connection just closes).
std::optional<http_reply> reply_for(const metrics_hub& hub, beast::error_code ec,
                                    request_parser& parser) {
  if (ec) {
    if (&ec.category() != &http::make_error_code(http::error::bad_target).category() ||
        ec == http::error::partial_message || ec == http::error::end_of_stream ||
        ec == http::error::need_more)
      return std::nullopt;
    unsigned status = 400;
    if (ec == http::error::body_limit) status = 413;
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) status = 431;
    return http_reply{status, "text/plain; charset=utf-8", "bad request: " + ec.message() + "\n"};
  }
  const auto& req = parser.get();
  const auto m = req.method_string();
  const auto t = req.target();
  try {
    return route_request(hub, std::string_view(m.data(), m.size()),
                         std::string_view(t.data(), t.size()));
  } catch (const std::exception& e) {
    return http_reply{500, "text/plain; charset=utf-8",
                      std::string("internal error: ") + e.what() + "\n"};
  }
}

}  // namespace

std::optional<http_reply> answer_raw_request(const metrics_hub& hub, std::string_view raw,
                                             const http_limits& limits) {
  request_parser parser;
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
  parser.body_limit(limits.body_bytes);
  parser.eager(true);
  beast::error_code ec;
  std::size_t used = 0;
  while (!parser.is_done() && used < raw.size()) {
    auto n = parser.put(boost::asio::buffer(raw.data() + used, raw.size() - used), ec);
    if (ec) break;
    used += n;
    if (n == 0) break;
  }
  if (!ec && !parser.is_done()) ec = http::error::partial_message;
  return reply_for(hub, ec, parser);
}

namespace {
class session;
}  // namespace

struct http_server::impl {
  impl(metrics_hub& h, http_limits l, std::atomic<std::size_t>& a, std::atomic<std::size_t>& e)
      : hub(h), limits(l), accepted(a), evicted(e) {}
  metrics_hub& hub;
  http_limits limits;
  std::atomic<std::size_t>& accepted;
  std::atomic<std::size_t>& evicted;
  // Every live session, registered by its constructor and removed by its destructor; touched
  // only on the io thread. A plain vector: it never holds more than max_connections open
  // sessions (plus the few closed ones whose handlers have not run yet), and a scan is cheap.
  std::vector<session*> sessions;
  std::uint64_t ticks = 0;  // orders the sessions' phase changes, oldest first
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer backoff{ioc};

  void accept();
  /// Closes one open session if a new connection from `peer` would break a connection limit.
  void make_room(const asio::ip::address& peer);
};

namespace {

std::chrono::steady_clock::duration to_duration(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

/// Where a connection is, in the order in which sessions are closed to make room.
enum class phase : std::uint8_t {
  lingering,   // answered and half-closed; draining what the client still sends
  waiting,     // no complete request yet: fresh, between keep-alive requests, or mid-request
  responding,  // a response is being written
  closed,      // closed to make room; its handlers have yet to run
};

/// One client connection: read a request, answer, repeat while keep-alive; any error ends it.
class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket socket, asio::ip::address peer, http_server::impl& srv)
      : srv_(srv),
        peer_(std::move(peer)),
        stream_(std::move(socket)),
        buffer_(srv.limits.header_bytes + srv.limits.body_bytes) {
    srv_.sessions.push_back(this);
  }
  ~session() {
    auto& v = srv_.sessions;
    const auto at = std::find(v.begin(), v.end(), this);
    if (at != v.end()) {
      *at = v.back();
      v.pop_back();
    }
  }

  const asio::ip::address& peer() const { return peer_; }
  bool is_open() const { return phase_ != phase::closed; }
  /// True when this session is to be closed before `other` to make room.
  bool evicts_before(const session& other) const {
    if (phase_ != other.phase_) return phase_ < other.phase_;
    return since_ < other.since_;
  }
  /// Closes the socket now; the pending handlers see operation_aborted and release the session.
  void evict() {
    phase_ = phase::closed;
    stream_.close();
  }

  void read() {
    enter(phase::waiting);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.limits.header_bytes));
    parser_->body_limit(srv_.limits.body_bytes);
    stream_.expires_after(to_duration(srv_.limits.idle_timeout_s));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

 private:
  void enter(phase p) {
    phase_ = p;
    since_ = ++srv_.ticks;
  }

  void on_header(beast::error_code ec) {
    if (!is_open()) return;
    if (ec || parser_->is_done()) return on_read(ec);
    // The headers beat the idle deadline; the body gets the ordinary per-operation timeout.
    stream_.expires_after(to_duration(srv_.limits.timeout_s));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code e, std::size_t) { self->on_read(e); });
  }

  void on_read(beast::error_code ec) {
    if (!is_open()) return;
    if (ec == http::error::end_of_stream) return close();
    auto reply = reply_for(srv_.hub, ec, *parser_);
    if (!reply) return;
    respond(std::move(*reply), !ec && parser_->get().keep_alive());
  }

  void respond(http_reply reply, bool keep_alive) {
    enter(phase::responding);
    res_ = {};
    res_.version(11);
    res_.result(reply.status);
    res_.set(http::field::server, "actrain");
    res_.set(http::field::content_type, reply.content_type);
    res_.set(http::field::cache_control, "no-store");
    if (reply.status == 405) res_.set(http::field::allow, "GET");
    res_.keep_alive(keep_alive);
    res_.body() = std::move(reply.body);
    res_.prepare_payload();
    stream_.expires_after(to_duration(srv_.limits.timeout_s));
    http::async_write(stream_, res_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        if (ec || !self->is_open()) return;
                        if (keep_alive) return self->read();
                        self->close();
                      });
  }

  /// Lingering close: half-close, then read and discard what the client still sends (bounded
  /// in bytes and time) until it closes too. Closing a socket with unread input makes the kernel
  /// send RST, which can destroy our response before the client has read it.
  void close() {
    enter(phase::lingering);
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(to_duration(std::min(srv_.limits.timeout_s, 2.0)));
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->drained_ += n;
                              if (!ec && self->is_open() && self->drained_ < max_drain)
                                self->drain();
                            });
  }

  static constexpr std::size_t max_drain = 1 << 20;
  std::array<char, 4096> scratch_;
  std::size_t drained_ = 0;

  http_server::impl& srv_;
  asio::ip::address peer_;
  phase phase_ = phase::waiting;
  std::uint64_t since_ = 0;  // srv_.ticks when phase_ was entered
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
};

}  // namespace

void http_server::impl::make_room(const asio::ip::address& peer) {
  std::size_t open = 0, from_peer = 0;
  session* first_any = nullptr;
  session* first_from_peer = nullptr;
  for (session* s : sessions) {
    if (!s->is_open()) continue;
    ++open;
    if (!first_any || s->evicts_before(*first_any)) first_any = s;
    if (s->peer() != peer) continue;
    ++from_peer;
    if (!first_from_peer || s->evicts_before(*first_from_peer)) first_from_peer = s;
  }
  // Each accept makes room for itself, so the counts never pass the limits and one eviction is
  // enough. The per-client limit picks among that client's own connections.
  session* victim = from_peer >= limits.max_connections_per_client ? first_from_peer
                    : open >= limits.max_connections               ? first_any
                                                                   : nullptr;
  if (!victim) return;
  evicted.fetch_add(1);  // before the close, so a client that sees the close sees the count
  victim->evict();
}

void http_server::impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // E.g. out of file descriptors: back off briefly instead of spinning on the error.
      backoff.expires_after(std::chrono::milliseconds(50));
      backoff.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    accepted.fetch_add(1);
    beast::error_code gone;
    const auto peer = socket.remote_endpoint(gone);
    if (!gone) {  // else the client reset the connection before we got to it: drop the socket
      make_room(peer.address());
      std::make_shared<session>(std::move(socket), peer.address(), *this)->read();
    }
    accept();
  });
}

// ---------------------------------------------------------------------------------------------

http_server::http_server(metrics_hub& hub, std::string host, unsigned short port,
                         http_limits limits)
    : hub_(hub), host_(std::move(host)), requested_port_(port), limits_(limits) {
  auto positive = [](double s) { return std::isfinite(s) && s > 0; };
  if (!positive(limits_.idle_timeout_s))
    throw std::invalid_argument("http_limits: idle_timeout_s must be positive");
  if (!positive(limits_.timeout_s))
    throw std::invalid_argument("http_limits: timeout_s must be positive");
  if (limits_.max_connections == 0)
    throw std::invalid_argument("http_limits: max_connections must be at least 1");
  if (limits_.max_connections_per_client == 0)
    throw std::invalid_argument("http_limits: max_connections_per_client must be at least 1");
}

http_server::~http_server() {
  stop();
}

void http_server::start() {
  if (started_) throw std::logic_error("http_server::start: already started");
  started_ = true;
  impl_ = std::make_unique<impl>(hub_, limits_, accepted_, evicted_);
  const std::string where = host_ + ":" + std::to_string(requested_port_);
  try {
    tcp::resolver resolver(impl_->ioc);
    auto results = resolver.resolve(host_, std::to_string(requested_port_),
                                    tcp::resolver::numeric_service | tcp::resolver::passive);
    if (results.empty()) throw std::runtime_error("no address");
    const tcp::endpoint ep = results.begin()->endpoint();
    auto& a = impl_->acceptor;
    a.open(ep.protocol());
    a.set_option(asio::socket_base::reuse_address(true));
    a.bind(ep);
    a.listen(asio::socket_base::max_listen_connections);
#ifdef TCP_DEFER_ACCEPT
    // The kernel hands a connection over once its first bytes have arrived (or after about 1 s
    // without any): every real HTTP client speaks first, so its request is already readable
    // when it takes a slot and is answered before later connections can push it out, and a
    // silent connection holds no slot for that second. Best effort: without it, the same rules
    // apply from the moment of the handshake.
    const int defer_s = 1;
    ::setsockopt(a.native_handle(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
#endif
    bound_port_ = a.local_endpoint().port();
  } catch (const std::exception& e) {
    impl_.reset();
    stopped_ = true;
    throw std::runtime_error("http endpoint " + where + ": cannot listen: " + e.what());
  }
  impl_->accept();
  thread_ = std::thread([this] {
    // A handler that throws must not take the endpoint (or the job) down: log-free restart.
    for (;;) {
      try {
        impl_->ioc.run();
        return;
      } catch (...) {
      }
    }
  });
}

void http_server::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!impl_) return;
  impl_->ioc.stop();
  if (thread_.joinable()) thread_.join();
  // Destroying the io_context destroys the pending handlers, hence every session and socket.
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_.reset();
}

}  // namespace actrain::observe
