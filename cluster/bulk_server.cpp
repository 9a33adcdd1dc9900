// The bulk channel's server on a ps node (cluster/bulk.hpp): a thread per connection asks the
// shard and writes the answer back.
#include <sys/socket.h>
#include <unistd.h>

#include <list>
#include <map>
#include <mutex>
#include <thread>

#include <openssl/crypto.h>
#include <boost/asio.hpp>

#include "cluster/bulk_frames.hpp"

namespace actrain::bulk {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

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

  /// What a request that failed with `err` answers: when its target was gone (a stopped or
  /// failed job's exit, sent by the coordinator on another connection than this worker's), the
  /// reason the target ended with, so the worker learns the job's fate rather than a lost peer.
  /// Monitoring a terminated actor delivers its down message at once; one still in its cleanup
  /// sends it when done (bounded by 1 s).
  caf::error ended_with(caf::scoped_actor& self, const target& t, const caf::error& err) {
    if (err != caf::sec::request_receiver_down) return err;
    caf::error reason = err;
    const auto addr = t.shard.address();
    self->monitor(t.shard);
    bool done = false, seen = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!done) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= decltype(left)::zero()) break;
      self->receive(
          [&](caf::down_msg& dm) {
            if (dm.source != addr) return;
            done = seen = true;
            if (dm.reason && dm.reason.category() == errc_category()) reason = dm.reason;
          },
          caf::after(std::chrono::duration_cast<caf::timespan>(left)) >> [&] { done = true; });
    }
    if (!seen) self->demonitor(addr);
    return reason;
  }

  /// Asks the shard and makes the reply; false when the frame's metadata is malformed (the
  /// reply says so, and the connection is dropped after it).
  bool answer_request(caf::scoped_actor& self, const target& t, const header& h,
                      const std::vector<char>& meta, tensor values, tensor_pool& pool,
                      out_frame& out) {
    auto fail = [&](const caf::error& err) {
      auto [code, text] = error_meta(ended_with(self, t, err));
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

}  // namespace actrain::bulk
