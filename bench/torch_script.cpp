// The PyTorch peers of the benchmarks, run as scripts whose results are JSON lines.
#include "bench/torch_script.hpp"

#include <cstdio>
#include <cstdlib>

namespace actrain {

std::vector<nlohmann::json> torch_json_lines(const std::string& script_and_args, int timeout_s) {
  const char* src = std::getenv("ACTRAIN_SOURCE_DIR");
  std::string py = "/usr/bin/python3";  // Debian's python3-torch lives there, not in a venv
  std::string cmd = py + " -c 'import torch' 2>/dev/null && timeout " + std::to_string(timeout_s) +
                    " " + py + " " + std::string(src ? src : ".") + "/bench/torch/" +
                    script_and_args + " 2>/dev/null";
  std::vector<nlohmann::json> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) {
    auto j = nlohmann::json::parse(buf, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  pclose(p);
  return out;
}

}  // namespace actrain
