#include "bench/wire_server.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

#include <boost/asio.hpp>

#include <actrain/cluster.hpp>
#include "cluster/bulk.hpp"
#include "cluster/chunking.hpp"
#include "cluster/transport.hpp"

namespace actrain {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

void serve_raw(tcp::socket sock) {
  std::vector<char> buf;
  for (;;) {
    char op = 0;
    std::uint64_t n = 0;
    asio::read(sock, asio::buffer(&op, 1));
    if (op == 'Q') return;
    if (op == 'R') {
      asio::write(sock, asio::buffer(&op, 1));
      continue;
    }
    asio::read(sock, asio::buffer(&n, sizeof n));
    if (buf.size() < n) buf.resize(n);
    if (op == 'P' || op == 'X') asio::read(sock, asio::buffer(buf.data(), n), whole_rest);
    if (op == 'P')
      asio::write(sock, asio::buffer(&op, 1));
    else
      asio::write(sock, asio::buffer(buf.data(), n), whole_rest);
  }
}

namespace {

/// A shard that only moves bytes: acks pushes, answers pulls and push_pulls with `n` floats.
/// Behind a gateway it measures the transparent path (proxy -> chunks -> gateway) and nothing
/// else, like the raw TCP peer, which applies nothing either.
shard_actor::behavior_type sink_shard(std::int64_t n) {
  weights w;
  w.values = tensor(std::vector<float>(static_cast<std::size_t>(n), 0.5f));
  return {
      [w](pull_atom, const pull_request&) { return w; },
      [](push_atom, const gradient& g) {
        return push_ack{g.base_version + 1, 0, true};
      },
      [w](push_pull_atom, const gradient&) { return w; },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

caf::behavior wire_server(caf::event_based_actor* self) {
  auto cache = std::make_shared<tensor>();
  // One sink shard and gateway per size, spawned on first request, linked to this server.
  using key = std::tuple<std::int64_t, std::int64_t, std::int32_t>;
  auto gateways = std::make_shared<std::map<key, chunked_shard_actor>>();
  return {
      // A gateway for `floats` values that chunks its replies by `chunk_bytes` x `window`.
      [self, gateways](caf::get_atom, std::int64_t floats, std::int64_t chunk_bytes,
                       std::int32_t window) {
        auto& g = (*gateways)[key{floats, chunk_bytes, window}];
        if (!g) {
          chunk_options o;
          o.chunk_bytes = static_cast<std::size_t>(chunk_bytes);
          o.window = window;
          auto sink = self->spawn<caf::linked>(sink_shard, floats);
          g = self->spawn<caf::linked>(shard_gateway, shard_actor{sink}, floats, o);
        }
        return g;
      },
      [](push_atom, const tensor& t) { return static_cast<std::int64_t>(t.size()); },
      [cache](pull_atom, std::int64_t n) {
        if (static_cast<std::int64_t>(cache->size()) != n)
          *cache = tensor(std::vector<float>(static_cast<std::size_t>(n), 0.5f));
        return *cache;
      },
      [](push_pull_atom, const tensor& t) { return t; },
      [](tick_atom) { return std::int32_t{1}; },
      [self](stop_atom) {
        self->quit(caf::exit_reason::user_shutdown);
      }  // takes the linked sinks along,
  };
}

/// A wire_server published by its own actor system, plain or TLS (`opts.tls`).
struct published_server {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor srv;
  std::uint16_t port = 0;

  explicit published_server(const cluster_options& opts) {
    prepare_cluster_config(cfg, opts);
    sys = std::make_unique<caf::actor_system>(cfg);
    srv = sys->spawn(wire_server);
    auto p = net::publish(*sys, caf::actor_cast<caf::strong_actor_ptr>(srv),
                          sys->message_types(srv), 0, "127.0.0.1");
    if (p) port = *p;
  }
  ~published_server() {
    if (port != 0) {
      caf::scoped_actor self{*sys};
      self->wait_for(srv);  // the client sends stop when done
      net::unpublish(*sys, srv.address(), port);
    }
  }
};

/// Sink shards behind a bulk-channel server (cluster/bulk.hpp), in the plain server's system:
/// shard i moves (i << 20) bytes for each size i in MB, shard 0 one value (round trips).
struct bulk_sinks {
  bulk::server srv;
  std::vector<caf::actor> sinks;
  std::uint16_t port = 0;
  explicit bulk_sinks(caf::actor_system& sys) : srv(sys, "bench", std::chrono::seconds(30)) {
    auto p = srv.listen("127.0.0.1", 0);
    if (!p) return;
    port = *p;
    std::vector<std::size_t> all{0};
    all.insert(all.end(), wire_sizes_mb.begin(), wire_sizes_mb.end());
    for (auto mb : all) {
      auto floats = mb == 0 ? std::int64_t{1} : static_cast<std::int64_t>((mb << 20) / 4);
      shard_actor s = sys.spawn(sink_shard, floats);
      sinks.push_back(caf::actor_cast<caf::actor>(s));
      srv.serve(static_cast<std::int32_t>(mb), s, floats);
    }
  }
  ~bulk_sinks() {
    srv.stop();
    for (auto& s : sinks) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
};

int run_server(int out_fd, const tls_options& tls) {
  asio::io_context io;
  tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  published_server plain{cluster_options{}};
  bulk_sinks bulk{*plain.sys};
  std::unique_ptr<published_server> secure;
  if (tls.enabled()) {
    cluster_options o;
    o.tls = tls;
    secure = std::make_unique<published_server>(o);
  }
  if (plain.port == 0 || (secure && secure->port == 0) || bulk.port == 0) return 1;
  std::uint16_t ports[4] = {acc.local_endpoint().port(), plain.port,
                            secure ? secure->port : std::uint16_t{0}, bulk.port};
  if (::write(out_fd, ports, sizeof ports) != sizeof ports) return 1;
  ::close(out_fd);
  tcp::socket sock(io);
  acc.accept(sock);
  sock.set_option(tcp::no_delay(true));
  serve_raw(std::move(sock));
  // The client measures the bulk channel before it stops the CAF server.
  caf::scoped_actor self{*plain.sys};
  self->wait_for(plain.srv);
  return 0;
}
}  // namespace

server_process start_server(const tls_options& tls) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("bench wire: pipe failed");
  server_process sp;
  sp.pid = ::fork();
  if (sp.pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the measuring process
    ::close(fds[0]);
    ::_exit(run_server(fds[1], tls));
  }
  ::close(fds[1]);
  if (::read(fds[0], sp.ports, sizeof sp.ports) != sizeof sp.ports) {
    ::kill(sp.pid, SIGKILL);
    ::waitpid(sp.pid, nullptr, 0);
    throw std::runtime_error("bench wire: the server process did not start");
  }
  ::close(fds[0]);
  return sp;
}

}  // namespace actrain
