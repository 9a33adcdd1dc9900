#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace actrain {

/// Runs bench/torch/<script_and_args> with Debian's python3 (ACTRAIN_SOURCE_DIR, else the
/// current directory, is the source tree), stopped after `timeout_s`; returns the JSON objects
/// it printed, one per line. Empty when python3 has no torch or the script prints none.
std::vector<nlohmann::json> torch_json_lines(const std::string& script_and_args,
                                             int timeout_s = 900);

}  // namespace actrain
