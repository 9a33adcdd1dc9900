#pragma once
// Compute slots for the CPU workers of one process: at most `slots` of them pull and compute at
// once (compute_gate_actor in include/actrain/protocol/interfaces.hpp).
#include <deque>
#include <map>
#include <set>

#include <actrain/protocol.hpp>

namespace actrain {

struct compute_gate_state {
  static inline const char* name = "actrain.compute_gate";
  int free = 0;  ///< slots nobody holds
  struct waiter {
    caf::actor_addr who;
    caf::typed_response_promise<bool> promise;
  };
  std::deque<waiter> waiting;                   ///< in the order they asked
  std::map<caf::actor_addr, int> held;          ///< slots per holder
  std::set<caf::actor_addr> monitored;          ///< askers the gate watches for their end
};

/// A gate of `slots` (>= 1) compute slots. A slot is granted at once while one is free and no
/// one waits, otherwise when a holder leaves one, first asked first served. A holder or waiter
/// that ends (down message) gives up what it held or waited for. An actor that leaves a slot it
/// does not hold is ignored.
compute_gate_actor::behavior_type compute_gate(
    compute_gate_actor::stateful_pointer<compute_gate_state> self, int slots);

}  // namespace actrain
