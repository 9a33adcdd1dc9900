// The bulk channel's server on a ps node (cluster/bulk.hpp): a thread per connection reads
// requests and hands them to the shards; each answer is written back from the thread that sends
// it (through the connection's answer_sink), so no thread waits for a shard.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <openssl/crypto.h>
#include <boost/asio.hpp>

#include "cluster/bulk_frames.hpp"
#include "cluster/bulk_inline.hpp"

namespace actrain::bulk {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// What one connection shares with the answers on their way back: the socket's writer and the
/// requests the shards have not answered yet.
struct link : std::enable_shared_from_this<link> {
  caf::actor_system& sys;
  std::chrono::milliseconds timeout;  ///< how long a request may wait for its shard
  frame_writer out;
  struct request {
    std::uint64_t id = 0;      ///< the frame's id, which its answer carries
    std::uint32_t target = 0;  ///< the shard's index
    caf::actor_addr shard;     ///< weak: a shard holding a request keeps the sink alive
    clk::time_point deadline{};
  };
  std::mutex mtx;
  std::condition_variable cv;
  std::unordered_map<std::uint64_t, request> waiting;  ///< by the CAF request id
  std::uint64_t next = 1;
  bool ended = false;

  /// At most this many requests of a connection wait at its shards, and as many answers for the
  /// writer: a peer that sends faster than they answer, or reads slower, is read no further
  /// until they do. (The protocol holds at most two per worker: a push and a held pull.)
  static constexpr std::size_t max_waiting = 4;

  link(caf::actor_system& s, int f, std::chrono::milliseconds t) : sys(s), timeout(t), out(f) {}

  /// Registers a request; its CAF request id, or 0 once the connection ended. Requests whose
  /// shard did not answer in time are answered with a timeout meanwhile.
  std::uint64_t add(request r) {
    out.wait_below(max_waiting);
    std::unique_lock<std::mutex> lk(mtx);
    while (!ended && waiting.size() >= max_waiting) {
      cv.wait_until(lk, earliest());
      reap(lk);
    }
    if (ended) return 0;
    auto mid = next++;
    r.deadline = clk::now() + timeout;
    waiting.emplace(mid, std::move(r));
    return mid;
  }

  bool take(std::uint64_t mid, request& r) {
    std::lock_guard<std::mutex> lk(mtx);
    auto it = waiting.find(mid);
    if (it == waiting.end()) return false;
    r = std::move(it->second);
    waiting.erase(it);
    cv.notify_all();
    return true;
  }

  /// The earliest deadline of a waiting request (time_point::max() when none). Under the lock.
  clk::time_point earliest() const {
    auto t = clk::time_point::max();
    for (auto& kv : waiting) t = std::min(t, kv.second.deadline);
    return t;
  }

  clk::time_point next_deadline() {
    std::lock_guard<std::mutex> lk(mtx);
    return earliest();
  }

  /// Answers every request past its deadline with a timeout, as a request with a timeout
  /// would have failed; its shard's answer, should it come later, is dropped.
  void reap(std::unique_lock<std::mutex>& lk) {
    std::vector<request> late;
    auto now = clk::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (it->second.deadline <= now) {
        late.push_back(std::move(it->second));
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    if (late.empty()) return;
    lk.unlock();
    for (auto& r : late) out.send(late_frame(r));
    lk.lock();
  }

  void reap() {
    std::unique_lock<std::mutex> lk(mtx);
    reap(lk);
  }

  /// No more requests: wakes a connection thread that waits for a slot or for the writer.
  void end() {
    {
      std::lock_guard<std::mutex> lk(mtx);
      ended = true;
      cv.notify_all();
    }
    out.stop();
  }

  out_frame late_frame(const request& r);
  void answer(const request& r, caf::message& msg);
};

/// An answer a connection thread holds back until its shard's turn ends (held_answers).
struct held_answer {
  std::shared_ptr<link> l;
  link::request r;
  caf::message msg;
};

/// Set on a connection thread during a turn of the actors it runs, and only then (an answer given
/// outside a turn, such as a request to an ended shard bounced at once, has no turn end to be
/// written at): the answers given while another request waits at the same shard. Writing a
/// 0.8 MB answer takes about as long as the shard's step; held until the turn ends, the write
/// runs beside the next request's step (on a scheduler thread) instead of before it.
thread_local std::vector<held_answer>* held_answers = nullptr;

/// Whether another message waits at `shard` (read on the thread that runs its turn).
bool others_wait(const caf::actor_addr& shard) {
  auto* a = dynamic_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(shard));
  return a && !a->mailbox().empty();
}

/// Receives the shards' answers for one connection and writes them to its socket in the
/// answering thread: a custom actor whose enqueue() is the whole of its work, as CAF's own
/// decorators are (caf/decorator/sequencer.hpp). Only responses are expected; anything else is
/// dropped.
class answer_sink : public caf::monitorable_actor {
 public:
  answer_sink(caf::actor_config& cfg, std::shared_ptr<link> l)
      : caf::monitorable_actor(cfg), link_(std::move(l)) {}

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit*) override {
    if (!what || !what->mid.is_response()) return;
    link::request r;
    if (!link_->take(what->mid.request_id().integer_value(), r)) return;
    auto msg = what->move_content_to_message();
    if (held_answers && others_wait(r.shard)) {
      held_answers->push_back({link_, std::move(r), std::move(msg)});
      return;
    }
    link_->answer(r, msg);
  }

