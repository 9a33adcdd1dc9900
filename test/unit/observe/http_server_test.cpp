// The HTTP endpoint on 127.0.0.1 port 0, spoken to over raw sockets with timeouts.
#include "observe/http_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "observe/dashboard.hpp"
#include "synthetic_run.hpp"

namespace actrain::observe {
namespace {

using testing::http_get;
using testing::parse_response;
using testing::raw_exchange;

class http_endpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    hub_.update([](run_snapshot& s) { s = testing::synthetic_snapshot(12); });
    server_.start();
    ASSERT_NE(server_.port(), 0);
  }
  metrics_hub hub_;
  http_server server_{hub_};
};

TEST_F(http_endpoint, serves_metrics_status_and_page) {
  const auto m = http_get(server_.port(), "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.header("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u)
      << m.header("Content-Type");
  EXPECT_NE(m.body.find("\nactrain_samples_per_second 1280\n"), std::string::npos);
  EXPECT_NE(m.body.find("actrain_staleness_bucket{le=\"+Inf\"} 18\n"), std::string::npos);

  const auto s = http_get(server_.port(), "/status");
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.header("Content-Type"), "application/json");
  const auto j = nlohmann::json::parse(s.body);
  EXPECT_EQ(j.at("job"), "fmnist-mlp");
  EXPECT_EQ(j.at("workers").size(), 3u);
  EXPECT_EQ(j.at("curve").at("seconds").size(), 12u);

  const auto p = http_get(server_.port(), "/");
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.header("Content-Type").rfind("text/html", 0), 0u);
  EXPECT_EQ(p.body, dashboard_html());
  for (const char* id : {"id=\"loss-plot\"", "id=\"accuracy-plot\"", "id=\"throughput-plot\"",
                         "id=\"workers-table\"", "id=\"shards-table\"", "id=\"stalls\""})
    EXPECT_NE(p.body.find(id), std::string::npos) << id;
  // Self-contained: nothing fetched from elsewhere.
  EXPECT_EQ(p.body.find("http://"), p.body.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(p.body.find("https://"), std::string::npos);
  EXPECT_EQ(p.body.find("src="), std::string::npos);
}

TEST_F(http_endpoint, unknown_path_404_other_method_405_query_ignored) {
  EXPECT_EQ(http_get(server_.port(), "/nope").status, 404);
  const auto post = http_get(server_.port(), "/metrics", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.header("Allow"), "GET");
  EXPECT_EQ(http_get(server_.port(), "/status", "DELETE").status, 405);
  EXPECT_EQ(http_get(server_.port(), "/status?x=1").status, 200);
}

TEST_F(http_endpoint, bad_requests_get_4xx) {
  EXPECT_EQ(parse_response(raw_exchange(server_.port(), "GARBAGE\r\n\r\n")).status, 400);
  EXPECT_EQ(parse_response(raw_exchange(server_.port(), "GET / HTTP/9\r\n\r\n")).status, 400);
  EXPECT_EQ(
      parse_response(raw_exchange(server_.port(), "GET / HTTP/1.1\r\nBad Header\r\n\r\n")).status,
      400);
  const std::string huge = "GET / HTTP/1.1\r\nX: " + std::string(100 * 1024, 'a') + "\r\n\r\n";
  EXPECT_EQ(parse_response(raw_exchange(server_.port(), huge)).status, 431);
  const std::string big_body = "POST /status HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n";
  EXPECT_EQ(parse_response(raw_exchange(server_.port(), big_body)).status, 413);
}

TEST_F(http_endpoint, keep_alive_serves_several_requests_on_one_connection) {
  const std::string two =
      "GET /status HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  const auto raw = raw_exchange(server_.port(), two);
  std::size_t n = 0;
  for (auto p = raw.find("HTTP/1.1 200"); p != std::string::npos;
       p = raw.find("HTTP/1.1 200", p + 1))
    ++n;
  EXPECT_EQ(n, 2u);
}

