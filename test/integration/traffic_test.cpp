// Per-node traffic: the kernel's byte counts of this process's connections (a real loopback
// connection carrying a known number of bytes), the registrar's join of every node's connections
// into bytes per node and peer (closed form), and a 1 + 2 + 4 cluster of real `actrain node`
// processes whose /metrics and final summary show every node's bytes, matching the payload the
// workers count to within 5%. Every wait is bounded; every process started is stopped and reaped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster/traffic.hpp"
#include "synthetic_run.hpp"  // test/unit/observe: raw-socket HTTP client with timeouts
#include "test/support/processes.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

/// A connected loopback pair: {client, accepted} descriptors.
std::pair<int, int> loopback_pair() {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 1) ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on 127.0.0.1");
  int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("cannot connect");
  int server = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  return {client, server};
}

std::string local_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  char host[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
}

const socket_traffic* find_local(const std::vector<socket_traffic>& v, const std::string& local) {
  for (auto& s : v)
    if (s.local == local) return &s;
  return nullptr;
}

TEST(traffic_meter, counts_the_bytes_of_a_real_connection_and_keeps_them_after_it_closes) {
  auto [client, server] = loopback_pair();
  const std::string block(100000, 'x');
  std::size_t sent = 0;
  while (sent < block.size()) {
    auto n = ::send(client, block.data() + sent, block.size() - sent, 0);
    ASSERT_GT(n, 0);
    sent += static_cast<std::size_t>(n);
  }
  std::string got(block.size(), '\0');
  std::size_t read = 0;
  while (read < got.size()) {
    auto n = ::recv(server, &got[read], got.size() - read, 0);
    ASSERT_GT(n, 0);
    read += static_cast<std::size_t>(n);
  }
  ASSERT_EQ(::send(server, "0123456789", 10, 0), 10);
  char ten[10];
  std::size_t back = 0;
  while (back < 10) back += static_cast<std::size_t>(::recv(client, ten + back, 10 - back, 0));
  const auto client_at = local_of(client), server_at = local_of(server);
  net::traffic_meter meter;
  // Every byte was read at the other end, so both ends' kernels have counted it (bytes sent are
  // counted as they go out, not when acknowledged).
  auto v = meter.sample();
  auto* c = find_local(v, client_at);
  auto* s = find_local(v, server_at);
  ASSERT_TRUE(c && s);
  EXPECT_EQ(c->peer, server_at);
  EXPECT_EQ(c->bytes_sent, 100000);
  EXPECT_EQ(c->bytes_received, 10);
  EXPECT_EQ(s->bytes_received, 100000);
  EXPECT_EQ(s->bytes_sent, 10);
  ::close(client);
  ::close(server);
  v = meter.sample();
  c = find_local(v, client_at);
  ASSERT_TRUE(c) << "a closed connection keeps its last counts";
  EXPECT_EQ(c->bytes_sent, 100000);
}

TEST(traffic_meter, folds_the_oldest_closed_connections_and_keeps_the_totals) {
  net::traffic_meter meter(2);
  std::int64_t total = 0;
  for (int i = 0; i < 5; ++i) {
    auto [a, b] = loopback_pair();
    ASSERT_EQ(::send(a, "abcd", 4, 0), 4);
    char buf[4];
    std::size_t n = 0;
    while (n < 4) n += static_cast<std::size_t>(::recv(b, buf + n, 4 - n, 0));
    meter.sample();  // seen while open: its counts outlive it
    total += 4;
    ::close(a);
    ::close(b);
  }
  auto v = meter.sample();
  EXPECT_LE(v.size(), 3u) << "2 closed connections kept, the rest folded into one entry";
  std::int64_t sent = 0;
  for (auto& s : v) sent += s.bytes_sent;
  EXPECT_EQ(sent, total);
}

