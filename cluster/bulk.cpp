// The bulk channel (cluster/bulk.hpp): frames, the ps node's server and the worker node's proxy.
// Sockets are Boost.Asio's (accept, connect); reads and writes go through the socket's descriptor
// (recv, sendmsg with an iovec, poll for deadlines) because a proxy writes a frame without
// blocking straight from its actor when the socket takes it, and Asio's synchronous operations
// have no deadline.
#include "cluster/bulk.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <list>
#include <unordered_map>

#include <openssl/crypto.h>
#include <boost/asio.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <actrain/errors.hpp>

namespace actrain::bulk {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clk = std::chrono::steady_clock;

using bulk_weights_atom = caf::atom_constant<caf::atom("bkweights")>;
using bulk_ack_atom = caf::atom_constant<caf::atom("bkack")>;
using bulk_error_atom = caf::atom_constant<caf::atom("bkerror")>;
using bulk_closed_atom = caf::atom_constant<caf::atom("bkclosed")>;
using bulk_grace_atom = caf::atom_constant<caf::atom("bkgrace")>;

std::string check_header(const header& h, std::uint64_t max_floats) {
  if (h.magic != frame_magic) return "not a bulk-channel frame (wrong magic)";
  if (h.kind < static_cast<std::uint8_t>(kind::hello) ||
      h.kind > static_cast<std::uint8_t>(kind::error))
    return "unknown frame kind " + std::to_string(h.kind);
  if (h.meta_bytes > max_meta_bytes)
    return "frame metadata of " + std::to_string(h.meta_bytes) + " bytes (at most " +
           std::to_string(max_meta_bytes) + ")";
  if (h.floats > max_floats)
    return "frame of " + std::to_string(h.floats) + " values where at most " +
           std::to_string(max_floats) + " fit";
  return {};
}

namespace {

// -- descriptor I/O -------------------------------------------------------------------------------

/// Waits until `fd` is readable (or writable); false when `deadline` passed first. A deadline of
/// time_point::max() waits for ever (a shutdown of the socket ends the wait).
bool wait_for(int fd, short events, clk::time_point deadline) {
  for (;;) {
    int ms = -1;
    if (deadline != clk::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now());
      if (left.count() <= 0) return false;
      ms = static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30));
    }
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms);
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the read or write report the error
  }
}

/// Reads exactly n bytes; "" or why not ("closed", a timeout, errno's text).
std::string read_exact(int fd, void* out, std::size_t n,
                       clk::time_point deadline = clk::time_point::max()) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    if (deadline != clk::time_point::max() && !wait_for(fd, POLLIN, deadline))
      return "timed out waiting for the peer";
    auto r = ::recv(fd, p, n, 0);
    if (r == 0) return "connection closed by the peer";
    if (r < 0) {
      if (errno == EINTR) continue;
      return std::strerror(errno);
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return {};
}

/// One frame on its way out: header and metadata in one buffer, values in their tensor.
struct out_frame {
  std::vector<char> head;  ///< header + metadata
  tensor values;
  std::size_t sent = 0;  ///< bytes of head + values already written
  std::size_t size() const { return head.size() + values.size() * sizeof(float); }
};

/// Writes what is left of `f` with one sendmsg; returns bytes written, 0 when the socket takes
/// nothing now (dontwait), or -1 with errno set.
ssize_t send_some(int fd, out_frame& f, bool dontwait) {
  iovec iov[2];
  int n = 0;
  auto values_bytes = f.values.size() * sizeof(float);
  if (f.sent < f.head.size()) {
    iov[n++] = {f.head.data() + f.sent, f.head.size() - f.sent};
    if (values_bytes > 0) iov[n++] = {const_cast<float*>(f.values.data()), values_bytes};
  } else {
    auto off = f.sent - f.head.size();
    iov[n++] = {reinterpret_cast<char*>(const_cast<float*>(f.values.data())) + off,
                values_bytes - off};
  }
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<std::size_t>(n);
  for (;;) {
    auto r = ::sendmsg(fd, &m, MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0));
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (dontwait && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1;
  }
}

