#include "cluster/traffic.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace actrain::net {

namespace {

std::atomic<int> nodes_in_process{0};

/// "address:port" of an IPv4 or IPv6 socket address ("" for any other family).
std::string endpoint(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    auto& in = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in.sin_port));
  }
  if (a.ss_family == AF_INET6) {
    auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6.sin6_port));
  }
  return {};
}

/// The inode of a socket descriptor from its /proc link ("socket:[12345]"); 0 if not a socket.
std::uint64_t socket_inode(int fd) {
  char link[64] = {};
  auto path = "/proc/self/fd/" + std::to_string(fd);
  auto n = ::readlink(path.c_str(), link, sizeof link - 1);
  if (n <= 0 || std::strncmp(link, "socket:[", 8) != 0) return 0;
  return std::strtoull(link + 8, nullptr, 10);
}

/// One connected TCP socket's endpoints and counts; false for anything else (a listener, UDP, a
/// Unix socket, a descriptor closed meanwhile).
bool read_socket(int fd, socket_traffic& out) {
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  sockaddr_storage local{}, peer{};
  socklen_t llen = sizeof local, plen = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return false;
  out.local = endpoint(local);
  out.peer = endpoint(peer);
  if (out.local.empty() || out.peer.empty()) return false;
  tcp_info info{};
  socklen_t ilen = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &ilen) != 0) return false;
  // tcpi_bytes_received: Linux 4.1 and later (older kernels fill less). tcpi_bytes_sent (data
  // octets sent, retransmissions included) since 4.19; before it, tcpi_bytes_acked, which also
  // counts the SYN and FIN the peer acknowledged (one each).
  if (ilen < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received)
    return false;
  bool has_sent = ilen >= offsetof(tcp_info, tcpi_bytes_sent) + sizeof info.tcpi_bytes_sent;
  out.bytes_sent =
      static_cast<std::int64_t>(has_sent ? info.tcpi_bytes_sent : info.tcpi_bytes_acked);
  out.bytes_received = static_cast<std::int64_t>(info.tcpi_bytes_received);
  return true;
}

}  // namespace

std::vector<socket_traffic> traffic_meter::sample() {
  std::lock_guard<std::mutex> guard{mutex_};
  auto now = ++samples_;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    auto own = ::dirfd(dir);
    while (auto* e = ::readdir(dir)) {
      char* end = nullptr;
      auto fd = static_cast<int>(std::strtol(e->d_name, &end, 10));
      if (end == e->d_name || *end != '\0' || fd == own) continue;
      auto inode = socket_inode(fd);
      socket_traffic t;
      if (inode == 0 || !read_socket(fd, t)) continue;
      auto& slot = seen_[inode];
      slot.t = std::move(t);
      slot.last_seen = now;
    }
    ::closedir(dir);
  }
  // Closed connections keep their last counts; the oldest beyond keep_closed_ are folded.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> closed;  // (last seen, inode)
  for (auto& [inode, e] : seen_)
    if (e.last_seen != now) closed.emplace_back(e.last_seen, inode);
  if (closed.size() > keep_closed_) {
    std::sort(closed.begin(), closed.end());
    for (std::size_t i = 0; i + keep_closed_ < closed.size(); ++i) {
      auto it = seen_.find(closed[i].second);
      folded_.bytes_sent += it->second.t.bytes_sent;
      folded_.bytes_received += it->second.t.bytes_received;
      seen_.erase(it);
    }
  }
  std::vector<socket_traffic> out;
  out.reserve(seen_.size() + 1);
  for (auto& [inode, e] : seen_) out.push_back(e.t);
  if (folded_.bytes_sent > 0 || folded_.bytes_received > 0) out.push_back(folded_);
  return out;
}

node_scope::node_scope() {
  ++nodes_in_process;
}
node_scope::~node_scope() {
  --nodes_in_process;
}
bool node_scope::alone() {
  return nodes_in_process.load() == 1;
}

std::vector<observe::node_traffic> join_traffic(
    const std::map<std::string, std::vector<socket_traffic>>& by_node) {
  // A connection is known by both its ends: Linux gives one local port to connections to
  // different destinations, so "127.0.0.1:40001" alone can be two workers' (one to each ps).
  std::map<std::pair<std::string, std::string>, std::string> owner;  // (local, peer) -> node
  for (auto& [node, sockets] : by_node)
    for (auto& s : sockets)
      if (!s.local.empty() && !s.peer.empty()) owner[{s.local, s.peer}] = node;
  std::vector<observe::node_traffic> out;
  for (auto& [node, sockets] : by_node) {
    observe::node_traffic n;
    n.node = node;
    std::map<std::string, observe::peer_traffic> peers;
    for (auto& s : sockets) {
      n.bytes_sent += s.bytes_sent;
      n.bytes_received += s.bytes_received;
      auto it = s.peer.empty() ? owner.end() : owner.find({s.peer, s.local});
      auto name = it == owner.end() ? std::string("other") : it->second;
      auto& p = peers[name];
      p.peer = name;
      p.bytes_sent += s.bytes_sent;
      p.bytes_received += s.bytes_received;
    }
    for (auto& [name, p] : peers) n.peers.push_back(p);
    out.push_back(std::move(n));
  }
  return out;
}

std::string check_traffic_report(const std::vector<socket_traffic>& sockets) {
  constexpr std::size_t max_sockets = 1024, max_endpoint = 64;
  if (sockets.size() > max_sockets)
    return "a traffic report of " + std::to_string(sockets.size()) + " connections (at most " +
           std::to_string(max_sockets) + ")";
  for (auto& s : sockets) {
    if (s.local.size() > max_endpoint || s.peer.size() > max_endpoint)
      return "a traffic report with an endpoint longer than " + std::to_string(max_endpoint) +
             " characters";
    if (s.bytes_sent < 0 || s.bytes_received < 0) return "a traffic report with negative bytes";
  }
  return {};
}

}  // namespace actrain::net
