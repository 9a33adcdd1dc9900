#pragma once
#include <string>
#include <vector>

#include <caf/all.hpp>

#include <actrain/cluster.hpp>

namespace actrain {

/// `actrain node --role coordinator|ps|worker --config FILE [--group.key=value ...]`: one role of
/// a cluster (docs/deployment.md). Returns the process exit code: 0 done, 1 job failed,
/// 2 bad configuration, 3 refused or could not reach the coordinator.
int node_command(const std::vector<std::string>& args);

/// The [cluster] group of a parsed config; throws std::invalid_argument naming a bad field.
cluster_options cluster_from_config(const caf::actor_system_config& cfg);

}  // namespace actrain
