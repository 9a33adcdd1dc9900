#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench cluster [--runs=3] [--epochs=1] [--no-torch] [--no-doc]`: the MLP 784-256-10
/// with plain SGD 0.1, batch 64, async, 2 workers and 1 shard, across the same boundaries side
/// by side in one run: `actrain train` (one process) against `actrain node` processes (a
/// coordinator, 1 ps, 2 workers), both from config/mlp_fashion.ini with the same overrides, and
/// PyTorch's RPC parameter server (bench/torch/torch_rpc_ps.py, 1 PS + 2 trainer processes);
/// with the bound across processes measured in the same run (the reference trainer's step on
/// one thread plus a raw-TCP push_pull of the step's bytes). Medians over the runs, which
/// alternate the sides. Writes the table to docs/benchmarks.md (section "cluster"). Returns 0,
/// 1 when a run fails, or 2 for a bad option.
int bench_cluster(const std::vector<std::string>& args);

}  // namespace actrain
