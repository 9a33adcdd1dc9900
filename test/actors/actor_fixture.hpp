#pragma once
// A CAF actor system on the deterministic test coordinator, for GoogleTest: messages are only
// processed when the test calls run(), so every interleaving is chosen by the test.
#include <gtest/gtest.h>
#include <chrono>
#include <memory>
#include <string>
#include <vector>
#include "actors/shard.hpp"

#include <caf/all.hpp>

#include <actrain/system.hpp>

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

/// Whether a down message is in self's mailbox (taking it, without waiting); its reason in *why.
inline bool went_down(caf::scoped_actor& self, caf::error* why) {
  bool down = false;
  self->receive(
      [&](caf::down_msg& dm) {
        down = true;
        *why = dm.reason;
      },
      caf::after(std::chrono::seconds(0)) >> [] {});
  return down;
}

/// A test that talks to shard-like actors (shards, barriers, aggregators) as workers would and
/// collects every reply; subclasses build what they probe. Everything spawned and listed in
/// `spawned` is stopped at the end.
struct front_probe : ::testing::Test {
  deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  shard_actor sh;
  std::vector<caf::actor> spawned;
  std::vector<weights> answers;
  std::vector<push_ack> acks;
  std::vector<std::string> errors;

  /// A real shard holding {1, 2, 3} with plain SGD at lr 1: it moves by exactly minus the
  /// applied gradient. Stored in `sh` and stopped at the end.
  shard_actor make_shard() {
    shard_config sc;
    sc.init = {1.f, 2.f, 3.f};
    sc.optim.kind = "sgd";
    sc.optim.lr = 1.f;
    sh = ds.sys->spawn(shard, std::move(sc));
    spawned.push_back(caf::actor_cast<caf::actor>(sh));
    return sh;
  }
  void pull(const shard_actor& a, std::int32_t w, std::int64_t step) {
    self->send(a, pull_atom::value, pull_request{w, step});
  }
  void push(const shard_actor& a, std::int32_t w, std::int64_t step, std::int64_t base,
            std::vector<float> v, std::int32_t rows = 1) {
    self->send(a, push_atom::value, gradient{w, step, base, rows, tensor(std::move(v))});
  }
  /// Runs everything queued and collects what came back to the test.
  void settle() {
    ds.run();
    bool more = true;
    while (more) {
      self->receive([&](weights& w) { answers.push_back(std::move(w)); },
                    [&](push_ack& a) { acks.push_back(a); },
                    [&](shard_stats&) { ADD_FAILURE() << "unexpected stats"; },
                    [&](caf::error& e) { errors.push_back(describe_error(e)); },
                    caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
    }
  }
  shard_stats stats(const shard_actor& a) {
    shard_stats out;
    self->send(a, stats_atom::value);
    ds.run();
    self->receive([&](shard_stats& s) { out = std::move(s); },
                  [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
    return out;
  }
  static std::vector<float> values_of(const weights& w) {
    return std::vector<float>(w.values.data(), w.values.data() + w.values.size());
  }
  ~front_probe() override {
    for (auto& a : spawned) self->send_exit(a, caf::exit_reason::user_shutdown);
    ds.run();
    self->send_exit(self, caf::exit_reason::user_shutdown);
  }
};

}  // namespace actrain::testing