/// Writes all of `f`, blocking; "" or why not.
std::string write_all(int fd, out_frame& f) {
  while (f.sent < f.size()) {
    auto r = send_some(fd, f, false);
    if (r < 0) return std::strerror(errno);
    f.sent += static_cast<std::size_t>(r);
  }
  return {};
}

template <class... Ts>
std::vector<char> serialize_meta(caf::actor_system& sys, Ts&... xs) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(xs...))
    throw std::runtime_error("bulk channel: cannot serialize a frame's metadata: " +
                             sys.render(err));
  return buf;
}

template <class... Ts>
out_frame make_frame(caf::actor_system& sys, kind k, std::uint32_t target, std::uint64_t id,
                     tensor values, Ts&... meta) {
  auto m = serialize_meta(sys, meta...);
  if (m.size() > max_meta_bytes)
    throw std::runtime_error("bulk channel: a frame's metadata exceeds " +
                             std::to_string(max_meta_bytes) + " bytes");
  header h;
  h.kind = static_cast<std::uint8_t>(k);
  h.target = target;
  h.meta_bytes = static_cast<std::uint32_t>(m.size());
  h.id = id;
  h.floats = values.size();
  out_frame f;
  f.head.resize(sizeof h + m.size());
  std::memcpy(f.head.data(), &h, sizeof h);
  std::copy(m.begin(), m.end(), f.head.begin() + sizeof h);
  f.values = std::move(values);
  return f;
}

template <class... Ts>
caf::error parse_meta(caf::actor_system& sys, const std::vector<char>& buf, Ts&... xs) {
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(xs...)) return err;
  if (source.remaining() != 0)
    return make_error(errc::bad_message, "bulk channel: " + std::to_string(source.remaining()) +
                                             " bytes left over after a frame's metadata");
  return caf::none;
}

/// Reads a frame's metadata and values (its header read and checked); values land in a buffer
/// from `pool` (recycled, not zero-filled, when one is free).
std::string read_body(int fd, const header& h, std::vector<char>& meta, tensor& values,
                      tensor_pool& pool, clk::time_point deadline = clk::time_point::max()) {
  meta.resize(h.meta_bytes);
  if (auto e = read_exact(fd, meta.data(), meta.size(), deadline); !e.empty()) return e;
  values = tensor();
  if (h.floats == 0) return {};
  auto v = pool.take(static_cast<std::size_t>(h.floats));
  if (auto e = read_exact(fd, v.data(), v.size() * sizeof(float), deadline); !e.empty()) return e;
  values = tensor(std::move(v));
  return {};
}

/// After refusing a peer: no more writes, and what it still sends is read and dropped (for at
/// most a second and 64 MiB) before the socket closes, so the refusal reaches it ahead of the end
/// of the stream instead of being discarded by a reset.
void linger(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = clk::now() + std::chrono::seconds(1);
  std::vector<char> sink(1 << 16);
  for (std::size_t total = 0; total < (std::size_t{64} << 20);) {
    if (!wait_for(fd, POLLIN, deadline)) return;
    auto r = ::recv(fd, sink.data(), sink.size(), 0);
    if (r <= 0) return;
    total += static_cast<std::size_t>(r);
  }
}

std::pair<std::uint8_t, std::string> error_meta(const caf::error& err) {
  auto code =
      err.category() == errc_category() ? err.code() : static_cast<std::uint8_t>(errc::node_down);
  return {code, describe_error(err)};
}

std::mutex retired_mtx;
std::deque<int> retired;

}  // namespace

void retire(int fd) {
  if (fd < 0) return;
  std::lock_guard<std::mutex> lk(retired_mtx);
  retired.push_back(fd);
  while (retired.size() > 4096) {
    ::close(retired.front());
    retired.pop_front();
  }
}

void close_retired() {
  std::lock_guard<std::mutex> lk(retired_mtx);
  for (int fd : retired) ::close(fd);
  retired.clear();
}

// -- server ---------------------------------------------------------------------------------------

