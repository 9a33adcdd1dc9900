#include "apps/bench_wire.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <boost/asio.hpp>

#include "actors/cluster.hpp"
#include "apps/doc_section.hpp"

namespace actrain {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clk = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_s(F f) {
  auto t0 = clk::now();
  f();
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// -- the server process -------------------------------------------------------------------------

/// Raw TCP peer: op byte + 8-byte size; 'P' read size, ack 1 byte; 'L' write size; 'X' read then
/// write size; 'R' 1-byte echo; 'Q' quit.
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
    if (op == 'P' || op == 'X') asio::read(sock, asio::buffer(buf.data(), n));
    if (op == 'P')
      asio::write(sock, asio::buffer(&op, 1));
    else
      asio::write(sock, asio::buffer(buf.data(), n));
  }
}

caf::behavior wire_server(caf::event_based_actor* self) {
  auto cache = std::make_shared<tensor>();
  return {
      [](push_atom, const tensor& t) { return static_cast<std::int64_t>(t.size()); },
      [cache](pull_atom, std::int64_t n) {
        if (static_cast<std::int64_t>(cache->size()) != n)
          *cache = tensor(std::vector<float>(static_cast<std::size_t>(n), 0.5f));
        return *cache;
      },
      [](push_pull_atom, const tensor& t) { return t; },
      [](tick_atom) { return std::int32_t{1}; },
      [self](stop_atom) { self->quit(); },
  };
}

int run_server(int out_fd) {
  asio::io_context io;
  tcp::acceptor acc(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg, cluster_options{});
  caf::actor_system sys{cfg};
  auto srv = sys.spawn(wire_server);
  auto port = sys.middleman().publish(srv, 0, "127.0.0.1", true);
  if (!port) return 1;
  std::uint16_t ports[2] = {acc.local_endpoint().port(), *port};
  if (::write(out_fd, ports, sizeof ports) != sizeof ports) return 1;
  ::close(out_fd);
  tcp::socket sock(io);
  acc.accept(sock);
  sock.set_option(tcp::no_delay(true));
  serve_raw(std::move(sock));
  caf::scoped_actor self{sys};
  self->wait_for(srv);  // the client sends stop when done
  sys.middleman().unpublish(srv, *port);
  return 0;
}

// -- the client (this process) ------------------------------------------------------------------

struct row {
  std::string op;
  std::size_t mb;
  double raw_gbs, caf_gbs;
};

}  // namespace