TEST_F(http_endpoint, a_silent_client_does_not_block_others) {
  const int idle = testing::connect_local(server_.port());
  ASSERT_GE(idle, 0);
  EXPECT_EQ(http_get(server_.port(), "/status").status, 200);
  ::close(idle);
}

TEST_F(http_endpoint, survives_1000_garbage_payloads_while_the_hub_changes) {
  std::atomic<bool> done{false};
  std::thread feeder([&] {
    // Bounded: stops at the flag or after many updates, whichever comes first.
    for (int i = 0; i < 1000000 && !done.load(); ++i)
      hub_.update([i](run_snapshot& s) {
        s.step = i;
        if (s.curve.size() < 2000) s.curve.push_back(testing::synthetic_point(i));
      });
  });
  std::mt19937 rng(42);
  const std::vector<std::string> prefixes{
      "",
      "GET ",
      "GET / HTTP/1.1\r\n",
      "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
      "GET /status HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
      "\r\n\r\n",
      "GET /\x01\x02 HTTP/1.1\r\n\r\n",
      "PUT / HTTP/1.0\r\nContent-Length: -1\r\n\r\n"};
  int answered_4xx = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string payload = prefixes[rng() % prefixes.size()];
    const std::size_t n = rng() % (i % 50 == 0 ? 70000 : 600);
    for (std::size_t k = 0; k < n; ++k) payload += static_cast<char>(rng() % 256);
    if (rng() % 2) payload += "\r\n\r\n";
    const auto r = parse_response(raw_exchange(server_.port(), payload, 5));
    if (r.status >= 400 && r.status < 500) ++answered_4xx;
    EXPECT_TRUE(r.status == 0 || (r.status >= 200 && r.status < 500)) << r.status;
  }
  done = true;
  feeder.join();
  EXPECT_GT(answered_4xx, 100);
  EXPECT_GE(server_.connections_accepted(), 1000u);
  const auto s = http_get(server_.port(), "/status");
  ASSERT_EQ(s.status, 200);
  EXPECT_NO_THROW(nlohmann::json::parse(s.body));
  EXPECT_EQ(http_get(server_.port(), "/metrics").status, 200);
}

TEST(http_server, stop_is_idempotent_and_frees_the_port) {
  metrics_hub hub;
  unsigned short port = 0;
  {
    http_server server(hub);
    server.start();
    port = server.port();
    EXPECT_EQ(http_get(port, "/status").status, 200);
    server.stop();
    server.stop();
    EXPECT_EQ(testing::connect_local(port, 1), -1);  // nobody listens any more
  }
  // The same port can be bound again at once.
  http_server again(hub, "127.0.0.1", port);
  again.start();
  EXPECT_EQ(again.port(), port);
  EXPECT_EQ(http_get(port, "/status").status, 200);
}

TEST(http_server, start_failure_names_the_address) {
  metrics_hub hub;
  http_server a(hub);
  a.start();
  http_server b(hub, "127.0.0.1", a.port());
  try {
    b.start();
    FAIL() << "second bind should fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(a.port())),
              std::string::npos)
        << e.what();
  }
  http_server c(hub, "not-a-host.invalid", 0);
  EXPECT_THROW(c.start(), std::runtime_error);
}

TEST(http_server, route_request_is_a_pure_function) {
  metrics_hub hub;
  EXPECT_EQ(route_request(hub, "GET", "/metrics").status, 200u);
  EXPECT_EQ(route_request(hub, "GET", "/index.html").status, 200u);
  EXPECT_EQ(route_request(hub, "HEAD", "/").status, 405u);
  EXPECT_EQ(route_request(hub, "GET", "/x").status, 404u);
  EXPECT_EQ(route_request(hub, "GET", "").status, 404u);
}

TEST(http_server, parse_http_address_accepts_forms_and_names_errors) {
  auto a = parse_http_address("0.0.0.0:9090");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 9090);
  a = parse_http_address("8080");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8080);
  a = parse_http_address("[::1]:0");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 0);
  for (const char* bad : {"", "host:", ":80", "h:70000", "h:12x", "[::1]80", "[::1"}) {
    try {
      parse_http_address(bad);
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--http"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace actrain::observe
