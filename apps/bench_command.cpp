#include <iostream>

#include "apps/commands.hpp"

namespace actrain {

int bench_command(const std::vector<std::string>& args) {
  std::cerr << "actrain bench: unknown benchmark '" << (args.empty() ? "" : args[0]) << "'\n";
  return 2;
}

}  // namespace actrain
