#include "bench/bench_wire.hpp"

#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <boost/asio.hpp>

#include <actrain/cluster.hpp>
#include "bench/doc_section.hpp"
#include "bench/median.hpp"
#include "bench/wire_server.hpp"
#include "cluster/bulk.hpp"
#include "cluster/chunking.hpp"
#include "cluster/transport.hpp"

namespace actrain {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clk = std::chrono::steady_clock;

template <class F>
double time_s(F f) {
  auto t0 = clk::now();
  f();
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// -- the client (this process) ------------------------------------------------------------------

struct row {
  std::string op;
  std::size_t mb;
  double raw_gbs, caf_gbs, chunked_gbs;
  double bulk_gbs = 0;
  double raw_beside_gbs = 0;  ///< raw TCP again, each repetition right before the bulk one
};

struct sweep_point {
  std::size_t mib;
  int window;
  double gbs;
};

/// Raw TCP to the server process: push, pull and push_pull of each size, and one-byte round
/// trips. The socket stays open so that its round trips interleave with the CAF and bulk ones.
class raw_client {
 public:
  /// Connects to the raw peer on `port`; payloads up to `max_bytes`.
  raw_client(std::uint16_t port, std::size_t max_bytes) : sock_(io_), buf_(max_bytes, 1) {
    sock_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    sock_.set_option(tcp::no_delay(true));
  }
  ~raw_client() {
    char q = 'Q';
    boost::system::error_code ec;
    asio::write(sock_, asio::buffer(&q, 1), ec);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  /// One push ('P'), pull ('L') or push_pull ('X') of n bytes. The op, its length and a push's
  /// bytes leave in one gathered write, as the bulk channel sends a header and its values with
  /// one sendmsg (three writes would send the op and the length as segments of their own, each
  /// waking the peer).
  void op(char op, std::uint64_t n) {
    std::array<asio::const_buffer, 3> parts{
        asio::buffer(&op, 1), asio::buffer(&n, sizeof n),
        asio::buffer(buf_.data(), op == 'P' || op == 'X' ? n : 0)};
    asio::write(sock_, parts, whole_rest);
    if (op == 'P')
      asio::read(sock_, asio::buffer(&op, 1));
    else
      asio::read(sock_, asio::buffer(buf_.data(), n), whole_rest);
  }
  /// Seconds of one one-byte round trip.
  double round_trip() {
    char op = 'R';
    return time_s([&] {
      asio::write(sock_, asio::buffer(&op, 1));
      asio::read(sock_, asio::buffer(&op, 1));
    });
  }

 private:
  asio::io_context io_;
  tcp::socket sock_;
  std::vector<char> buf_;
};

/// Raw TCP: push, pull and push_pull of each size (one row each).
void measure_raw(raw_client& raw, int reps, std::vector<row>& rows) {
  for (auto mb : wire_sizes_mb) {
    std::uint64_t n = mb << 20;
    for (auto [op, name] : {std::pair{'P', "push"}, {'L', "pull"}, {'X', "push_pull"}}) {
      std::vector<double> t;
      raw.op(op, n);  // warm-up
      for (int r = 0; r < reps; ++r) t.push_back(time_s([&] { raw.op(op, n); }));
      rows.push_back({name, mb, (op == 'X' ? 2.0 : 1.0) * n / median(t) / 1e9, 0, 0});
    }
  }
}

/// Median small-message round trips in seconds, measured in turn in one loop so that every
/// path sees the same moments of this shared machine.
struct round_trips {
  double raw = 0, caf = 0, bulk = 0;
  double bulk_blocking = 0;  ///< the bulk channel's pull from a blocking (scoped) actor
};

using time_pull_atom = caf::atom_constant<caf::atom("timepull")>;

/// A worker's side of the small round trip: an actor on the scheduler, as a worker node's worker
/// is, that times one one-value pull through `to` per request, from sending it to the handler of
/// its answer (run by the reader thread that received it, as the worker's next step is), and
/// answers with the seconds.
caf::behavior pull_timer(caf::event_based_actor* self, shard_actor to) {
  return {[self, to](time_pull_atom) -> caf::result<double> {
    auto rp = self->make_response_promise<double>();
    auto t0 = clk::now();
    self->request(to, caf::infinite, pull_atom::value, pull_request{0, 0})
        .then(
            [rp, t0](weights&) mutable {
              rp.deliver(std::chrono::duration<double>(clk::now() - t0).count());
            },
            [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
    return rp;
  }};
}

/// The CAF side: a scoped actor talking to the server process's wire_server.
struct caf_client {
  caf::scoped_actor& self;
  caf::actor srv;
  int reps;

  [[noreturn]] static void fail(caf::error& e) {
    throw std::runtime_error("bench wire: " + describe_error(e));
  }
  /// One request to the server; one handler per reply type (a handler that matches nothing
  /// would wait for the timeout).
  template <class OnReply, class... Ts>
  void call(OnReply on_reply, Ts... xs) {
    self->request(srv, std::chrono::seconds(30), xs...).receive(on_reply, [](caf::error& e) {
      fail(e);
    });
  }
  /// A shard_gateway in front of a sink shard of `floats` values, there.
  chunked_shard_actor gateway_for(std::int64_t floats, const chunk_options& o) {
    chunked_shard_actor g;
    self->request(srv, std::chrono::seconds(30), caf::get_atom::value, floats,
                  static_cast<std::int64_t>(o.chunk_bytes), static_cast<std::int32_t>(o.window))
        .receive([&](chunked_shard_actor& x) { g = std::move(x); }, [](caf::error& e) { fail(e); });
    return g;
  }
  /// Median seconds of push (k = 0), pull (1) or push_pull (2) of `t` through `to`; with
  /// `beside`, that runs (timed, its median in *beside_s) right before each repetition.
  double time_op(const shard_actor& to, const tensor& t, int k,
                 const std::function<void()>& beside = {}, double* beside_s = nullptr) {
    gradient g{0, 0, 0, 64, t};
    auto on_error = [](caf::error& e) { fail(e); };
    auto once = [&] {
      if (k == 0)
        self->request(to, std::chrono::seconds(30), push_atom::value, g)
            .receive([](push_ack&) {}, on_error);
      else if (k == 1)
        self->request(to, std::chrono::seconds(30), pull_atom::value, pull_request{0, 0})
            .receive([](weights&) {}, on_error);
      else
        self->request(to, std::chrono::seconds(30), push_pull_atom::value, g)
            .receive([](weights&) {}, on_error);
    };
    once();
    std::vector<double> ts, bs;
    for (int r = 0; r < reps; ++r) {
      if (beside) bs.push_back(time_s(beside));
      ts.push_back(time_s(once));
    }
    if (beside_s && !bs.empty()) *beside_s = median(bs);
    return median(ts);
  }
};

tensor filled_tensor(std::int64_t floats) {
  return tensor(std::vector<float>(static_cast<std::size_t>(floats), 0.25f));
}

/// Each size as one BASP message to a plain actor (rows[].caf_gbs).
void measure_one_message(caf_client& c, std::vector<row>& rows) {
  auto got_size = [](std::int64_t) {};
  auto got_tensor = [](tensor&) {};
  std::size_t i = 0;
  for (auto mb : wire_sizes_mb) {
    auto floats = static_cast<std::int64_t>((mb << 20) / sizeof(float));
    auto t = filled_tensor(floats);
    for (int k = 0; k < 3; ++k, ++i) {
      auto once = [&] {
        if (k == 0)
          c.call(got_size, push_atom::value, t);
        else if (k == 1)
          c.call(got_tensor, pull_atom::value, floats);
        else
          c.call(got_tensor, push_pull_atom::value, t);
      };
      once();
      std::vector<double> ts;
      for (int r = 0; r < c.reps; ++r) ts.push_back(time_s(once));
      rows[i].caf_gbs = (k == 2 ? 2.0 : 1.0) * static_cast<double>(mb << 20) / median(ts) / 1e9;
    }
  }
}

/// The path training takes: a proxy here, chunks over BASP, a gateway in front of the shard
/// there (cluster/chunking.hpp), with the cluster defaults (rows[].chunked_gbs); then chunk
/// size x window (on both sides) for 64 MB push_pulls.
std::vector<sweep_point> measure_chunked(caf::actor_system& sys, caf_client& c,
                                         std::vector<row>& rows) {
  std::vector<caf::actor> proxies;
  std::size_t i = 0;
  for (auto mb : wire_sizes_mb) {
    auto floats = static_cast<std::int64_t>((mb << 20) / sizeof(float));
    auto t = filled_tensor(floats);
    shard_actor proxy = sys.spawn(shard_proxy, c.gateway_for(floats, chunk_options{}), floats,
                                  chunk_options{}, caf::actor{});
    proxies.push_back(caf::actor_cast<caf::actor>(proxy));
    for (int k = 0; k < 3; ++k, ++i)
      rows[i].chunked_gbs =
          (k == 2 ? 2.0 : 1.0) * static_cast<double>(mb << 20) / c.time_op(proxy, t, k) / 1e9;
  }
  std::vector<sweep_point> sweep;
  auto floats64 = static_cast<std::int64_t>((64u << 20) / sizeof(float));
  auto t64 = filled_tensor(floats64);
  for (auto [mib, window] :
       {std::pair<std::size_t, int>{1, 2}, {1, 4}, {2, 2}, {2, 4}, {4, 2}, {4, 4}, {8, 2}}) {
    chunk_options o;
    o.chunk_bytes = mib << 20;
    o.window = window;
    shard_actor proxy =
        sys.spawn(shard_proxy, c.gateway_for(floats64, o), floats64, o, caf::actor{});
    proxies.push_back(caf::actor_cast<caf::actor>(proxy));
    sweep.push_back(
        {mib, window, 2.0 * static_cast<double>(64u << 20) / c.time_op(proxy, t64, 2) / 1e9});
  }
  for (auto& p : proxies) c.self->send_exit(p, caf::exit_reason::user_shutdown);
  return sweep;
}

caf::actor connect_server(caf::actor_system& sys, std::uint16_t port) {
  auto c = net::connect(sys, "127.0.0.1", port, clk::now() + std::chrono::seconds(10), false);
  if (c.failure != net::connect_failure::none || !c.published)
    throw std::runtime_error("bench wire: " + (c.message.empty() ? "no server" : c.message));
  return caf::actor_cast<caf::actor>(c.published);
}

/// Median small-message round trip in seconds.
double round_trip(caf_client& c) {
  std::vector<double> ts;
  auto got_tick = [](std::int32_t) {};
  for (int r = 0; r < 2000; ++r) ts.push_back(time_s([&] { c.call(got_tick, tick_atom::value); }));
  return median(ts);
}

/// The bulk channel (cluster/bulk.hpp): a bulk proxy here, the sink shards there
/// (rows[].bulk_gbs); then the small round trips, in turn: raw TCP, a CAF message, and a
/// one-value pull through the bulk channel with no timeout, as workers send theirs (a request
/// timeout would wake CAF's clock thread twice per request).
round_trips measure_bulk(caf::actor_system& sys, caf_client& c, raw_client& raw, std::uint16_t port,
                         std::vector<row>& rows) {
  bulk::endpoint at;
  at.host = "127.0.0.1";
  at.port = port;
  at.token = "bench";
  at.name = "bench wire";
  std::vector<caf::actor> proxies;
  auto proxy_for = [&](std::size_t mb, std::int64_t floats) {
    auto p = bulk::spawn_proxy(sys, at, static_cast<std::int32_t>(mb), floats, shard_actor{},
                               caf::actor{});
    if (!p) throw std::runtime_error("bench wire: " + describe_error(p.error()));
    proxies.push_back(caf::actor_cast<caf::actor>(*p));
    return *p;
  };
  std::size_t i = 0;
  for (auto mb : wire_sizes_mb) {
    auto floats = static_cast<std::int64_t>((mb << 20) / sizeof(float));
    auto t = filled_tensor(floats);
    auto proxy = proxy_for(mb, floats);
    for (int k = 0; k < 3; ++k, ++i) {
      // Raw TCP's same operation right before each repetition: the ratio compares moments alike.
      const char op = "PLX"[k];
      const double bytes = (k == 2 ? 2.0 : 1.0) * static_cast<double>(mb << 20);
      double raw_s = 0;
      auto bulk_s = c.time_op(
          proxy, t, k, [&] { raw.op(op, mb << 20); }, &raw_s);
      rows[i].bulk_gbs = bytes / bulk_s / 1e9;
      rows[i].raw_beside_gbs = bytes / raw_s / 1e9;
    }
  }
  auto tiny = proxy_for(0, 1);
  auto timer = sys.spawn(pull_timer, tiny);
  std::vector<double> raw_ts, caf_ts, bulk_ts, blocking_ts;
  auto got_tick = [](std::int32_t) {};
  auto fail = [](caf::error& e) { caf_client::fail(e); };
  for (int r = 0; r < 2000; ++r) {
    raw_ts.push_back(raw.round_trip());
    caf_ts.push_back(time_s([&] { c.call(got_tick, tick_atom::value); }));
    c.self->request(timer, caf::infinite, time_pull_atom::value)
        .receive([&](double seconds) { bulk_ts.push_back(seconds); }, fail);
    blocking_ts.push_back(time_s([&] {
      c.self->request(tiny, caf::infinite, pull_atom::value, pull_request{0, 0})
          .receive([](weights&) {}, fail);
    }));
  }
  c.self->send_exit(timer, caf::exit_reason::user_shutdown);
  for (auto& p : proxies) c.self->send_exit(p, caf::exit_reason::user_shutdown);
  return {median(raw_ts), median(caf_ts), median(bulk_ts), median(blocking_ts)};
}

/// Everything through CAF, then the bulk channel; returns the small-message round trips.
round_trips measure_caf(raw_client& raw, std::uint16_t port, std::uint16_t bulk_port, int reps,
                        std::vector<row>& rows, std::vector<sweep_point>& sweep) {
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg, cluster_options{});
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  caf_client c{self, connect_server(sys, port), reps};
  measure_one_message(c, rows);
  sweep = measure_chunked(sys, c, rows);
  auto rtts = measure_bulk(sys, c, raw, bulk_port, rows);
  self->send(c.srv, stop_atom::value);
  return rtts;
}

/// push_pull of each size through the training path (proxy, chunks, gateway) over TLS, and the
/// small round trip; the same measurement as the plain rows, from a TLS actor system to a TLS
/// server with the same certificates' CA.
struct tls_figures {
  std::vector<double> push_pull_gbs;  ///< per wire_sizes_mb
  double rtt = 0;
};

tls_figures measure_tls(std::uint16_t port, int reps, const tls_options& tls) {
  caf::actor_system_config cfg;
  cluster_options o;
  o.tls = tls;
  prepare_cluster_config(cfg, o);
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  caf_client c{self, connect_server(sys, port), reps};
  tls_figures out;
  std::vector<caf::actor> proxies;
  for (auto mb : wire_sizes_mb) {
    auto floats = static_cast<std::int64_t>((mb << 20) / sizeof(float));
    shard_actor proxy = sys.spawn(shard_proxy, c.gateway_for(floats, chunk_options{}), floats,
                                  chunk_options{}, caf::actor{});
    proxies.push_back(caf::actor_cast<caf::actor>(proxy));
    out.push_pull_gbs.push_back(2.0 * static_cast<double>(mb << 20) /
                                c.time_op(proxy, filled_tensor(floats), 2) / 1e9);
  }
  for (auto& p : proxies) self->send_exit(p, caf::exit_reason::user_shutdown);
  out.rtt = round_trip(c);
  self->send(c.srv, stop_atom::value);
  return out;
}

/// Certificates for the TLS rows: `dir` when given (scripts/make-certs.sh DIR bench), else made
/// in a fresh temp folder with scripts/make-certs.sh (run from the repository root). Empty
/// options (no TLS rows) when neither works, with the reason on stderr.
tls_options bench_certificates(std::string dir) {
  if (dir.empty()) {
    std::string tmpl = "/tmp/actrain_bench_wire_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return {};
    dir = tmpl;
    // posix_spawn, not Boost.Process: its v1 needs the compiled Boost.Filesystem library,
    // which nothing else here links.
    std::vector<std::string> args{"/bin/bash", "scripts/make-certs.sh", dir, "bench"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    int status = -1;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0 ||
        ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::cerr << "bench wire: scripts/make-certs.sh failed (run from the repository root, or "
                   "give --tls-certs DIR); no TLS rows\n";
      return {};
    }
  }
  tls_options t{dir + "/bench.pem", dir + "/bench.key", dir + "/ca.pem"};
  try {
    validate(t);
  } catch (const std::exception& e) {
    std::cerr << "bench wire: " << e.what() << "; no TLS rows\n";
    return {};
  }
  return t;
}

std::string wire_report(int reps, const std::vector<row>& rows,
                        const std::vector<sweep_point>& sweep, const round_trips& rtt,
                        const tls_figures* tls) {
  const double raw_rtt = rtt.raw, caf_rtt = rtt.caf, bulk_rtt = rtt.bulk;
  std::ostringstream md;
  md << std::fixed << std::setprecision(2);
  md << "`actrain bench wire` (two processes on 127.0.0.1 sharing this machine's "
     << std::thread::hardware_concurrency() << " cores, medians of " << reps
     << " runs). Raw TCP: Boost.Asio sockets in the same two processes, same sizes and pattern. "
        "CAF one message: the tensor as a single BASP message to a plain actor. actrain: the path "
        "training takes across nodes, a shard_proxy here and a shard_gateway in front of a shard "
        "there (cluster/chunking.hpp) with the cluster defaults (slices above "
     << (chunk_options{}.chunk_bytes >> 20) << " MiB as chunks of that size, "
     << chunk_options{}.window
     << " in flight; middleman.workers=0, moderate-poll-attempts=0); the shard there only moves "
        "bytes, as the raw TCP peer does. Bulk channel: the path training takes across nodes "
        "since [cluster] bulk-channel (the default): a bulk proxy here, its own TCP connection, "
        "a thread there that asks the shard (cluster/bulk.hpp); each of its repetitions runs "
        "right after one of raw TCP's, whose median the next column shows and its ratio "
        "divides by.\n\n"
     << "| op | size | raw TCP GB/s | CAF one message GB/s | actrain over BASP GB/s | BASP / raw "
        "TCP | actrain bulk channel GB/s | raw TCP in turn with it GB/s | bulk / raw TCP in turn "
        "|\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (auto& r : rows)
    md << "| " << r.op << " | " << r.mb << " MB | " << r.raw_gbs << " | " << r.caf_gbs << " | "
       << r.chunked_gbs << " | " << r.chunked_gbs / r.raw_gbs << " | " << r.bulk_gbs << " | "
       << r.raw_beside_gbs << " | " << r.bulk_gbs / r.raw_beside_gbs << " |\n";
  md << "\n64 MB push_pull through proxy and gateway, by chunk size x window (GB/s): ";
  for (std::size_t k = 0; k < sweep.size(); ++k)
    md << (k ? ", " : "") << sweep[k].mib << " MiB x " << sweep[k].window << ": " << sweep[k].gbs;
  md << ".\n"
     << std::setprecision(1)
     << "Small-message round trip (medians of 2000, measured in turn in one loop): raw TCP "
     << raw_rtt * 1e6 << " us, CAF " << caf_rtt * 1e6
     << " us, bulk channel (a one-value pull from an actor on the scheduler, as a worker sends "
        "it: its answer's handler runs on the reader thread) "
     << bulk_rtt * 1e6 << " us (" << std::setprecision(2) << bulk_rtt / raw_rtt
     << "x raw TCP); the same pull from a blocking scoped actor, which the reader has to wake, "
     << std::setprecision(1) << rtt.bulk_blocking * 1e6 << " us (" << std::setprecision(2)
     << rtt.bulk_blocking / raw_rtt << "x).\n";
  if (tls) {
    md << "\nTLS (CAF's OpenSSL module, mutual authentication, EC P-256 certificates from "
          "scripts/make-certs.sh): the same push_pull through proxy and gateway, measured in the "
          "same run between the same two processes, each side one TLS actor system.\n\n"
       << "| op | size | actrain GB/s | actrain over TLS GB/s | TLS / plain |\n"
       << "| --- | --- | --- | --- | --- |\n"
       << std::setprecision(2);
    std::size_t k = 0;
    for (auto& r : rows)
      if (r.op == "push_pull") {
        md << "| push_pull | " << r.mb << " MB | " << r.chunked_gbs << " | "
           << tls->push_pull_gbs[k] << " | " << tls->push_pull_gbs[k] / r.chunked_gbs << " |\n";
        ++k;
      }
    md << std::setprecision(1) << "\nSmall-message round trip over TLS: " << tls->rtt * 1e6
       << " us (plain CAF " << caf_rtt * 1e6 << " us).\n";
  }
  return md.str();
}

}  // namespace

struct raw_tcp_peer::impl {
  std::uint64_t bytes = 0;
  pid_t pid = -1;
  std::unique_ptr<raw_client> raw;  ///< says 'Q' when it goes
};

raw_tcp_peer::raw_tcp_peer(std::uint64_t bytes) : impl_(std::make_unique<impl>()) {
  impl_->bytes = bytes;
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("raw tcp: pipe failed");
  auto pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(fds[0]);
    asio::io_context io;
    tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    std::uint16_t port = acc.local_endpoint().port();
    if (::write(fds[1], &port, sizeof port) != sizeof port) ::_exit(1);
    ::close(fds[1]);
    auto sock = acc.accept();
    sock.set_option(tcp::no_delay(true));
    try {
      serve_raw(std::move(sock));
    } catch (const std::exception&) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::uint16_t port = 0;
  if (::read(fds[0], &port, sizeof port) != sizeof port) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(fds[0]);
    throw std::runtime_error("raw tcp: the peer process did not start");
  }
  ::close(fds[0]);
  impl_->pid = pid;
  try {
    impl_->raw = std::make_unique<raw_client>(port, bytes);
  } catch (...) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw;
  }
}

raw_tcp_peer::~raw_tcp_peer() {
  impl_->raw.reset();
  ::waitpid(impl_->pid, nullptr, 0);
}

double raw_tcp_peer::push_pull_seconds(int reps) {
  auto push_pull = [&] { impl_->raw->op('X', impl_->bytes); };
  push_pull();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(time_s(push_pull));
  return median(t);
}

int bench_wire(const std::vector<std::string>& args) {
  int reps = 5;
  std::string certs;
  bool with_tls = true, doc = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    bool has_value = i + 1 < args.size();
    try {
      if (args[i] == "--reps" && has_value)
        reps = std::max(1, std::stoi(args[++i]));
      else if (args[i] == "--tls-certs" && has_value)
        certs = args[++i];
      else if (args[i] == "--no-tls")
        with_tls = false;
      else if (args[i] == "--no-doc")
        doc = false;
      else
        throw std::invalid_argument(args[i]);
    } catch (const std::exception&) {
      std::cerr << "actrain bench wire: unknown option or bad value '" << args[i]
                << "' (--reps N, --tls-certs DIR, --no-tls, --no-doc)\n";
      return 2;
    }
  }
  auto tls = with_tls ? bench_certificates(certs) : tls_options{};
  auto server = start_server(tls);
  std::vector<row> rows;
  std::vector<sweep_point> sweep;
  round_trips rtts;
  {
    raw_client raw(server.ports[0], wire_sizes_mb.back() << 20);
    measure_raw(raw, reps, rows);
    rtts = measure_caf(raw, server.ports[1], server.ports[3], reps, rows, sweep);
  }
  std::optional<tls_figures> tls_rows;
  if (server.ports[2] != 0) tls_rows = measure_tls(server.ports[2], reps, tls);
  int status = 0;
  ::waitpid(server.pid, &status, 0);
  auto md = wire_report(reps, rows, sweep, rtts, tls_rows ? &*tls_rows : nullptr);
  std::cout << md;
  if (doc) update_doc_section(benchmarks_doc_path(), "wire", md);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace actrain
