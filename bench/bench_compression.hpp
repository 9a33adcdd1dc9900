#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `actrain bench compression [--epochs=10] [--optims=sgd,adam] [--repeats=2] [--no-doc]`:
/// dense gradient compression on the Fashion-MNIST MLP 784-256-10, side by side in one run:
/// uncompressed, fp16 and top-k 1% with error feedback, in sync with 4 workers, async with 1
/// worker (both deterministic but for float sums) and async with 4 workers (the mean of
/// `repeats` runs: their order is the scheduler's), for each optimizer. Reports test accuracy
/// against uncompressed, the gradient bytes pushed per step and their fraction of uncompressed,
/// and samples/s. Writes the table to docs/benchmarks.md (section "compression"). Returns 0, 1
/// when a run fails, or 2 for a bad option.
int bench_compression(const std::vector<std::string>& args);

}  // namespace actrain
