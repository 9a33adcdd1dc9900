#include <iostream>

#include "apps/commands.hpp"
#include "bench/bench.hpp"
#include "bench/bench_checkpoint.hpp"
#include "bench/bench_cluster.hpp"
#include "bench/bench_compression.hpp"
#include "bench/bench_modes.hpp"
#include "bench/bench_sparse.hpp"
#include "bench/bench_staleness.hpp"
#include "bench/bench_wire.hpp"
#include "bench/doc_section.hpp"

namespace actrain {

int bench_engine(const std::vector<std::string>& args);
int bench_gpu(const std::vector<std::string>& args);

int bench_command(const std::vector<std::string>& args) {
  auto what = args.empty() ? std::string{} : args[0];
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (what == "foundation") {
    update_doc_section(benchmarks_doc_path(), "foundation", bench_foundation());
    return 0;
  }
  if (what == "reference") {
    update_doc_section(benchmarks_doc_path(), "reference", bench_reference_accuracy());
    return 0;
  }
  if (what == "engine") return bench_engine(rest);
  if (what == "wire") return bench_wire(rest);
  if (what == "cluster") return bench_cluster(rest);
  if (what == "modes") return bench_modes(rest);
  if (what == "staleness") return bench_staleness(rest);
  if (what == "checkpoint") return bench_checkpoint(rest);
  if (what == "sparse") return bench_sparse(rest);
  if (what == "compression") return bench_compression(rest);
  if (what == "gpu") return bench_gpu(rest);
  std::cerr << "actrain bench: unknown benchmark '" << what
            << "' (foundation, reference, engine, modes, staleness, checkpoint, wire, sparse, "
               "compression, cluster, gpu)\n";
  return 2;
}

}  // namespace actrain
