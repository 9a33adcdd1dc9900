#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench checkpoint [--epochs=8] [--repeats=2] [--every=10,1] [--modes=async,sync]
/// [--no-doc]`: what checkpoints cost. Trains the Fashion-MNIST MLP (Adam: values plus two
/// optimizer slots per parameter) with 2 workers and 2 shards, without checkpoints and with one
/// every N seconds, runs interleaved in one process on the same cores; reports throughput and its
/// ratio to the run without, checkpoints written and skipped, write time and size, and the time
/// to read a checkpoint back (the resume's first phase). Writes the table to docs/benchmarks.md
/// (section "checkpoint"). Returns 0, or 2 for a bad option.
int bench_checkpoint(const std::vector<std::string>& args);

}  // namespace actrain
