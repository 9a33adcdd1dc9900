#pragma once
// Per-node traffic: the bytes this process's TCP connections carried, as the kernel counts them
// (TCP_INFO), and the registrar's join of every node's connections into bytes per node and peer.
// Internal to actrain::cluster.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <actrain/protocol.hpp>

namespace actrain::net {

/// Samples the TCP connections of this process. A connection that closed keeps its last counts
/// (so totals never go back); past `keep_closed` closed ones, the oldest are folded into one
/// entry without endpoints (counted as traffic with "other").
class traffic_meter {
 public:
  explicit traffic_meter(std::size_t keep_closed = 256) : keep_closed_(keep_closed) {}
  std::vector<socket_traffic> sample();

 private:
  struct entry {
    socket_traffic t;
    std::uint64_t last_seen = 0;  ///< sample number
  };
  std::mutex mutex_;
  std::size_t keep_closed_;
  std::uint64_t samples_ = 0;
  std::map<std::uint64_t, entry> seen_;  ///< by socket inode
  socket_traffic folded_;
};

/// Marks one node running in this process for its lifetime. Socket counts belong to a process,
/// so they are only a node's own while it is the only node there: alone() says so.
class node_scope {
 public:
  node_scope();
  ~node_scope();
  node_scope(const node_scope&) = delete;
  node_scope& operator=(const node_scope&) = delete;
  static bool alone();
};

/// Joins every node's connections (by node name) into bytes per node and per peer: a
/// connection's peer is the node that reported the same connection from its far end (its local
/// and peer endpoints swapped), else "other".
/// Nodes and peers in name order.
std::vector<observe::node_traffic> join_traffic(
    const std::map<std::string, std::vector<socket_traffic>>& by_node);

/// Why a node's report is refused (too many connections or overlong endpoints: a misbehaving
/// node must not make the registrar hold without bound), or "" when it is acceptable.
std::string check_traffic_report(const std::vector<socket_traffic>& sockets);

}  // namespace actrain::net
