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
#include "cluster/bulk_inline.hpp"

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
    // The reader holds the connection: an answer it delivers can drop the last reference to
    // the proxy (and so to this connection) on this very thread.
    // Counted as a detached thread: the actor system waits for those before it tears its
    // scheduler down, and an actor this thread runs (a worker) may end in its last delivery,
    // after the system saw its last actor go, still in a cleanup that reads the scheduler.
    sys_.inc_detached_threads();
    try {
      reader_ = std::thread([self = shared_from_this(), sys = &sys_]() mutable {
        name_this_thread("actrain.bulk-rd");  // on a worker node it runs the worker too
        self->read_loop();
        self.reset();  // the last reference may end the connection here
        sys->dec_detached_threads();
      });
    } catch (...) {
      sys_.dec_detached_threads();
      throw;
    }
    out_.start();
  }

  /// Who answers: the handle users sent their requests to.
  void answer_as(caf::actor_addr handle) {
    std::lock_guard<std::mutex> lk(mtx_);
    answerer_ = std::move(handle);
  }

  /// Where the answer to a request goes: as a response_promise sends it, but from the reader
  /// thread (a promise sends through its actor's execution context, which belongs to whichever
  /// scheduler thread runs the proxy; this enqueues with none, which any thread may do).
  struct waiting {
    caf::strong_actor_ptr source;
    caf::mailbox_element::forwarding_stack stages;
    caf::message_id mid;
  };

  /// Sends a request on the channel; its answer goes to `w`. As on the shard's own handle: a
  /// request to a shard that ended on a live node is answered with the reason it ended with, one
  /// to a shard whose node is gone is never answered; one made after the channel closed waits
  /// to be failed with the rest. Thread-safe: callers are the handle (in each sender's thread)
  /// and the proxy.
  template <class... Ts>
  void request(kind k, std::uint32_t shard, waiting w, tensor values, Ts&... meta) {
    std::unique_lock<std::mutex> lk(mtx_);
    if (shard_gone_ || stopped_) {
      if (node_gone_) return;
      // After close() the proxy is ending: answered as a request to an ended actor is.
      auto err = shard_gone_ ? gone_with_ : caf::make_error(caf::sec::request_receiver_down);
      lk.unlock();
      deliver(w, caf::make_message(std::move(err)));
      return;
    }
    auto id = next_id_++;
    pending_.emplace(id, std::move(w));
    if (!closed_why_.empty()) return;  // failed with the rest (see bulk_closed_atom)
    lk.unlock();
    send(make_frame(sys_, k, shard, id, std::move(values), meta...));
  }

  /// The shard's handle went down with `reason`: what is outstanding and what comes later is
  /// answered as the shard's own handle across nodes would (see request()).
  void shard_went(const caf::error& reason) {
    std::vector<waiting> pending;
    caf::error with;
    {
      std::lock_guard<std::mutex> lk(mtx_);
      shard_gone_ = true;
      node_gone_ = reason == caf::exit_reason::remote_link_unreachable;
      gone_with_ = reason && reason.category() == errc_category()
                       ? reason
                       : caf::make_error(caf::sec::request_receiver_down);
      with = gone_with_;
      if (!node_gone_)
        for (auto& kv : pending_) pending.push_back(std::move(kv.second));
      pending_.clear();
    }
    for (auto& w : pending) deliver(w, caf::make_message(with));
  }

  /// The channel closed because of `why`: true when the proxy is to fail what is outstanding
  /// after its grace (it closed first, while the shard's handle is still up).
  bool closed_for(const std::string& why) {
    std::lock_guard<std::mutex> lk(mtx_);
    if (!closed_why_.empty() || shard_gone_) return false;
    closed_why_ = why.empty() ? "closed" : why;
    return true;
  }

  /// Why the channel closed ("" while open); empty again never.
  std::string closed_why() {
    std::lock_guard<std::mutex> lk(mtx_);
    return closed_why_;
  }

  bool shard_gone() {
    std::lock_guard<std::mutex> lk(mtx_);
    return shard_gone_;
  }

  /// Answers request `id` with `msg`, unless it was answered (failed) already.
  void answer(std::uint64_t id, caf::message msg) {
    waiting w;
    {
      std::lock_guard<std::mutex> lk(mtx_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      w = std::move(it->second);
      pending_.erase(it);
    }
    deliver(w, std::move(msg));
  }

  /// Takes every outstanding request, to be failed by the caller; requests after it are
  /// answered as a request to an ended actor is (the proxy is ending).
  std::vector<waiting> stop_and_take() {
    std::lock_guard<std::mutex> lk(mtx_);
    stopped_ = true;
    std::vector<waiting> out;
    out.reserve(pending_.size());
    for (auto& kv : pending_) out.push_back(std::move(kv.second));
    pending_.clear();
    return out;
  }

  /// On the reader thread, the unit answers are delivered on: a requester they wake (a worker
  /// on the scheduler) runs there. Null on other threads (their deliveries wake the scheduler).
  static thread_local caf::execution_unit* reading;

  void deliver(waiting& w, caf::message msg) {
    caf::actor_addr answerer;
    {
      std::lock_guard<std::mutex> lk(mtx_);
      answerer = answerer_ ? answerer_ : proxy_;
    }
    auto self = caf::actor_cast<caf::strong_actor_ptr>(answerer);
    if (!w.stages.empty()) {
      auto next = std::move(w.stages.back());
      w.stages.pop_back();
      next->enqueue(caf::make_mailbox_element(std::move(w.source), w.mid, std::move(w.stages),
                                              std::move(msg)),
                    reading);
    } else if (w.source) {
      w.source->enqueue(std::move(self), w.mid.response_id(), std::move(msg), reading);
    }
  }

  /// Queues `f` (written at once when nothing waits before it and the socket takes it all;
  /// dropped once close() stopped the writer).
  void send(out_frame f) { out_.send(std::move(f)); }

  /// Ends both threads. Only reads are shut down (that wakes the reader) unless a write is
  /// stuck: the connection stays established, so its counts stay readable until retire()d
  /// sockets close (a shut-down socket soon has no peer address, and no counts, to read).
  void close() {
    {
      std::lock_guard<std::mutex> lk(mtx_);
      if (closed_) return;
      closed_ = true;
      stopped_ = true;
    }
    out_.stop();  // shuts the socket down both ways when a write was stuck
    ::shutdown(fd_, SHUT_RD);
    if (reader_.joinable()) {
      if (reader_.get_id() == std::this_thread::get_id())
        reader_.detach();  // the reader itself lets go of the connection: it ends right after
      else
        reader_.join();
    }
    retire(fd_);
  }

 private:
  template <class... Ts>
  void tell(Ts&&... xs) {
    if (auto p = caf::actor_cast<caf::actor>(proxy_)) caf::anon_send(p, std::forward<Ts>(xs)...);
  }

  void read_loop() {
    inline_unit unit{sys_};
    reading = &unit;
    struct not_reading {
      ~not_reading() { reading = nullptr; }
    } on_return;
    tensor_pool pool(4);
    std::vector<char> meta;
    std::string why;
    frame_reader in(fd_);
    for (;;) {
      header h;
      if (why = in.read(&h, sizeof h); !why.empty()) break;
      if (why = check_header(h, static_cast<std::uint64_t>(max_floats_)); !why.empty()) break;
      tensor values;
      if (why = in.read_body(h, meta, values, pool); !why.empty()) break;
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
  std::mutex mtx_;  ///< guards the members from here to closed_
  std::unordered_map<std::uint64_t, waiting> pending_;
  caf::actor_addr answerer_;
  std::uint64_t next_id_ = 1;
  std::string closed_why_;  ///< why the channel closed ("" while it is open)
  bool shard_gone_ = false;
  bool node_gone_ = false;  ///< the shard went with its node: requests stay unanswered
  bool stopped_ = false;    ///< no more requests: the proxy is ending (close() or fail_all)
  caf::error gone_with_;    ///< what requests to the gone shard are answered with
  bool closed_ = false;     ///< close() ran
  frame_writer out_{fd_};
  std::thread reader_;
};

thread_local caf::execution_unit* connection::reading = nullptr;

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
  std::string where;
};

using proxy_ptr = caf::stateful_actor<proxy_state>*;

/// Fails every outstanding request with `err`; the proxy is ending.
void fail_all(proxy_ptr self, const caf::error& err) {
  for (auto& w : self->state.conn->stop_and_take())
    self->state.conn->deliver(w, caf::make_message(err));
}

/// What users hold as the shard: pulls, pushes and push_pulls go on the channel from the
/// sender's own thread (written at once when the socket takes them), so no scheduler thread is
/// woken for them; everything else, and every message once the proxy ended, goes to the proxy
/// actor. A custom actor whose enqueue() is its work, as CAF's own decorators are
/// (caf/decorator/sequencer.hpp); it goes down with the proxy, with its reason.
class bulk_handle : public caf::monitorable_actor {
 public:
  bulk_handle(caf::actor_config& cfg, std::shared_ptr<connection> conn, std::uint32_t shard,
              caf::strong_actor_ptr proxy)
      : caf::monitorable_actor(cfg),
        conn_(std::move(conn)),
        shard_(shard),
        proxy_(std::move(proxy)) {}

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    // Requests and plain sends alike, so both keep the order they were sent in.
    if (what && !what->mid.is_response() && !ended_.load(std::memory_order_acquire) &&
        shortcut(*what))
      return;
    proxy_->enqueue(std::move(what), host);
  }

  void end(const caf::error& reason) {
    ended_.store(true, std::memory_order_release);
    cleanup(caf::error{reason}, nullptr);
  }

  void on_destroy() override {
    // Dropped by its users while the proxy lives: monitors learn it, as of any actor.
    if (!ended_.exchange(true)) cleanup(caf::exit_reason::unreachable, nullptr);
    caf::monitorable_actor::on_destroy();
  }

 private:
  bool shortcut(caf::mailbox_element& e) {
    auto& m = e.content();
    if (m.size() != 2 || !m.match_element<caf::atom_value>(0)) return false;
    auto op = m.get_as<caf::atom_value>(0);
    connection::waiting w{e.sender, std::move(e.stages), e.mid};
    if (op == pull_atom::value && m.match_element<pull_request>(1)) {
      auto r = m.get_as<pull_request>(1);
      conn_->request(kind::pull, shard_, std::move(w), tensor(), r);
      return true;
    }
    auto k = op == push_atom::value        ? kind::push
             : op == push_pull_atom::value ? kind::push_pull
                                           : kind::hello;
    if (k == kind::hello || !m.match_element<gradient>(1)) {
      e.stages = std::move(w.stages);
      return false;
    }
    auto g = m.get_as<gradient>(1);  // shares the values' buffer
    auto values = std::move(g.values);
    g.values = tensor();
    conn_->request(k, shard_, std::move(w), std::move(values), g);
    return true;
  }

  std::shared_ptr<connection> conn_;
  std::uint32_t shard_;
  caf::strong_actor_ptr proxy_;
  std::atomic<bool> ended_{false};
};

