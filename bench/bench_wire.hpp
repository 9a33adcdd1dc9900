#pragma once
#include <cstdint>
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

/// Median seconds of one raw-TCP push_pull of `bytes` each way (the request's bytes out, as many
/// back) between this process and a forked one on 127.0.0.1 (Boost.Asio, TCP_NODELAY), over
/// `reps` repetitions after a warm-up. Forks: call it before this process starts any thread.
double raw_tcp_push_pull_seconds(std::uint64_t bytes, int reps);

}  // namespace actrain
