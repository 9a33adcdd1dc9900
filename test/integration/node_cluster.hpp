#pragma once
// A cluster of real `actrain node` processes on 127.0.0.1 for tests: the linear-regression job
// (1 coordinator, 2 ps, 3 workers), started, restarted and waited on by what the processes print
// (bounded). Every process is SIGKILLed and reaped by process_group's destructor if still running.
// The including target defines ACTRAIN_BINARY (the actrain program) and ACTRAIN_SOURCE_DEFAULT.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cluster_jobs.hpp"
#include "data/readers.hpp"
#include "test/support/processes.hpp"

namespace actrain::test {

using namespace std::chrono_literals;

struct node_cluster : process_group {
  std::string token = "mp-" + std::to_string(::getpid());

  std::vector<std::string> common_args() const {
    auto job = linear_job(3);
    auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
    auto src = std::string(env ? env : ACTRAIN_SOURCE_DEFAULT);
    return {"--config",
            src + "/config/cluster-linear.ini",
            "--cluster.token=" + token,
            "--cluster.join-timeout=15000",
            "--job.workers=3",
            "--job.shards=2",
            "--job.batch=32",
            "--job.epochs=6",
            "--job.eval-every=0.5",
            "--data.rows=20000",
            "--data.test-rows=1000",
            "--data.features=20",
            "--optim.lr=0.02",
            "--optim.total-steps=" + std::to_string(job.optim.total_steps)};
  }

  std::size_t spawn(const std::string& role, std::vector<std::string> extra) {
    std::vector<std::string> args{ACTRAIN_BINARY, "node", "--role", role};
    for (auto& a : common_args()) args.push_back(a);
    for (auto& a : extra) args.push_back(a);
    return process_group::spawn(args);
  }

  /// The shard that ps process `ps` (an index into kids) holds, from the coordinator's log
  /// ("ps node 'ps-<pid>' registered as ps <index>"); empty when the log does not say.
  std::string shard_of(std::size_t coord, std::size_t ps) {
    return wait_for_line(coord,
                         "ps node 'ps-" + std::to_string(kids[ps].pid) + "' registered as ps ",
                         std::chrono::seconds(0));
  }

  double closed_form() const {
    auto job = linear_job(3);
    job.seed = 42;
    return least_squares_mse(load_job_data(job).train);
  }

  /// After the coordinator printed `result_line`: every process exits 0 (bounded) and the final
  /// train MSE is within 1e-3 of the closed form.
  void expect_clean_exits_and_closed_form(const std::string& result_line) {
    ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
    for (auto& k : kids) EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.text;
    auto mse = std::stod(result_line);
    auto best = closed_form();
    std::cerr << "processes: train MSE " << (mse - best) / best << " above the closed form\n";
    EXPECT_LT((mse - best) / best, 1e-3) << "cluster " << mse << ", closed form " << best;
  }

  /// A stopped cluster restarted whole with --resume DIR (same `ckpt` options): every node exits
  /// 0 and the final train MSE is within 1% of the closed form; DIR is removed.
  void resume_to_the_closed_form(const std::vector<std::string>& ckpt, const std::string& dir) {
    auto first_run = kids.size();
    auto again = start_cluster(ckpt, {"--resume", dir});
    auto result = wait_for_line(again, "result: train loss ", 60s);
    ASSERT_FALSE(result.empty()) << kids[again].text;
    ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
    for (auto k = first_run; k < kids.size(); ++k)
      EXPECT_TRUE(WIFEXITED(kids[k].status) && WEXITSTATUS(kids[k].status) == 0) << kids[k].text;
    auto best = closed_form();
    EXPECT_LT((std::stod(result) - best) / best, 1e-2);
    std::filesystem::remove_all(dir);
  }

  /// Starts the coordinator, 2 ps and 3 worker processes (in that order in `kids`); `extra`
  /// goes to every process.
  std::size_t start_cluster(std::vector<std::string> extra = {},
                            std::vector<std::string> coordinator_only = {}) {
    auto with = [&](std::vector<std::string> v) {
      v.insert(v.end(), extra.begin(), extra.end());
      return v;
    };
    auto first = with({"--cluster.port=0"});
    first.insert(first.end(), coordinator_only.begin(), coordinator_only.end());
    auto coord = spawn("coordinator", first);
    auto port = wait_for_line(coord, "listening on port ", 20s);
    if (port.empty()) throw std::runtime_error("coordinator did not listen: " + kids[coord].text);
    for (auto role : {"ps", "ps", "worker", "worker", "worker"})
      spawn(role, with({"--cluster.port=" + port}));
    return coord;
  }

  /// start_cluster with the coordinator on a fixed port below the ephemeral range (32768-60999
  /// here), for tests where nodes dial it again after it went away: a node dialling a port that
  /// is closed for a while could otherwise be given that very port as its own source port and
  /// connect to itself (TCP self-connect); operators' fixed ports do not invite that either.
  /// Sets `port`; returns the coordinator's index in kids.
  std::size_t start_cluster_on_fixed_port(const std::vector<std::string>& extra,
                                          std::string& port) {
    std::size_t coord = 0;
    for (int attempt = 0; attempt < 5 && port.empty(); ++attempt) {
      auto p = std::to_string(20000 + (::getpid() * 7 + attempt * 977) % 12000);
      auto args = extra;
      args.push_back("--cluster.port=" + p);
      coord = spawn("coordinator", args);
      if (!wait_for_line(coord, "listening on port ", 20s).empty()) port = p;
    }
    if (port.empty()) throw std::runtime_error("no coordinator listened: " + kids[coord].text);
    for (auto role : {"ps", "ps", "worker", "worker", "worker"}) {
      auto args = extra;
      args.push_back("--cluster.port=" + port);
      spawn(role, args);
    }
    return coord;
  }

  /// A cluster that checkpoints into `dir` every 400 steps and whose nodes wait for each other
  /// (rejoin-timeout 30 s), on a fixed port (set), once it wrote its first checkpoint. `args`:
  /// what every process got (a restarted one gets the same).
  std::size_t start_recoverable_cluster(const std::string& dir, std::vector<std::string>& args,
                                        std::string& port) {
    args = {"--checkpoint.dir=" + dir, "--checkpoint.every-steps=400",
            "--cluster.rejoin-timeout=30000"};
    auto coord = start_cluster_on_fixed_port(args, port);
    if (wait_for_line(coord, "checkpoint written: ", 40s).empty())
      throw std::runtime_error("no checkpoint was written: " + kids[coord].text);
    return coord;
  }

  /// Prints every process's output (a test that failed midway).
  void dump_all() {
    for (auto& k : kids) {
      if (!k.reaped) drain(k);
      std::cerr << "--- pid " << k.pid << "\n" << k.text;
    }
  }
};

}  // namespace actrain::test
