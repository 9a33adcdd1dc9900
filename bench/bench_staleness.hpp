#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench staleness [--epochs=10] [--workers=1,2,4,8] [--optims=momentum,adam]
/// [--schedule=constant|cosine] [--no-torch] [--no-doc]`: the staleness study. Trains the
/// Fashion-MNIST MLP async with each staleness rule (none, inverse step, corrected momentum,
/// delay compensation, the default) at each worker count, sync at the same counts, the
/// reference loop, async and sync with one worker 4x slower, and PyTorch's RPC parameter server
/// with momentum 0.9 as the peer. Prints the tables, writes them to docs/benchmarks.md (section
/// "staleness") and accuracy-vs-samples plots to docs/img/staleness-*.svg. Returns 0, or 2 for a
/// bad option.
int bench_staleness(const std::vector<std::string>& args);

}  // namespace actrain
