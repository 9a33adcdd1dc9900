// Compute slots for the CPU workers of one process (compute_gate.hpp).
#include "actors/compute_gate.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actrain {

namespace {

using gate_ptr = compute_gate_actor::stateful_pointer<compute_gate_state>;

/// Hands the freed slot to the first waiter, or marks it free.
void pass_on(gate_ptr self) {
  auto& st = self->state;
  while (!st.waiting.empty()) {
    auto w = std::move(st.waiting.front());
    st.waiting.pop_front();
    if (!w.promise.pending()) continue;
    st.held[w.who] += 1;
    w.promise.deliver(true);
    return;
  }
  st.free += 1;
}

void on_down(gate_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  st.monitored.erase(dm.source);
  st.waiting.erase(std::remove_if(st.waiting.begin(), st.waiting.end(),
                                  [&](const compute_gate_state::waiter& w) {
                                    return w.who == dm.source;
                                  }),
                   st.waiting.end());
  auto it = st.held.find(dm.source);
  if (it == st.held.end()) return;
  int n = it->second;
  st.held.erase(it);
  for (int i = 0; i < n; ++i) pass_on(self);
}

}  // namespace

compute_gate_actor::behavior_type compute_gate(gate_ptr self, int slots) {
  if (slots < 1)
    throw std::invalid_argument("compute_gate: slots must be >= 1, got " + std::to_string(slots));
  self->state.free = slots;
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  return {
      [self](slot_atom) -> caf::result<bool> {
        auto& st = self->state;
        if (!self->current_sender()) return false;  // an anonymous ask could not leave it
        auto who = caf::actor_cast<caf::actor_addr>(self->current_sender());
        if (st.monitored.insert(who).second) self->monitor(who);
        if (st.free > 0 && st.waiting.empty()) {
          st.free -= 1;
          st.held[who] += 1;
          return true;
        }
        auto promise = self->make_response_promise<bool>();
        st.waiting.push_back({who, promise});
        return promise;
      },
      [self](leave_atom, slot_atom) {
        auto& st = self->state;
        auto it = st.held.find(caf::actor_cast<caf::actor_addr>(self->current_sender()));
        if (it == st.held.end()) return;
        if (--it->second == 0) st.held.erase(it);
        pass_on(self);
      },
  };
}

}  // namespace actrain