struct server::impl {
  caf::actor_system& sys;
  std::string token;
  std::chrono::milliseconds timeout;
  std::chrono::milliseconds hello_timeout{10000};
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accepting;
  std::mutex mtx;
  struct target {
    shard_actor shard;
    std::int64_t floats = 0;
  };
  std::map<std::int32_t, target> targets;
  struct connection {
    int fd = -1;
    std::thread thread;
    bool done = false;
  };
  std::list<connection> connections;
  bool stopping = false;

  impl(caf::actor_system& s, std::string t, std::chrono::milliseconds to)
      : sys(s), token(std::move(t)), timeout(to) {}

  bool find(std::uint32_t index, target& out) {
    std::lock_guard<std::mutex> lk(mtx);
    auto it = targets.find(static_cast<std::int32_t>(index));
    if (it == targets.end()) return false;
    out = it->second;
    return true;
  }

  void accept_loop() {
    for (;;) {
      tcp::socket sock(io);
      boost::system::error_code ec;
      acceptor.accept(sock, ec);
      std::lock_guard<std::mutex> lk(mtx);
      if (stopping) return;
      if (ec) {
        if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) return;
        continue;  // a connection that failed before it was accepted
      }
      connections.remove_if([](connection& c) {
        if (!c.done) return false;
        c.thread.join();
        return true;
      });
      if (connections.size() >= max_connections) continue;  // closed as `sock` goes
      sock.set_option(tcp::no_delay(true), ec);
      connections.emplace_back();
      auto& c = connections.back();
      c.fd = sock.release();
      c.thread = std::thread([this, &c] {
        bool ended_by_peer = serve_connection(c.fd);
        std::lock_guard<std::mutex> g(mtx);
        if (!ended_by_peer) ::shutdown(c.fd, SHUT_RDWR);  // the refused peer sees the end
        retire(c.fd);
        c.fd = -1;
        c.done = true;
      });
    }
  }

  bool reply(int fd, out_frame f) { return write_all(fd, f).empty(); }

  /// Refuses a misbehaving peer: says why, then lingers (the caller closes the connection).
  void reply_error(int fd, std::uint64_t id, std::uint32_t target, errc code, std::string text) {
    auto c = static_cast<std::uint8_t>(code);
    if (reply(fd, make_frame(sys, kind::error, target, id, tensor(), c, text))) linger(fd);
  }

  /// The hello: the token and protocol version, within hello_timeout.
  bool greet(int fd) {
    auto deadline = clk::now() + hello_timeout;
    header h;
    if (!read_exact(fd, &h, sizeof h, deadline).empty()) return false;
    if (auto why = check_header(h, 0);
        !why.empty() || h.kind != static_cast<std::uint8_t>(kind::hello)) {
      reply_error(fd, h.id, 0, errc::bad_message,
                  "the bulk channel expects a hello first" + (why.empty() ? "" : ": " + why));
      return false;
    }
    std::vector<char> meta;
    tensor none;
    tensor_pool pool(1);
    if (!read_body(fd, h, meta, none, pool, deadline).empty()) return false;
    std::string their_token, name;
    std::uint32_t version = 0;
    if (auto err = parse_meta(sys, meta, their_token, version, name)) {
      reply_error(fd, h.id, 0, errc::bad_message, "a malformed hello: " + describe_error(err));
      return false;
    }
    bool same = their_token.size() == token.size() &&
                CRYPTO_memcmp(their_token.data(), token.data(), token.size()) == 0;
    if (!same) {
      reply_error(fd, h.id, 0, errc::bad_token,
                  "node '" + name + "' presented the wrong cluster token on the bulk channel");
      return false;
    }
    if (version != protocol_version) {
      reply_error(fd, h.id, 0, errc::version_mismatch,
                  "node '" + name + "' speaks protocol version " + std::to_string(version) +
                      ", this node " + std::to_string(protocol_version));
      return false;
    }
    return reply(fd, make_frame(sys, kind::welcome, 0, h.id, tensor()));
  }

  /// Serves one connection; true when the peer ended it (its socket is left as it is, so its
  /// counts stay readable), false when this side dropped it.
  bool serve_connection(int fd) {
    if (!greet(fd)) return false;
    caf::scoped_actor self{sys};
    tensor_pool pool(4);
    std::vector<char> meta;
    for (;;) {
      header h;
      if (!read_exact(fd, &h, sizeof h).empty()) return true;
      target t;
      bool known = find(h.target, t);
      auto max = known && (h.kind == static_cast<std::uint8_t>(kind::push) ||
                           h.kind == static_cast<std::uint8_t>(kind::push_pull))
                     ? static_cast<std::uint64_t>(t.floats)
                     : 0;
      auto why = check_header(h, max);
      if (why.empty() && !known) why = "no shard " + std::to_string(h.target) + " on this ps node";
      if (why.empty() && h.kind != static_cast<std::uint8_t>(kind::pull) &&
          h.kind != static_cast<std::uint8_t>(kind::push) &&
          h.kind != static_cast<std::uint8_t>(kind::push_pull))
        why = "a frame of kind " + std::to_string(h.kind) + " is no request";
      if (why.empty() && h.kind != static_cast<std::uint8_t>(kind::pull) &&
          h.floats != static_cast<std::uint64_t>(t.floats))
        why = "shard " + std::to_string(h.target) + " expects " + std::to_string(t.floats) +
              " gradient values, the frame holds " + std::to_string(h.floats);
      if (!why.empty()) {
        // A misbehaving peer: say why, then drop the connection (its stream cannot be trusted).
        reply_error(fd, h.id, h.target, errc::bad_message, "bulk channel: " + why);
        return false;
      }
      tensor values;
      if (!read_body(fd, h, meta, values, pool).empty()) return true;
      out_frame answer;
      bool sound = answer_request(self, t, h, meta, std::move(values), pool, answer);
      if (!reply(fd, std::move(answer))) return true;
      if (!sound) {
        linger(fd);
        return false;
      }
    }
  }

  /// Asks the shard and makes the reply; false when the frame's metadata is malformed (the
  /// reply says so, and the connection is dropped after it).
  bool answer_request(caf::scoped_actor& self, const target& t, const header& h,
                      const std::vector<char>& meta, tensor values, tensor_pool& pool,
                      out_frame& out) {
    auto fail = [&](const caf::error& err) {
      auto [code, text] = error_meta(err);
      out = make_frame(sys, kind::error, h.target, h.id, tensor(), code, text);
    };
    auto give_weights = [&](weights& w) {
      auto vals = std::move(w.values);
      w.values = tensor();
      auto shape = vals.shape();
      // Not kept in `pool`: the shard recycles its own snapshots once every reader let go.
      out = make_frame(sys, kind::weights, h.target, h.id, std::move(vals), w, shape);
    };
    if (h.kind == static_cast<std::uint8_t>(kind::pull)) {
      pull_request r;
      if (auto err = parse_meta(sys, meta, r)) {
        fail(make_error(errc::bad_message,
                        "bulk channel: a malformed pull: " + describe_error(err)));
        return false;
      }
      self->request(t.shard, timeout, pull_atom::value, r).receive(give_weights, fail);
      return true;
    }
    gradient g;
    auto err = parse_meta(sys, meta, g);
    if (err || !g.values.empty() || g.transfer != 0) {
      fail(make_error(errc::bad_message, "bulk channel: a malformed gradient" +
                                             (err ? ": " + describe_error(err) : "")));
      return false;
    }
    g.values = values;
    pool.keep(std::move(values));  // its buffer comes back once the shard let go of it
    if (h.kind == static_cast<std::uint8_t>(kind::push)) {
      self->request(t.shard, timeout, push_atom::value, std::move(g))
          .receive(
              [&](push_ack& a) { out = make_frame(sys, kind::ack, h.target, h.id, tensor(), a); },
              fail);
    } else {
      self->request(t.shard, timeout, push_pull_atom::value, std::move(g))
          .receive(give_weights, fail);
    }
    return true;
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mtx);
      if (stopping) return;
      stopping = true;
      if (acceptor.is_open()) ::shutdown(acceptor.native_handle(), SHUT_RDWR);
      for (auto& c : connections)
        if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
    }
    if (accepting.joinable()) accepting.join();  // no connection is added after this
    std::list<connection> mine;
    {
      std::lock_guard<std::mutex> lk(mtx);
      mine.splice(mine.end(), connections);  // elements stay where their threads see them
    }
    for (auto& c : mine)
      if (c.thread.joinable()) c.thread.join();  // each takes the lock as it ends
    std::lock_guard<std::mutex> lk(mtx);
    targets.clear();
    boost::system::error_code ec;
    acceptor.close(ec);
  }
};

