#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench wire [--reps N]`: push, pull and push_pull of 1, 16 and 64 MB tensors between
/// two processes over CAF (BASP, tuned middleman) side by side with raw loopback TCP measured by
/// the same command (Boost.Asio, same sizes, same pattern), plus the small-message round trip and
/// 64 MB sent as 4 MiB chunks with 2 in flight. Medians; writes the `wire` section of
/// docs/benchmarks.md. Returns the exit code.
int bench_wire(const std::vector<std::string>& args);

}  // namespace actrain
