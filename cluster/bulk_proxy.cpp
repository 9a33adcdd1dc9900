// The bulk channel's proxy on a worker node (cluster/bulk.hpp): the proxy writes frames, a writer
// thread finishes what the socket did not take at once, a reader thread answers each request's
// sender itself (one thread hand-off less per request than a message to the proxy).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <boost/asio.hpp>

#include "cluster/bulk_frames.hpp"

namespace actrain::bulk {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

using bulk_closed_atom = caf::atom_constant<caf::atom("bkclosed")>;
using bulk_grace_atom = caf::atom_constant<caf::atom("bkgrace")>;

// -- client ---------------------------------------------------------------------------------------

namespace {

/// A proxy's connection: the proxy writes frames without blocking when the socket takes them,
/// a writer thread finishes what it could not; a reader thread answers the requests, and tells
/// the proxy when the channel closed.
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

  /// Where the answer to a request goes: as a response_promise sends it, but from the reader
  /// thread (a promise sends through its actor's execution context, which belongs to whichever
  /// scheduler thread runs the proxy; this enqueues with none, which any thread may do).
  struct waiting {
    caf::strong_actor_ptr source;
    caf::mailbox_element::forwarding_stack stages;
    caf::message_id mid;
  };

  /// Remembers who waits for the answer to request `id`; the reader answers it.
  void expect(std::uint64_t id, caf::response_promise& rp) {
    std::lock_guard<std::mutex> lk(pending_mtx_);
    pending_.emplace(id, waiting{rp.source(), rp.stages(), rp.id()});
  }

  /// Answers request `id` with `msg`, unless it was answered (failed) already.
  void answer(std::uint64_t id, caf::message msg) {
    waiting w;
    {
      std::lock_guard<std::mutex> lk(pending_mtx_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      w = std::move(it->second);
      pending_.erase(it);
    }
    deliver(w, std::move(msg));
  }

  /// Takes every outstanding request: answered by the caller, or never (a gone node).
  std::vector<waiting> take_all() {
    std::lock_guard<std::mutex> lk(pending_mtx_);
    std::vector<waiting> out;
    out.reserve(pending_.size());
    for (auto& kv : pending_) out.push_back(std::move(kv.second));
    pending_.clear();
    return out;
  }

  void deliver(waiting& w, caf::message msg) {
    auto self = caf::actor_cast<caf::strong_actor_ptr>(proxy_);
    if (!w.stages.empty()) {
      auto next = std::move(w.stages.back());
      w.stages.pop_back();
      next->enqueue(caf::make_mailbox_element(std::move(w.source), w.mid, std::move(w.stages),
                                              std::move(msg)),
                    nullptr);
    } else if (w.source) {
      w.source->enqueue(std::move(self), w.mid.response_id(), std::move(msg), nullptr);
    }
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
        if (!w.values.all_finite()) {
          auto shard = std::to_string(w.shard);
          answer(h.id, caf::make_message(make_error(
                           errc::non_finite, "weights of shard " + shard +
                                                 " from another node hold NaN or infinity")));
          continue;
        }
        answer(h.id, caf::make_message(std::move(w)));
      } else if (k == kind::ack) {
        push_ack a;
        if (parse_meta(sys_, meta, a) || h.floats != 0) {
          why = "a malformed acknowledgement from the ps node";
          break;
        }
        answer(h.id, caf::make_message(a));
      } else if (k == kind::error) {
        std::uint8_t code = 0;
        std::string text;
        if (parse_meta(sys_, meta, code, text)) {
          why = "a malformed error from the ps node";
          break;
        }
        answer(h.id, caf::make_message(make_error(static_cast<errc>(code), text)));
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
  std::mutex pending_mtx_;
  std::unordered_map<std::uint64_t, waiting> pending_;
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
  std::string where;
  std::string closed;  ///< why the connection closed ("" while it is open)
  bool shard_gone = false;
  bool node_gone = false;  ///< the shard went with its node: requests stay unanswered
  caf::error gone_with;    ///< what requests to the gone shard are answered with
};

using proxy_ptr = caf::stateful_actor<proxy_state>*;

/// Fails every outstanding request with `err`.
void fail_all(proxy_ptr self, const caf::error& err) {
  for (auto& w : self->state.conn->take_all()) self->state.conn->deliver(w, caf::make_message(err));
}

template <class... Ts>
caf::response_promise ask(proxy_ptr self, kind k, tensor values, Ts&... meta) {
  auto rp = self->make_response_promise();
  auto id = self->state.next_id++;
  if (self->state.shard_gone) {
    // As on the shard's BASP handle (see the down handler).
    if (!self->state.node_gone) rp.deliver(self->state.gone_with);
    return rp;
  }
  self->state.conn->expect(id, rp);  // answered by the reader thread, or failed by the proxy
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
      // a live node is bounced with caf.request_receiver_down, or answered with the reason it
      // ended with when that is actrain's (a stopped or failed job: the worker then learns the
      // job's fate, whichever of this and the coordinator's word arrives first). The
      // coordinator, which monitors the shard, decides what the job does (fail, fail over, or
      // wait for the ps node and reassign); the proxy stays until its owner goes, and the
      // channel closes.
      st.shard_gone = true;
      st.node_gone = dm.reason == caf::exit_reason::remote_link_unreachable;
      auto pending = st.conn->take_all();
      st.gone_with = dm.reason && dm.reason.category() == errc_category()
                         ? dm.reason
                         : caf::make_error(caf::sec::request_receiver_down);
      if (!st.node_gone)
        for (auto& w : pending) st.conn->deliver(w, caf::make_message(st.gone_with));
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
      [self](leave_atom, std::int32_t worker, bool lost) {
        self->send(self->state.remote, leave_atom::value, worker, lost);
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