 private:
  std::shared_ptr<link> link_;
};

caf::strong_actor_ptr make_sink(caf::actor_system& sys, std::shared_ptr<link> l) {
  caf::actor_config cfg;
  return caf::make_actor<answer_sink, caf::strong_actor_ptr>(sys.next_actor_id(), sys.node(), &sys,
                                                             cfg, std::move(l));
}

/// The frame an error travels in.
out_frame error_frame(caf::actor_system& sys, const link::request& r, const caf::error& err) {
  auto [code, text] = error_meta(err);
  return make_frame(sys, kind::error, r.target, r.id, tensor(), code, text);
}

out_frame link::late_frame(const request& r) {
  return error_frame(
      sys, r,
      caf::make_error(caf::sec::request_timeout, "bulk channel: shard " + std::to_string(r.target) +
                                                     " did not answer within " +
                                                     std::to_string(timeout.count()) + " ms"));
}

void link::answer(const request& r, caf::message& msg) {
  if (msg.match_elements<weights>()) {
    auto& w = msg.get_mutable_as<weights>(0);
    auto vals = std::move(w.values);
    w.values = tensor();
    auto shape = vals.shape();
    // Not kept in a pool: the shard recycles its own snapshots once every reader let go.
    out.send(make_frame(sys, kind::weights, r.target, r.id, std::move(vals), w, shape));
  } else if (msg.match_elements<push_ack>()) {
    auto& a = msg.get_mutable_as<push_ack>(0);
    out.send(make_frame(sys, kind::ack, r.target, r.id, tensor(), a));
  } else if (msg.match_elements<caf::error>()) {
    auto err = msg.get_as<caf::error>(0);
    if (err != caf::sec::request_receiver_down) {
      out.send(error_frame(sys, r, err));
      return;
    }
    // The shard was gone: when it went with a stopped or failed job (the coordinator's exit,
    // sent on another connection than this worker's), answer with its reason, so the worker
    // learns the job's fate rather than a lost peer. Monitoring a terminated actor delivers its
    // down message at once; one still in its cleanup sends it when done (bounded by 1 s).
    auto self = shared_from_this();
    auto shard = caf::actor_cast<caf::actor>(r.shard);
    if (!shard) {
      out.send(error_frame(sys, r, err));
      return;
    }
    sys.spawn([self, r, err, shard](caf::event_based_actor* a) -> caf::behavior {
      a->monitor(shard);
      a->set_down_handler([=](caf::down_msg& dm) {
        auto reason = dm.reason && dm.reason.category() == errc_category() ? dm.reason : err;
        self->out.send(error_frame(self->sys, r, reason));
        a->quit();
      });
      return {caf::after(std::chrono::seconds(1)) >> [=] {
        self->out.send(error_frame(self->sys, r, err));
        a->quit();
      }};
    });
  } else {
    out.send(error_frame(sys, r,
                         make_error(errc::bad_message,
                                    "the shard answered with an unexpected "
                                    "message: " +
                                        to_string(msg))));
  }
}

}  // namespace

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
    std::weak_ptr<link> requests;  ///< ended by stop(), whatever its thread waits for
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
        name_this_thread("actrain.bulk-ps");
        bool ended_by_peer = serve_connection(c);
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
  bool greet(int fd, frame_reader& in) {
    auto deadline = clk::now() + hello_timeout;
    header h;
    if (!in.read(&h, sizeof h, deadline).empty()) return false;
    if (auto why = check_header(h, 0);
        !why.empty() || h.kind != static_cast<std::uint8_t>(kind::hello)) {
      reply_error(fd, h.id, 0, errc::bad_message,
                  "the bulk channel expects a hello first" + (why.empty() ? "" : ": " + why));
      return false;
    }
    std::vector<char> meta;
    tensor none;
    tensor_pool pool(1);
    if (!in.read_body(h, meta, none, pool, deadline).empty()) return false;
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
  bool serve_connection(connection& c) {
    const int fd = c.fd;
    frame_reader in(fd);
    if (!greet(fd, in)) return false;
    auto l = std::make_shared<link>(sys, fd, timeout);
    {
      std::lock_guard<std::mutex> lk(mtx);
      if (stopping) return false;
      c.requests = l;
    }
    l->out.start();
    auto sink = make_sink(sys, l);
    // One message per turn: a request that waits behind this one goes to a scheduler thread
    // while this thread writes the answer it held back (held_answers).
    std::vector<held_answer> held;
    inline_unit unit{sys, 1, [&held] { held_answers = &held; },
                     [&held] {
                       held_answers = nullptr;
                       for (auto& a : held) a.l->answer(a.r, a.msg);
                       held.clear();
                     }};
    tensor_pool pool(link::max_waiting + 2);
    std::vector<char> meta;
    bool by_peer = true;
    for (;;) {
      // While requests wait at the shards, those past their deadline are answered in time.
      if (auto due = l->next_deadline();
          due != clk::time_point::max() && !in.buffered() && !wait_for(fd, POLLIN, due)) {
        l->reap();
        continue;
      }
      header h;
      if (!in.read(&h, sizeof h).empty()) break;
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
      if (why.empty()) {
        tensor values;
        if (!in.read_body(h, meta, values, pool).empty()) break;
        why = ask(*l, sink, unit, t, h, meta, std::move(values), pool);
        if (why.empty()) continue;
      }
      // A misbehaving peer: say why, then drop the connection (its stream cannot be trusted).
      l->out.send(error_frame(sys, link::request{h.id, h.target, {}, {}},
                              make_error(errc::bad_message, "bulk channel: " + why)));
      l->out.flush();
      l->end();  // a late answer must not write while the refusal lingers
      linger(fd);
      by_peer = false;
      break;
    }
    l->end();
    // Who monitored the sink (none of actrain's shards do) learns that the requester is gone.
    static_cast<answer_sink*>(caf::actor_cast<caf::abstract_actor*>(sink))
        ->cleanup(caf::exit_reason::normal, nullptr);
    return by_peer;
  }

  /// Hands a request to its shard, the sink to answer; "" or why the frame's metadata is
  /// malformed.
  std::string ask(link& l, const caf::strong_actor_ptr& sink, inline_unit& unit, const target& t,
                  const header& h, const std::vector<char>& meta, tensor values,
                  tensor_pool& pool) {
    caf::message msg;
    if (h.kind == static_cast<std::uint8_t>(kind::pull)) {
      pull_request r;
      if (auto err = parse_meta(sys, meta, r)) return "a malformed pull: " + describe_error(err);
      msg = caf::make_message(pull_atom::value, r);
    } else {
      gradient g;
      auto err = parse_meta(sys, meta, g);
      if (err || !g.values.empty() || g.transfer != 0)
        return "a malformed gradient" + (err ? ": " + describe_error(err) : std::string());
      g.values = values;
      pool.keep(std::move(values));  // its buffer comes back once the shard let go of it
      if (h.kind == static_cast<std::uint8_t>(kind::push))
        msg = caf::make_message(push_atom::value, std::move(g));
      else
        msg = caf::make_message(push_pull_atom::value, std::move(g));
    }
    auto mid = l.add(link::request{h.id, h.target, caf::actor_cast<caf::actor_addr>(t.shard), {}});
    if (mid == 0) return {};  // the connection ended meanwhile
    // As request() sends it: the shard's answer goes to the sink, whose enqueue() writes it. A
    // shard this wakes runs here, on `unit`.
    caf::actor_cast<caf::strong_actor_ptr>(t.shard)->enqueue(sink, caf::make_message_id(mid),
                                                             std::move(msg), &unit);
    return {};
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
    // A connection thread may wait for a slot or for its writer rather than read.
    std::vector<std::shared_ptr<link>> links;
    {
      std::lock_guard<std::mutex> lk(mtx);
      for (auto& c : connections)
        if (auto l = c.requests.lock()) links.push_back(std::move(l));
    }
    for (auto& l : links) l->end();
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
  d.accepting = std::thread([p = impl_] {
    name_this_thread("actrain.bulk-ac");
    p->accept_loop();
  });
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
