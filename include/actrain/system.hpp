#pragma once
#include <caf/all.hpp>
#include <caf/io/all.hpp>

namespace actrain {

/// Registers actrain's message types and error category, and fills in the scheduler settings
/// measured best on these 2-core machines where the application set none:
/// scheduler.max-threads = cores (at least 2) and work-stealing.moderate-poll-attempts = 0
/// (blocking round trips 3-4x faster). A key the application set before, in code, an INI file
/// or on the command line, is left as it is. Call on every actor_system_config actrain runs
/// in, before the system is built.
void prepare_config(caf::actor_system_config& cfg);

}  // namespace actrain