server::server(caf::actor_system& sys, std::string token, std::chrono::milliseconds timeout)
    : impl_(std::make_shared<impl>(sys, std::move(token), timeout)) {}

server::~server() {
  stop();
}

caf::expected<std::uint16_t> server::listen(const std::string& bind, std::uint16_t port) {
  auto& d = *impl_;
  d.hello_timeout = hello_timeout;
  boost::system::error_code ec;
  auto addr = bind.empty() ? asio::ip::address(asio::ip::address_v4::any())
                           : asio::ip::make_address(bind, ec);
  if (ec)
    return make_error(errc::bad_config,
                      "bulk channel: cannot parse the address '" + bind + "': " + ec.message());
  tcp::endpoint at(addr, port);
  d.acceptor.open(at.protocol(), ec);
  if (!ec) d.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) d.acceptor.bind(at, ec);
  if (!ec) d.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error(errc::bad_config, "bulk channel: cannot listen on " +
                                            (bind.empty() ? std::string("*") : bind) + ":" +
                                            std::to_string(port) + ": " + ec.message());
  auto bound = d.acceptor.local_endpoint().port();
  d.accepting = std::thread([p = impl_] { p->accept_loop(); });
  return bound;
}

void server::serve(std::int32_t index, shard_actor shard, std::int64_t floats) {
  std::lock_guard<std::mutex> lk(impl_->mtx);
  impl_->targets[index] = impl::target{std::move(shard), floats};
}

