#pragma once
// A CAF actor system on the deterministic test coordinator, for GoogleTest: messages are only
// processed when the test calls run(), so every interleaving is chosen by the test.
#include <memory>

#include <caf/all.hpp>

#include "actors/system.hpp"

namespace actrain::testing {

struct deterministic_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;

  deterministic_system() {
    prepare_config(cfg);
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
  }
  /// Runs every queued job until none is left; returns how many ran.
  std::size_t run() { return sched->run(); }
};

}  // namespace actrain::testing
