#include <actrain/testing/link_relay.hpp>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

namespace actrain {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

/// Past this many bytes queued in one direction the relay stops reading that side until the
/// writer catches up: a delayed link must not buffer without bound.
constexpr std::size_t max_queued = std::size_t{8} << 20;

}  // namespace

struct link_relay::impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  tcp::acceptor acceptor{io};
  tcp::endpoint target;
  std::uint16_t port = 0;  ///< set before the thread starts, then read-only
  std::atomic<std::int64_t> delay_us{0};
  std::atomic<int> state{static_cast<int>(link_state::open)};
  std::atomic<std::uint64_t> to_target{0}, from_target{0}, dropped{0};
  std::atomic<int> connections{0};
  std::thread thread;
  /// Signalled after every change of the counters above (wait_for_counts).
  mutable std::mutex counted_mtx;
  mutable std::condition_variable counted_cv;
  void counted() {
    { std::lock_guard<std::mutex> guard{counted_mtx}; }
    counted_cv.notify_all();
  }

  /// One accepted connection and its leg to the target. Lives as long as a handler holds it;
  /// touched only on the relay's thread.
  struct pipe : std::enable_shared_from_this<pipe> {
    struct chunk {
      clock_type::time_point due;
      std::vector<char> bytes;
    };
    /// One direction: read from `from`, write to `to` after the delay.
    struct direction {
      tcp::socket* from = nullptr;
      tcp::socket* to = nullptr;
      std::atomic<std::uint64_t>* counter = nullptr;
      std::array<char, 64 * 1024> buffer{};
      std::deque<chunk> queue;
      std::size_t queued = 0;
      bool reading = false;
      bool writing = false;
      asio::steady_timer timer;
      explicit direction(asio::io_context& io) : timer(io) {}
    };
    impl* owner;
    tcp::socket client, server;
    direction up, down;  ///< up: client -> target; down: target -> client
    bool closed = false;

    explicit pipe(impl* o, tcp::socket c)
        : owner(o), client(std::move(c)), server(o->io), up(o->io), down(o->io) {
      up.from = &client;
      up.to = &server;
      up.counter = &o->to_target;
      down.from = &server;
      down.to = &client;
      down.counter = &o->from_target;
    }

    link_state state() const { return static_cast<link_state>(owner->state.load()); }

    void close() {
      if (closed) return;
      closed = true;
      boost::system::error_code ignored;
      for (auto* s : {&client, &server}) {
        s->shutdown(tcp::socket::shutdown_both, ignored);
        s->close(ignored);
      }
      up.timer.cancel();
      down.timer.cancel();
    }

    void read(direction& d) {
      if (closed || d.reading) return;
      d.reading = true;
      auto self = shared_from_this();
      d.from->async_read_some(
          asio::buffer(d.buffer), [self, &d](boost::system::error_code ec, std::size_t n) {
            d.reading = false;
            if (ec || self->closed) return self->close();
            auto st = self->state();
            if (st == link_state::silent) {
              self->owner->dropped += n;
              self->owner->counted();
              return self->read(d);
            }
            if (st != link_state::open) return self->close();
            auto delay = std::chrono::microseconds(self->owner->delay_us.load());
            d.queue.push_back({clock_type::now() + delay, {d.buffer.data(), d.buffer.data() + n}});
            d.queued += n;
            if (!d.writing) self->write(d);
            if (d.queued < max_queued) self->read(d);
          });
    }

    void write(direction& d) {
      if (closed) return;
      if (state() == link_state::silent) {
        d.queue.clear();
        d.queued = 0;
      }
      if (d.queue.empty()) {
        d.writing = false;
        return;
      }
      d.writing = true;
      auto self = shared_from_this();
      if (d.queue.front().due > clock_type::now()) {
        d.timer.expires_at(d.queue.front().due);
        d.timer.async_wait([self, &d](boost::system::error_code ec) {
          if (ec || self->closed) return;
          self->write(d);  // re-checks: the link may have been silenced meanwhile
        });
        return;
      }
      write_front(d);
    }

    void write_front(direction& d) {
      auto self = shared_from_this();
      asio::async_write(*d.to, asio::buffer(d.queue.front().bytes),
                        [self, &d](boost::system::error_code ec, std::size_t n) {
                          if (ec || self->closed) return self->close();
                          *d.counter += n;
                          self->owner->counted();
                          d.queued -= d.queue.front().bytes.size();
                          d.queue.pop_front();
                          if (!d.reading && d.queued < max_queued) self->read(d);
                          self->write(d);
                        });
    }
  };

  std::vector<std::weak_ptr<pipe>> pipes;  ///< relay thread only

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec) return;  // the acceptor was closed (cut, silence, destruction)
      if (static_cast<link_state>(state.load()) != link_state::open) return;
      auto p = std::make_shared<pipe>(this, std::move(s));
      pipes.push_back(p);
      p->server.async_connect(target, [this, p](boost::system::error_code ec) {
        if (ec || p->closed) return p->close();
        // Both legs forward small BASP messages (heartbeats, acks): no Nagle delays on top of
        // the injected ones.
        boost::system::error_code ignored;
        p->client.set_option(tcp::no_delay(true), ignored);
        p->server.set_option(tcp::no_delay(true), ignored);
        connections += 1;
        counted();
        p->read(p->up);
        p->read(p->down);
      });
      accept();
    });
  }

  /// Runs `f` on the relay's thread and waits for it (bounded: the thread only runs handlers).
  template <class F>
  void run_on_thread(F f) {
    std::promise<void> done;
    auto fut = done.get_future();
    asio::post(io, [&] {
      f();
      done.set_value();
    });
    if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
      throw std::runtime_error("link relay: its thread did not answer within 5 s");
  }

  void close_listener() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
  }
};