void server::stop() {
  impl_->stop();
}

// -- client ---------------------------------------------------------------------------------------

namespace {

/// A proxy's connection: the proxy writes frames without blocking when the socket takes them,
/// a writer thread finishes what it could not; a reader thread turns replies into messages to
/// the proxy.
class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(caf::actor_system& sys, int fd, std::int64_t max_floats)
      : sys_(sys), fd_(fd), max_floats_(max_floats) {}
  ~connection() { close(); }

  void start(caf::actor_addr proxy) {
    proxy_ = std::move(proxy);
    reader_ = std::thread([this] { read_loop(); });
    writer_ = std::thread([this] { write_loop(); });
  }

  /// Queues `f` (written at once when nothing waits before it and the socket takes it all).
  void send(out_frame f) {
    std::unique_lock<std::mutex> lk(mtx_);
    if (closed_) return;
    if (queue_.empty()) {
      auto r = send_some(fd_, f, true);
      if (r < 0) {
        lk.unlock();
        ::shutdown(fd_, SHUT_RDWR);  // the reader reports it
        return;
      }
      f.sent += static_cast<std::size_t>(r);
      if (f.sent == f.size()) return;
    }
    queue_.push_back(std::move(f));
    cv_.notify_one();
  }

  /// Ends both threads. Only reads are shut down (that wakes the reader) unless a write is
  /// stuck: the connection stays established, so its counts stay readable until retire()d
  /// sockets close (a shut-down socket soon has no peer address, and no counts, to read).
  void close() {
    bool writing = false;
    {
      std::lock_guard<std::mutex> lk(mtx_);
      if (closed_) return;
      closed_ = true;
      writing = !queue_.empty();
      cv_.notify_all();
    }
    ::shutdown(fd_, writing ? SHUT_RDWR : SHUT_RD);
    if (reader_.joinable() && reader_.get_id() != std::this_thread::get_id()) reader_.join();
    if (writer_.joinable()) writer_.join();
    retire(fd_);
  }

