#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench modes [--epochs=N] [--workers=1,2,4,8] [--sim-workers=1,2,4,8,16,32]
/// [--sim-steps=N] [--no-doc]`: the sync-vs-async study. Trains the Fashion-MNIST MLP
/// under async, ssp, sync and sync+backup for each worker count, again with one worker 4x slower,
/// then measures coordination overhead with simulated compute (5 ms per step) for up to 32
/// workers. Prints the tables, writes them to docs/benchmarks.md (section "modes") and plots to
/// docs/img/modes-*.svg. Returns 0, or 2 for a bad option.
int bench_modes(const std::vector<std::string>& args);

}  // namespace actrain
