// The `actrain` command's dispatch: train (one process), node (one role of a cluster), bench.
#include <iostream>
#include <string>
#include <vector>

#include "apps/commands.hpp"
#include "apps/node_command.hpp"

namespace {

const char* usage =
    "usage: actrain <command> [options]\n"
    "  train --config FILE [--group.key=value ...]   train a job, whole cluster in this process\n"
    "  train ... --http 127.0.0.1:8080               also serve /metrics, /status and a live page\n"
    "  train ... --resume DIR                        continue from the newest good checkpoint\n"
    "  eval --model FILE --config FILE               evaluate a saved model on the job's test set\n"
    "  node --role coordinator|ps|worker --config FILE   one role of a cluster "
    "(docs/deployment.md)\n"
    "  bench <foundation|reference|engine|modes|wire|gpu> [...]   figures go to "
    "docs/benchmarks.md\n"
    "Options of train come from the INI file (CAF's format, groups [job] [model] [optim]\n"
    "[staleness] [checkpoint] [data]) and can be overridden on the command line, e.g. "
    "--job.workers=4.\n";

}  // namespace

namespace actrain {

int run_actrain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  auto cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "train") return train_command(args);
    if (cmd == "bench") return bench_command(args);
    if (cmd == "eval") return eval_command(args);
    if (cmd == "node") return node_command(args);
  } catch (const std::exception& e) {
    std::cerr << "actrain " << cmd << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << "actrain: unknown command '" << cmd << "'\n" << usage;
  return 2;
}

}  // namespace actrain