TEST(traffic_join, names_each_connection_s_peer_by_the_node_that_owns_its_far_end) {
  std::map<std::string, std::vector<socket_traffic>> by_node;
  // ps listens at :5000; two workers connect to it; worker-a also talks to something unknown.
  by_node["ps"] = {{"127.0.0.1:5000", "127.0.0.1:40001", 700, 100},
                   {"127.0.0.1:5000", "127.0.0.1:40002", 900, 300}};
  by_node["worker-a"] = {{"127.0.0.1:40001", "127.0.0.1:5000", 100, 700},
                         {"127.0.0.1:40003", "10.0.0.9:80", 5, 50}};
  by_node["worker-b"] = {{"127.0.0.1:40002", "127.0.0.1:5000", 300, 900}};
  auto nodes = net::join_traffic(by_node);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].node, "ps");
  EXPECT_EQ(nodes[0].bytes_sent, 1600);
  EXPECT_EQ(nodes[0].bytes_received, 400);
  ASSERT_EQ(nodes[0].peers.size(), 2u);
  EXPECT_EQ(nodes[0].peers[0].peer, "worker-a");
  EXPECT_EQ(nodes[0].peers[0].bytes_sent, 700);
  EXPECT_EQ(nodes[0].peers[1].peer, "worker-b");
  EXPECT_EQ(nodes[0].peers[1].bytes_received, 300);
  EXPECT_EQ(nodes[1].node, "worker-a");
  EXPECT_EQ(nodes[1].bytes_sent, 105);
  ASSERT_EQ(nodes[1].peers.size(), 2u);
  EXPECT_EQ(nodes[1].peers[0].peer, "other");
  EXPECT_EQ(nodes[1].peers[0].bytes_received, 50);
  EXPECT_EQ(nodes[1].peers[1].peer, "ps");
  EXPECT_EQ(nodes[1].peers[1].bytes_received, 700);
}

// Linux hands one ephemeral port to connections to different destinations: worker-a's link to
// ps-1 and worker-b's link to ps-2 both leave from :40001. Each ps must still name its own worker.
TEST(traffic_join, one_local_port_in_two_connections_names_each_by_both_ends) {
  std::map<std::string, std::vector<socket_traffic>> by_node;
  by_node["ps-1"] = {{"127.0.0.1:5001", "127.0.0.1:40001", 700, 100}};
  by_node["ps-2"] = {{"127.0.0.1:5002", "127.0.0.1:40001", 900, 300}};
  by_node["worker-a"] = {{"127.0.0.1:40001", "127.0.0.1:5001", 100, 700}};
  by_node["worker-b"] = {{"127.0.0.1:40001", "127.0.0.1:5002", 300, 900}};
  auto nodes = net::join_traffic(by_node);
  ASSERT_EQ(nodes.size(), 4u);
  ASSERT_EQ(nodes[0].peers.size(), 1u);
  EXPECT_EQ(nodes[0].peers[0].peer, "worker-a");
  EXPECT_EQ(nodes[0].peers[0].bytes_received, 100);
  ASSERT_EQ(nodes[1].peers.size(), 1u);
  EXPECT_EQ(nodes[1].peers[0].peer, "worker-b");
  EXPECT_EQ(nodes[1].peers[0].bytes_received, 300);
  ASSERT_EQ(nodes[3].peers.size(), 1u);
  EXPECT_EQ(nodes[3].peers[0].peer, "ps-2");
}

TEST(traffic_join, a_report_too_large_or_malformed_is_refused) {
  EXPECT_EQ(net::check_traffic_report({{"127.0.0.1:1", "127.0.0.1:2", 1, 2}}), "");
  std::vector<socket_traffic> many(1025, socket_traffic{"a", "b", 0, 0});
  EXPECT_NE(net::check_traffic_report(many).find("1025 connections"), std::string::npos);
  EXPECT_NE(net::check_traffic_report({{std::string(65, 'x'), "b", 0, 0}}).find("endpoint"),
            std::string::npos);
  EXPECT_NE(net::check_traffic_report({{"a", "b", -1, 0}}).find("negative"), std::string::npos);
}