link_relay::link_relay(std::string target_host, std::uint16_t target_port)
    : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  boost::system::error_code ec;
  tcp::resolver resolver{m.io};
  auto found = resolver.resolve(target_host, std::to_string(target_port), ec);
  if (ec || found.empty())
    throw std::runtime_error("link relay: cannot resolve target " + target_host + ": " +
                             ec.message());
  m.target = *found.begin();
  tcp::endpoint here{asio::ip::make_address("127.0.0.1"), 0};
  m.acceptor.open(here.protocol(), ec);
  if (!ec) m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(here, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) m.port = m.acceptor.local_endpoint(ec).port();
  if (ec) throw std::runtime_error("link relay: cannot listen on 127.0.0.1: " + ec.message());
  m.accept();
  m.thread = std::thread([&m] { m.io.run(); });
}

link_relay::~link_relay() {
  auto& m = *impl_;
  try {
    m.run_on_thread([&m] {
      m.close_listener();
      for (auto& w : m.pipes)
        if (auto p = w.lock()) p->close();
    });
  } catch (...) {
    // The thread is stuck: stopping the io_context below still ends it.
  }
  m.work.reset();
  m.io.stop();
  if (m.thread.joinable()) m.thread.join();
}

std::uint16_t link_relay::port() const {
  return impl_->port;
}

void link_relay::set_delay(std::chrono::microseconds d) {
  impl_->delay_us = std::max<std::int64_t>(0, d.count());
}

void link_relay::cut() {
  auto& m = *impl_;
  m.run_on_thread([&m] {
    m.state = static_cast<int>(link_state::cut);
    m.close_listener();
    for (auto& w : m.pipes)
      if (auto p = w.lock()) p->close();
    m.pipes.clear();
  });
}

void link_relay::silence() {
  auto& m = *impl_;
  m.run_on_thread([&m] {
    if (static_cast<link_state>(m.state.load()) == link_state::cut) return;
    m.state = static_cast<int>(link_state::silent);
    m.close_listener();
  });
}

link_state link_relay::state() const {
  return static_cast<link_state>(impl_->state.load());
}

link_counts link_relay::wait_for_counts(const std::function<bool(const link_counts&)>& done,
                                        std::chrono::milliseconds bound) const {
  std::unique_lock<std::mutex> guard{impl_->counted_mtx};
  impl_->counted_cv.wait_for(guard, bound, [&] { return done(counts()); });
  return counts();
}

link_counts link_relay::counts() const {
  link_counts c;
  c.to_target = impl_->to_target;
  c.from_target = impl_->from_target;
  c.dropped = impl_->dropped;
  c.connections = impl_->connections;
  return c;
}

}  // namespace actrain
