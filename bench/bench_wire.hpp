#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench wire [--reps N]`: push, pull and push_pull of 1, 16 and 64 MB tensors between
/// two processes, side by side: raw loopback TCP (Boost.Asio, same sizes and pattern), CAF with
/// the tensor as one BASP message, and actrain's path across nodes (shard_proxy -> chunks ->
/// shard_gateway, cluster/chunking.hpp); a chunk size x window sweep at 64 MB and the
/// small-message round trip. Medians; writes the `wire` section of docs/benchmarks.md. Returns
/// the exit code.
int bench_wire(const std::vector<std::string>& args);

/// A raw-TCP peer: a forked process on 127.0.0.1 (Boost.Asio, TCP_NODELAY) and this process's
/// connection to it, kept open so that a bench can time its push_pulls right beside what it
/// compares them with. Forks: make it before this process starts any thread.
class raw_tcp_peer {
 public:
  explicit raw_tcp_peer(std::uint64_t bytes);
  ~raw_tcp_peer();  ///< tells the peer to go and reaps it
  raw_tcp_peer(const raw_tcp_peer&) = delete;
  raw_tcp_peer& operator=(const raw_tcp_peer&) = delete;

  /// Median seconds of one push_pull of `bytes` each way (the request's bytes out, as many back)
  /// over `reps` repetitions after a warm-up.
  double push_pull_seconds(int reps);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace actrain
