#pragma once
#include <string>
#include <vector>

namespace actrain {

/// The whole `actrain` command line (argv[0] is the program): dispatches to train, node, bench.
/// Returns the process exit code.
int run_actrain(int argc, char** argv);

/// `actrain train --config FILE [--group.key=value ...]`: a whole cluster in this process.
int train_command(const std::vector<std::string>& args);
/// `actrain eval --model FILE --config FILE`: a saved model evaluated on the job's test set.
int eval_command(const std::vector<std::string>& args);
/// `actrain bench <what> [...]`: benchmarks that print figures and update docs/benchmarks.md.
int bench_command(const std::vector<std::string>& args);

}  // namespace actrain