 private:
  template <class... Ts>
  void tell(Ts&&... xs) {
    if (auto p = caf::actor_cast<caf::actor>(proxy_)) caf::anon_send(p, std::forward<Ts>(xs)...);
  }

  void write_loop() {
    std::unique_lock<std::mutex> lk(mtx_);
    for (;;) {
      cv_.wait(lk, [this] { return closed_ || !queue_.empty(); });
      if (closed_) return;
      auto& f = queue_.front();
      lk.unlock();
      // Only this thread writes while the queue is not empty, so `f` stays put.
      auto err = write_all(fd_, f);
      lk.lock();
      queue_.pop_front();
      if (!err.empty()) {
        ::shutdown(fd_, SHUT_RDWR);
        return;
      }
    }
  }

  void read_loop() {
    tensor_pool pool(4);
    std::vector<char> meta;
    std::string why;
    for (;;) {
      header h;
      if (why = read_exact(fd_, &h, sizeof h); !why.empty()) break;
      if (why = check_header(h, static_cast<std::uint64_t>(max_floats_)); !why.empty()) break;
      tensor values;
      if (why = read_body(fd_, h, meta, values, pool); !why.empty()) break;
      auto k = static_cast<kind>(h.kind);
      if (k == kind::weights) {
        weights w;
        shape_t shape;
        if (auto err = parse_meta(sys_, meta, w, shape); err || !w.values.empty()) {
          why = "malformed weights from the ps node";
          break;
        }
        std::int64_t n = 0;
        if (!try_shape_numel(shape, n) || static_cast<std::uint64_t>(n) != h.floats) {
          why = "weights whose shape does not match their values";
          break;
        }
        w.values = values.reshape(shape);
        pool.keep(w.values);
        tell(bulk_weights_atom::value, h.id, std::move(w));
      } else if (k == kind::ack) {
        push_ack a;
        if (parse_meta(sys_, meta, a) || h.floats != 0) {
          why = "a malformed acknowledgement from the ps node";
          break;
        }
        tell(bulk_ack_atom::value, h.id, a);
      } else if (k == kind::error) {
        std::uint8_t code = 0;
        std::string text;
        if (parse_meta(sys_, meta, code, text)) {
          why = "a malformed error from the ps node";
          break;
        }
        tell(bulk_error_atom::value, h.id, code, std::move(text));
      } else {
        why = "a frame of kind " + std::to_string(h.kind) + " is no reply";
        break;
      }
    }
    {
      std::lock_guard<std::mutex> lk(mtx_);
      if (closed_) return;  // closed by the proxy itself: nobody to tell
    }
    tell(bulk_closed_atom::value, why);
  }

  caf::actor_system& sys_;
  int fd_;
  std::int64_t max_floats_;
  caf::actor_addr proxy_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<out_frame> queue_;
  bool closed_ = false;
  std::thread reader_;
  std::thread writer_;
};