/// How long a proxy whose channel closed waits for its shard's handle to go down (a dead ps
/// node's does within milliseconds) before it fails what is outstanding itself.
constexpr auto closed_grace = std::chrono::seconds(2);

/// Behind the handle: the channel's lifecycle and the small messages that go over BASP. Pulls,
/// pushes and push_pulls never reach it (the handle sends them, and forwards to a proxy that
/// ended only for CAF to bounce).
caf::behavior bulk_proxy(proxy_ptr self, std::shared_ptr<connection> conn, shard_actor remote,
                         caf::actor owner, std::string where) {
  auto& st = self->state;
  st.conn = std::move(conn);
  st.remote = std::move(remote);
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
      st.conn->shard_went(dm.reason);
      st.conn->close();
      return;
    }
    fail_all(self, make_error(errc::stopped, "the proxy's owner stopped"));
    self->quit(caf::exit_reason::normal);
  });
  return {
      // A ps node that dies resets the channel a moment before its shard's handle goes down
      // over BASP: the proxy waits for that (and then goes down with the shard's reason, so the
      // job treats it as the lost shard it is) for up to `closed_grace`; a channel that closed
      // while the shard lives fails what is outstanding itself.
      [self](bulk_closed_atom, std::string& why) {
        if (self->state.conn->closed_for(why))
          self->delayed_send(self, closed_grace, bulk_grace_atom::value);
      },
      [self](bulk_grace_atom) {
        if (self->state.conn->shard_gone()) return;
        auto err =
            make_error(errc::node_down, "the bulk channel to the ps node at " + self->state.where +
                                            " closed: " + self->state.conn->closed_why());
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
  auto index = static_cast<std::uint32_t>(shard);
  auto p = sys.spawn(bulk_proxy, conn, std::move(remote), std::move(owner), where);
  caf::actor_config cfg;
  auto handle = caf::make_actor<bulk_handle, caf::strong_actor_ptr>(
      sys.next_actor_id(), sys.node(), &sys, cfg, conn, index,
      caf::actor_cast<caf::strong_actor_ptr>(p));
  conn->answer_as(caf::actor_cast<caf::actor_addr>(handle));
  // Users monitor the handle: it goes down with the proxy, with its reason.
  p->attach_functor([h = caf::actor_cast<caf::actor_addr>(handle)](const caf::error& reason) {
    if (auto alive = caf::actor_cast<caf::strong_actor_ptr>(h))
      static_cast<bulk_handle*>(caf::actor_cast<caf::abstract_actor*>(alive))->end(reason);
  });
  return caf::actor_cast<shard_actor>(handle);
}

}  // namespace actrain::bulk
