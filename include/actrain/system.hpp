#pragma once
#include <caf/all.hpp>
#include <caf/io/all.hpp>

namespace actrain {

/// Registers actrain's message types and error category, and applies the scheduler settings
/// measured best on these 2-core machines (CAF-NOTES.md): threads = cores, no moderate polling
/// (blocking round trips 3-4x faster). Call on every actor_system_config actrain runs in,
/// before the system is built. Embedding applications call it on their own config.
void prepare_config(caf::actor_system_config& cfg);

}  // namespace actrain