/// Connects with a deadline and presents the token; the socket's descriptor, or why not.
caf::expected<int> dial(caf::actor_system& sys, const endpoint& at) {
  auto where = at.host + ":" + std::to_string(at.port);
  asio::io_context io;
  boost::system::error_code ec;
  tcp::resolver res(io);
  auto found = res.resolve(at.host, std::to_string(at.port), ec);
  if (ec || found.empty())
    return make_error(errc::node_down, "bulk channel: cannot resolve " + where + ": " +
                                           (ec ? ec.message() : "no address"));
  auto deadline = clk::now() + at.timeout;
  tcp::socket sock(io);
  auto ep = found.begin()->endpoint();
  sock.open(ep.protocol(), ec);
  if (!ec) sock.non_blocking(true, ec);
  if (!ec) {
    sock.connect(ep, ec);
    if (ec == asio::error::would_block || ec == asio::error::in_progress) {
      if (!wait_for(sock.native_handle(), POLLOUT, deadline))
        return make_error(errc::node_down, "bulk channel: connecting to " + where + " timed out");
      int so = 0;
      socklen_t len = sizeof so;
      ::getsockopt(sock.native_handle(), SOL_SOCKET, SO_ERROR, &so, &len);
      ec = boost::system::error_code(so, boost::system::system_category());
    }
  }
  if (!ec) sock.non_blocking(false, ec);
  if (!ec) sock.set_option(tcp::no_delay(true), ec);
  if (ec)
    return make_error(errc::node_down,
                      "bulk channel: cannot connect to " + where + ": " + ec.message());
  int fd = sock.release();
  std::string token = at.token, name = at.name;
  auto version = protocol_version;
  auto hello = make_frame(sys, kind::hello, 0, 0, tensor(), token, version, name);
  auto fail = [&](errc code, std::string why) -> caf::expected<int> {
    ::close(fd);
    return make_error(code, "bulk channel to " + where + ": " + why);
  };
  if (auto e = write_all(fd, hello); !e.empty()) return fail(errc::node_down, e);
  header h;
  if (auto e = read_exact(fd, &h, sizeof h, deadline); !e.empty()) return fail(errc::node_down, e);
  if (auto why = check_header(h, 0); !why.empty()) return fail(errc::bad_message, why);
  std::vector<char> meta;
  tensor none;
  tensor_pool pool(1);
  if (auto e = read_body(fd, h, meta, none, pool, deadline); !e.empty())
    return fail(errc::node_down, e);
  if (h.kind == static_cast<std::uint8_t>(kind::welcome)) return fd;
  std::uint8_t code = static_cast<std::uint8_t>(errc::bad_message);
  std::string text = "an unexpected answer to the hello";
  if (h.kind == static_cast<std::uint8_t>(kind::error)) parse_meta(sys, meta, code, text);
  return fail(static_cast<errc>(code), text);
}

struct proxy_state {
  static inline const char* name = "actrain.bulk_proxy";
  std::shared_ptr<connection> conn;
  shard_actor remote;
  std::uint32_t shard = 0;
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, caf::response_promise> pending;
  std::string where;
  std::string closed;  ///< why the connection closed ("" while it is open)
  bool shard_gone = false;
  bool node_gone = false;  ///< the shard went with its node: requests stay unanswered
};

using proxy_ptr = caf::stateful_actor<proxy_state>*;

template <class T>
void finish(proxy_ptr self, std::uint64_t id, T&& x) {
  auto it = self->state.pending.find(id);
  if (it == self->state.pending.end()) return;  // not ours, or failed already
  auto rp = std::move(it->second);
  self->state.pending.erase(it);
  rp.deliver(std::forward<T>(x));
}

void fail_all(proxy_ptr self, const caf::error& err) {
  auto pending = std::move(self->state.pending);
  self->state.pending.clear();
  for (auto& kv : pending) kv.second.deliver(err);
}

template <class... Ts>
caf::response_promise ask(proxy_ptr self, kind k, tensor values, Ts&... meta) {
  auto rp = self->make_response_promise();
  auto id = self->state.next_id++;
  if (self->state.shard_gone) {
    // As on the shard's BASP handle (see the down handler).
    if (!self->state.node_gone) rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    return rp;
  }
  self->state.pending.emplace(id, rp);
  if (!self->state.closed.empty()) return rp;  // failed with the rest (see bulk_closed_atom)
  self->state.conn->send(
      make_frame(self->system(), k, self->state.shard, id, std::move(values), meta...));
  return rp;
}

caf::response_promise ask_gradient(proxy_ptr self, kind k, gradient& g) {
  auto values = std::move(g.values);
  g.values = tensor();
  return ask(self, k, std::move(values), g);
}

/// How long a proxy whose channel closed waits for its shard's handle to go down (a dead ps
/// node's does within milliseconds) before it fails what is outstanding itself.
constexpr auto closed_grace = std::chrono::seconds(2);