int bench_wire(const std::vector<std::string>& args) {
  int reps = 5;
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--reps") reps = std::max(1, std::stoi(args[i + 1]));
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("bench wire: pipe failed");
  // Fork before any thread exists; the child is the second process of the measurement.
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the measuring process
    ::close(fds[0]);
    ::_exit(run_server(fds[1]));
  }
  ::close(fds[1]);
  std::uint16_t ports[2] = {0, 0};
  if (::read(fds[0], ports, sizeof ports) != sizeof ports) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("bench wire: the server process did not start");
  }
  ::close(fds[0]);
  std::vector<std::size_t> sizes_mb{1, 16, 64};
  std::vector<row> rows;
  double raw_rtt = 0, caf_rtt = 0, chunked_gbs = 0;
  {
    asio::io_context io;
    tcp::socket sock(io);
    sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), ports[0]));
    sock.set_option(tcp::no_delay(true));
    std::vector<char> buf(64u << 20, 1);
    auto raw = [&](char op, std::uint64_t n) {
      asio::write(sock, asio::buffer(&op, 1));
      asio::write(sock, asio::buffer(&n, sizeof n));
      if (op == 'P' || op == 'X') asio::write(sock, asio::buffer(buf.data(), n));
      if (op == 'P')
        asio::read(sock, asio::buffer(&op, 1));
      else
        asio::read(sock, asio::buffer(buf.data(), n));
    };
    for (auto mb : sizes_mb) {
      std::uint64_t n = mb << 20;
      for (auto [op, name] : {std::pair{'P', "push"}, {'L', "pull"}, {'X', "push_pull"}}) {
        std::vector<double> t;
        raw(op, n);  // warm-up
        for (int r = 0; r < reps; ++r) t.push_back(time_s([&] { raw(op, n); }));
        rows.push_back({name, mb, (op == 'X' ? 2.0 : 1.0) * n / median(t) / 1e9, 0});
      }
    }
    std::vector<double> t;
    for (int r = 0; r < 2000; ++r) {
      char op = 'R';
      t.push_back(time_s([&] {
        asio::write(sock, asio::buffer(&op, 1));
        asio::read(sock, asio::buffer(&op, 1));
      }));
    }
    raw_rtt = median(t);
    char q = 'Q';
    asio::write(sock, asio::buffer(&q, 1));
  }
  {
    caf::actor_system_config cfg;
    prepare_cluster_config(cfg, cluster_options{});
    caf::actor_system sys{cfg};
    auto srv = sys.middleman().remote_actor("127.0.0.1", ports[1]);
    if (!srv) throw std::runtime_error("bench wire: " + sys.render(srv.error()));
    caf::scoped_actor self{sys};
    auto fail = [](caf::error& e) { throw std::runtime_error("bench wire: " + describe_error(e)); };
    // One handler per reply type: a handler that matches nothing would wait for the timeout.
    auto call = [&](auto on_reply, auto... xs) {
      self->request(*srv, std::chrono::seconds(30), xs...).receive(on_reply, fail);
    };
    auto got_size = [](std::int64_t) {};
    auto got_tensor = [](tensor&) {};
    auto got_tick = [](std::int32_t) {};
    std::size_t i = 0;
    for (auto mb : sizes_mb) {
      auto floats = static_cast<std::int64_t>((mb << 20) / sizeof(float));
      tensor t(std::vector<float>(static_cast<std::size_t>(floats), 0.25f));
      for (int k = 0; k < 3; ++k, ++i) {
        std::vector<double> ts;
        auto once = [&] {
          if (k == 0)
            call(got_size, push_atom::value, t);
          else if (k == 1)
            call(got_tensor, pull_atom::value, floats);
          else
            call(got_tensor, push_pull_atom::value, t);
        };
        once();
        for (int r = 0; r < reps; ++r) ts.push_back(time_s(once));
        rows[i].caf_gbs = (k == 2 ? 2.0 : 1.0) * static_cast<double>(mb << 20) / median(ts) / 1e9;
      }
    }
    // 64 MB as 16 chunks of 4 MiB, 2 requests in flight (the chunking CAF-NOTES.md suggests).
    std::vector<tensor> chunks(16, tensor(std::vector<float>((4u << 20) / sizeof(float), 0.25f)));
    std::vector<double> ts;
    for (int r = 0; r <= reps; ++r) {
      auto s = time_s([&] {
        std::deque<decltype(self->request(*srv, std::chrono::seconds(30), push_atom::value,
                                          chunks[0]))>
            inflight;
        for (auto& c : chunks) {
          inflight.push_back(self->request(*srv, std::chrono::seconds(30), push_atom::value, c));
          if (inflight.size() == 2) {
            inflight.front().receive([](std::int64_t) {}, [](caf::error&) {});
            inflight.pop_front();
          }
        }
        while (!inflight.empty()) {
          inflight.front().receive([](std::int64_t) {}, [](caf::error&) {});
          inflight.pop_front();
        }
      });
      if (r > 0) ts.push_back(s);
    }
    chunked_gbs = static_cast<double>(64u << 20) / median(ts) / 1e9;
    ts.clear();
    for (int r = 0; r < 2000; ++r) ts.push_back(time_s([&] { call(got_tick, tick_atom::value); }));
    caf_rtt = median(ts);
    self->send(*srv, stop_atom::value);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ostringstream md;
  md << std::fixed << std::setprecision(2);
  md << "`actrain bench wire` (two processes on 127.0.0.1, medians of " << reps
     << " runs; raw TCP = Boost.Asio sockets in the same two processes, same pattern; CAF = "
        "BASP with the cluster defaults: middleman.workers=0, moderate-poll-attempts=0)\n\n"
     << "| op | size | raw TCP GB/s | CAF GB/s | ratio |\n| --- | --- | --- | --- | --- |\n";
  for (auto& r : rows)
    md << "| " << r.op << " | " << r.mb << " MB | " << r.raw_gbs << " | " << r.caf_gbs << " | "
       << r.caf_gbs / r.raw_gbs << " |\n";
  md << "\n64 MB push as 16 chunks of 4 MiB, 2 in flight: " << chunked_gbs << " GB/s (vs "
     << rows[6].caf_gbs << " GB/s as one message).\n"
     << std::setprecision(1) << "Small-message round trip: raw TCP " << raw_rtt * 1e6 << " us, CAF "
     << caf_rtt * 1e6 << " us.\n";
  std::cout << md.str();
  update_doc_section(benchmarks_doc_path(), "wire", md.str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace actrain