/// The rows of the coordinator's "traffic by node" table: node or "  with peer" -> (sent,
/// received).
struct traffic_table {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> nodes;
  std::map<std::string, std::map<std::string, std::pair<std::int64_t, std::int64_t>>> peers;
};

traffic_table parse_table(const std::string& text) {
  traffic_table t;
  auto at = text.find("traffic by node");
  if (at == std::string::npos) return t;
  std::istringstream in(text.substr(at));
  std::string line, node;
  std::getline(in, line);  // title
  std::getline(in, line);  // header
  std::getline(in, line);  // rule
  static const std::regex row(R"(^(  with )?(\S+)\s+(\d+)\s+(\d+)\s*$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) break;
    auto v = std::make_pair(std::stoll(m[3]), std::stoll(m[4]));
    if (m[1].matched)
      t.peers[node][m[2]] = v;
    else
      t.nodes[node = m[2]] = v;
  }
  return t;
}

struct cluster_traffic_test : ::testing::Test, test::process_group {};

// 1 coordinator, 2 ps and 4 workers as processes; linear regression on 4096 features, so each
// step moves 2 x 16 KB of payload per worker and the framing is a small part of it.
TEST_F(cluster_traffic_test, metrics_show_every_node_s_bytes_matching_the_workers_payload) {
  auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
  auto src = std::string(env ? env : ACTRAIN_SOURCE_DEFAULT);
  std::vector<std::string> common{"--config",
                                  src + "/config/cluster-linear.ini",
                                  "--cluster.token=traffic-" + std::to_string(::getpid()),
                                  "--cluster.join-timeout=20000",
                                  "--job.workers=4",
                                  "--job.shards=2",
                                  "--job.batch=32",
                                  "--job.epochs=100",
                                  "--job.eval-every=10",
                                  "--data.rows=2000",
                                  "--data.test-rows=200",
                                  "--data.features=4096",
                                  "--optim.total-steps=8000",
                                  "--optim.lr=0.0005"};
  auto spawn_node = [&](const std::string& role, std::vector<std::string> extra) {
    std::vector<std::string> args{ACTRAIN_BINARY, "node", "--role", role};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return spawn(args);
  };
  auto coord = spawn_node("coordinator", {"--cluster.port=0", "--http", "127.0.0.1:0"});
  auto port = wait_for_line(coord, "listening on port ", 20s);
  ASSERT_FALSE(port.empty()) << kids[coord].text;
  auto http = wait_for_line(coord, "dashboard: http://127.0.0.1:", 20s);
  ASSERT_FALSE(http.empty()) << kids[coord].text;
  auto http_port = static_cast<unsigned short>(std::stoi(http));
  for (auto role : {"ps", "ps", "worker", "worker", "worker", "worker"})
    spawn_node(role, {"--cluster.port=" + port});
  // While the job runs, /metrics names all 7 nodes (each reports every half second).
  static const std::regex sample(R"re(actrain_node_bytes_sent_total\{node="([^"]+)"\} (\d+))re");
  std::map<std::string, std::int64_t> seen;
  std::string metrics;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (seen.size() < 7 && std::chrono::steady_clock::now() < deadline) {
    auto r = observe::testing::http_get(http_port, "/metrics");
    if (r.status == 200) {
      metrics = r.body;
      seen.clear();
      for (std::sregex_iterator it(metrics.begin(), metrics.end(), sample), end; it != end; ++it)
        if (std::stoll((*it)[2]) > 0) seen[(*it)[1]] = std::stoll((*it)[2]);
    }
    for (auto& k : kids) drain(k);  // a child blocked on a full pipe would stall the job
    if (seen.size() < 7) std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(seen.size(), 7u) << metrics << kids[coord].text;
  EXPECT_NE(metrics.find("actrain_peer_bytes_received_total{node=\"ps-"), std::string::npos);
  EXPECT_NE(metrics.find("actrain_node_bytes_received_total{node=\"worker-"), std::string::npos);
  // Workers and shards name the node they run on (its registered name), not "local".
  auto status = observe::testing::http_get(http_port, "/status");
  ASSERT_EQ(status.status, 200);
  auto doc = nlohmann::json::parse(status.body);
  ASSERT_EQ(doc["workers"].size(), 4u);
  for (auto& w : doc["workers"])
    EXPECT_EQ(w["node"].get<std::string>().rfind("worker-", 0), 0u) << w.dump();
  ASSERT_EQ(doc["shards"].size(), 2u);
  for (auto& sh : doc["shards"])
    EXPECT_EQ(sh["node"].get<std::string>().rfind("ps-", 0), 0u) << sh.dump();
  EXPECT_GE(doc["nodes"].size(), 1u);
  auto payload = wait_for_line(coord, "traffic: workers pushed ", 90s);
  ASSERT_FALSE(payload.empty()) << kids[coord].text;
  ASSERT_TRUE(reap_all(15s)) << "a node did not exit";
  for (auto& k : kids) EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.text;
  std::int64_t pushed = 0, received = 0;
  ASSERT_EQ(
      std::sscanf(payload.c_str(), "%ld bytes of gradients and received %ld", &pushed, &received),
      2)
      << payload;
  auto t = parse_table(kids[coord].text);
  ASSERT_EQ(t.nodes.size(), 7u) << kids[coord].text;
  std::int64_t workers_sent = 0, workers_received = 0;
  int unattributed = 0;  // worker links the other end counted as "other"
  for (auto& [node, v] : t.nodes) {
    if (node.rfind("worker-", 0) != 0) continue;
    workers_sent += v.first;
    workers_received += v.second;
    // Both ends of a connection count the same bytes: a worker's sent to a ps is what that ps
    // received from it, up to what moved between the two ends' last samples: the final report
    // itself and BASP heartbeats every 50 ms while the nodes wait for the registrar (4 KB), and
    // the last slices between a worker and a ps, which can still be on their way when one end
    // takes its final sample: a worker keeps stepping until its own stop arrives, after the
    // coordinator stopped the shards (CI saw 8173-8316 bytes, one slice of 2049 floats plus its
    // framing, a worker's push or a ps's pull reply; suite runs beside a compiling test saw
    // 16640-25071, two to three slices).
    constexpr std::int64_t heartbeats = 4096;
    constexpr std::int64_t in_flight = 4 * (2049 * 4 + 1024);
    for (auto& [peer, pv] : t.peers[node]) {
      ASSERT_NE(peer, "other") << kids[coord].text;
      auto back = t.peers[peer].find(node);
      if (back == t.peers[peer].end()) {
        // A link the other end could not name at its last samples (seen once in CI under load,
        // at the end of the job; cause not pinned down) is counted there as "other": the bytes
        // are in that node's totals, not lost.
        ASSERT_NE(t.peers[peer].find("other"), t.peers[peer].end())
            << node << " with " << peer << ": not counted at " << peer << "\n"
            << kids[coord].text;
        unattributed += 1;
        continue;
      }
      const bool with_ps = peer.rfind("ps-", 0) == 0;
      EXPECT_NEAR(pv.first, back->second.second, heartbeats + (with_ps ? in_flight : 0))
          << node << " to " << peer;
      EXPECT_NEAR(pv.second, back->second.first, heartbeats + (with_ps ? in_flight : 0))
          << peer << " to " << node;
    }
  }
  // Of the 12 worker links (4 workers x 2 ps + the coordinator) at most 2 go unattributed.
  EXPECT_LE(unattributed, 2) << kids[coord].text;
  std::cerr << "workers: " << workers_sent << " bytes sent on the wire for " << pushed
            << " bytes of gradients, " << workers_received << " received for " << received
            << " bytes of weights\n";
  EXPECT_GT(pushed, 4 * 1000000);
  EXPECT_GE(workers_sent, pushed);
  EXPECT_LE(workers_sent, pushed * 1.05);
  EXPECT_GE(workers_received, received);
  EXPECT_LE(workers_received, received * 1.05);
}

}  // namespace
}  // namespace actrain
