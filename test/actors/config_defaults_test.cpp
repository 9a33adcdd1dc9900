// prepare_config fills in only what the application did not set.
#include <thread>

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <actrain/system.hpp>

namespace actrain {
namespace {

std::int64_t get_int(const caf::actor_system_config& cfg, const char* key) {
  return caf::get_or(caf::content(cfg), key, std::int64_t{-1});
}

TEST(config_defaults, the_hosts_own_settings_stay) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  cfg.set("work-stealing.moderate-poll-attempts", 7);
  prepare_config(cfg);
  EXPECT_EQ(get_int(cfg, "scheduler.max-threads"), 1);
  EXPECT_EQ(get_int(cfg, "work-stealing.moderate-poll-attempts"), 7);
}

TEST(config_defaults, settings_from_the_command_line_stay) {
  caf::actor_system_config cfg;
  std::vector<std::string> args{"--scheduler.max-threads=3"};
  ASSERT_FALSE(cfg.parse(args));
  prepare_config(cfg);
  EXPECT_EQ(get_int(cfg, "scheduler.max-threads"), 3);
}

TEST(config_defaults, what_the_host_left_unset_gets_the_measured_defaults) {
  caf::actor_system_config cfg;
  prepare_config(cfg);
  auto cores = static_cast<std::int64_t>(std::max(2u, std::thread::hardware_concurrency()));
  EXPECT_EQ(get_int(cfg, "scheduler.max-threads"), cores);
  EXPECT_EQ(get_int(cfg, "work-stealing.moderate-poll-attempts"), 0);
  caf::actor_system sys{cfg};  // and the message types are registered: a system builds
  EXPECT_EQ(sys.scheduler().num_workers(), static_cast<std::size_t>(cores));
}

}  // namespace
}  // namespace actrain
