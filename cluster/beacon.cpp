// A node's heartbeat to the registrar, and its silence check (cluster/beacon.hpp).
#include "cluster/beacon.hpp"

#include <algorithm>
#include <string>

#include <actrain/errors.hpp>

namespace actrain {

namespace {

struct beacon_state {
  static inline const char* name = "actrain.beacon";
  caf::actor_clock::time_point last_answer;
  int in_flight = 0;
};

caf::behavior beacon(caf::stateful_actor<beacon_state>* self, heartbeat_sink_actor to,
                     std::chrono::milliseconds every, std::chrono::milliseconds timeout) {
  self->state.last_answer = self->clock().now();
  self->monitor(to);
  // The registrar down: the node sees that itself (it monitors it); the beacon just ends.
  self->set_down_handler([self](caf::down_msg&) { self->quit(); });
  self->send(self, tick_atom::value);
  return {
      [=](tick_atom) {
        auto& st = self->state;
        auto silent = self->clock().now() - st.last_answer;
        if (silent >= timeout) {
          auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(silent).count();
          self->quit(make_error(errc::node_down, "the coordinator node answered no heartbeat for " +
                                                     std::to_string(ms) +
                                                     " ms ([cluster] node-timeout " +
                                                     std::to_string(timeout.count()) + " ms)"));
          return;
        }
        // Answers that never come are not asked for again and again: at most as many in
        // flight as fit in the timeout.
        if (st.in_flight <= timeout / every) {
          st.in_flight += 1;
          self->request(to, caf::infinite, heartbeat_atom::value)
              .then(
                  [self](bool) {
                    self->state.in_flight -= 1;
                    self->state.last_answer = self->clock().now();
                  },
                  [self](caf::error&) { self->state.in_flight -= 1; });
        }
        self->delayed_send(self, every, tick_atom::value);
      },
  };
}

}  // namespace

std::chrono::milliseconds beacon_period(const cluster_options& opts) {
  return std::max(opts.heartbeat, opts.node_timeout / 10);
}

caf::actor spawn_beacon(caf::actor_system& sys, heartbeat_sink_actor to,
                        std::chrono::milliseconds every, std::chrono::milliseconds timeout) {
  return sys.spawn(beacon, std::move(to), every, timeout);
}

}  // namespace actrain
