// The compute gate on CAF's deterministic test coordinator: slots granted at once while free,
// then first asked first served as holders leave; a holder or waiter that ends gives its place up.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "actors/compute_gate.hpp"
#include "test/actors/actor_fixture.hpp"

namespace actrain {
namespace {

using testing::deterministic_system;

struct compute_gate_test : ::testing::Test {
  deterministic_system ds;
  compute_gate_actor gate = ds.sys->spawn(compute_gate, 2);
  /// Askers, each its own actor (the gate tells holders apart by sender).
  std::vector<std::unique_ptr<caf::scoped_actor>> who;

  caf::scoped_actor& asker(std::size_t i) {
    while (who.size() <= i) who.push_back(std::make_unique<caf::scoped_actor>(*ds.sys));
    return *who[i];
  }
  void ask(std::size_t i) {
    asker(i)->send(gate, slot_atom::value);
    ds.run();
  }
  void leave(std::size_t i) {
    asker(i)->send(gate, leave_atom::value, slot_atom::value);
    ds.run();
  }
  /// Whether asker i was granted a slot (its answer is in its mailbox; taken, without waiting).
  bool granted(std::size_t i) {
    bool got = false;
    asker(i)->receive([&](bool g) { got = g; }, caf::after(std::chrono::seconds(0)) >> [] {});
    return got;
  }
  ~compute_gate_test() override {
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    ds.run();
  }
};

TEST_F(compute_gate_test, grants_as_many_slots_as_it_has_then_in_the_order_asked) {
  ask(0);
  ask(1);
  EXPECT_TRUE(granted(0));
  EXPECT_TRUE(granted(1));
  ask(2);
  ask(3);
  EXPECT_FALSE(granted(2));  // both slots are held
  EXPECT_FALSE(granted(3));
  leave(1);
  EXPECT_TRUE(granted(2));   // first asked
  EXPECT_FALSE(granted(3));
  leave(0);
  EXPECT_TRUE(granted(3));
}

TEST_F(compute_gate_test, leaving_a_slot_one_does_not_hold_frees_nothing) {
  ask(0);
  ask(1);
  EXPECT_TRUE(granted(0));
  EXPECT_TRUE(granted(1));
  leave(2);  // holds nothing
  ask(3);
  EXPECT_FALSE(granted(3));
  leave(0);
  EXPECT_TRUE(granted(3));
  ask(4);
  EXPECT_FALSE(granted(4));  // 1 and 3 hold the two slots
}

TEST_F(compute_gate_test, a_holder_that_ends_gives_its_slot_to_the_next_and_a_waiter_its_place) {
  ask(0);
  ask(1);
  EXPECT_TRUE(granted(0));
  EXPECT_TRUE(granted(1));
  ask(2);  // waits
  ask(3);  // waits
  who[2].reset();  // waiter 2 ends: its place in the queue goes
  ds.run();
  who[0].reset();  // holder 0 ends holding its slot: 3 gets it, not the gone 2
  ds.run();
  EXPECT_TRUE(granted(3));
  ask(4);
  EXPECT_FALSE(granted(4));  // 1 and 3 hold both
  leave(3);
  EXPECT_TRUE(granted(4));
}

}  // namespace
}  // namespace actrain
