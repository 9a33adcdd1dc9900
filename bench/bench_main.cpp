// bench_foundation_main [foundation|reference|all] [epochs]: runs the bench library without the
// actrain app, for checking the figures while developing.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "bench/bench.hpp"

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  try {
    if (what == "foundation" || what == "all") actrain::bench_foundation();
    if (what == "reference" || what == "all") {
      actrain::reference_options opt;
      if (argc > 2) opt.epochs = std::atoi(argv[2]);
      actrain::bench_reference_accuracy(opt);
    }
    if (what != "foundation" && what != "reference" && what != "all") {
      std::cerr << "usage: " << argv[0] << " [foundation|reference|all] [epochs]\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