caf::behavior bulk_proxy(proxy_ptr self, std::shared_ptr<connection> conn, std::uint32_t shard,
                         shard_actor remote, caf::actor owner, std::string where) {
  auto& st = self->state;
  st.conn = std::move(conn);
  st.remote = std::move(remote);
  st.shard = shard;
  st.where = std::move(where);
  if (st.remote) self->monitor(st.remote);
  if (owner) self->monitor(owner);
  st.conn->start(self->address());
  self->attach_functor([c = st.conn] { c->close(); });
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == caf::actor_cast<caf::actor_addr>(st.remote)) {
      // The proxy stands in for the shard's own handle and answers as it would: a request to a
      // shard whose node is gone is never answered (BASP drops it), one to a shard that ended on
      // a live node is bounced with caf.request_receiver_down. The coordinator, which monitors
      // the shard, decides what the job does (fail, fail over, or wait for the ps node and
      // reassign); the proxy stays until its owner goes, and the channel closes.
      st.shard_gone = true;
      st.node_gone = dm.reason == caf::exit_reason::remote_link_unreachable;
      auto pending = std::move(st.pending);
      st.pending.clear();
      if (!st.node_gone)
        for (auto& kv : pending)
          kv.second.deliver(caf::make_error(caf::sec::request_receiver_down));
      st.conn->close();
      return;
    }
    fail_all(self, make_error(errc::stopped, "the proxy's owner stopped"));
    self->quit(caf::exit_reason::normal);
  });
  return {
      [self](pull_atom, pull_request& r) { return ask(self, kind::pull, tensor(), r); },
      [self](push_atom, gradient& g) { return ask_gradient(self, kind::push, g); },
      [self](push_pull_atom, gradient& g) { return ask_gradient(self, kind::push_pull, g); },
      [self](bulk_weights_atom, std::uint64_t id, weights& w) {
        if (!w.values.all_finite()) {
          finish(self, id,
                 make_error(errc::non_finite, "weights of shard " + std::to_string(w.shard) +
                                                  " from another node hold NaN or infinity"));
          return;
        }
        finish(self, id, std::move(w));
      },
      [self](bulk_ack_atom, std::uint64_t id, push_ack a) { finish(self, id, a); },
      [self](bulk_error_atom, std::uint64_t id, std::uint8_t code, std::string& text) {
        finish(self, id, make_error(static_cast<errc>(code), text));
      },
      // A ps node that dies resets the channel a moment before its shard's handle goes down
      // over BASP: the proxy waits for that (and then goes down with the shard's reason, so the
      // job treats it as the lost shard it is) for up to `closed_grace`; a channel that closed
      // while the shard lives fails what is outstanding itself.
      [self](bulk_closed_atom, std::string& why) {
        if (!self->state.closed.empty() || self->state.shard_gone) return;
        self->state.closed = why.empty() ? "closed" : why;
        self->delayed_send(self, closed_grace, bulk_grace_atom::value);
      },
      [self](bulk_grace_atom) {
        if (self->state.shard_gone) return;
        auto err =
            make_error(errc::node_down, "the bulk channel to the ps node at " + self->state.where +
                                            " closed: " + self->state.closed);
        fail_all(self, err);
        self->quit(err);
      },
      // The rest is small and rare: over BASP, to the shard's own handle.
      [self](stats_atom) { return self->delegate(self->state.remote, stats_atom::value); },
      [self](checkpoint_atom, std::int64_t step) {
        return self->delegate(self->state.remote, checkpoint_atom::value, step);
      },
      [self](restore_atom, shard_checkpoint& c) {
        return self->delegate(self->state.remote, restore_atom::value, std::move(c));
      },
      [self](leave_atom, std::int32_t worker) {
        self->send(self->state.remote, leave_atom::value, worker);
      },
  };
}

}  // namespace

caf::expected<shard_actor> spawn_proxy(caf::actor_system& sys, const endpoint& at,
                                       std::int32_t shard, std::int64_t floats, shard_actor remote,
                                       caf::actor owner) {
  auto fd = dial(sys, at);
  if (!fd) return std::move(fd.error());
  auto conn = std::make_shared<connection>(sys, *fd, floats);
  auto where = at.host + ":" + std::to_string(at.port);
  auto p = sys.spawn(bulk_proxy, std::move(conn), static_cast<std::uint32_t>(shard),
                     std::move(remote), std::move(owner), where);
  return caf::actor_cast<shard_actor>(p);
}

}  // namespace actrain::bulk
