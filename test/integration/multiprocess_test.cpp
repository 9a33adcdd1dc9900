// Real `actrain node` processes on 127.0.0.1: 1 coordinator (port 0, reported on its stdout),
// 2 ps and 3 workers train the linear-regression case to the closed-form MSE. Every wait is
// bounded; teardown SIGKILLs and reaps whatever still runs, so no process is left behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "node_cluster.hpp"

namespace actrain {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct multiprocess_test : ::testing::Test, test::node_cluster {};

TEST_F(multiprocess_test, six_processes_train_linear_regression_to_the_closed_form) {
  auto coord = start_cluster();
  auto line = wait_for_line(coord, "result: train loss ", 25s);
  ASSERT_FALSE(line.empty()) << kids[coord].text;
  expect_clean_exits_and_closed_form(line);
  EXPECT_GE(std::stod(line), closed_form() * (1 - 1e-6));
}

// The same job with every slice (11 values, 44 bytes) crossing the processes in chunks of 16
// bytes: gateways on the ps nodes, proxies on the worker and coordinator nodes
// (cluster/chunking.hpp).
TEST_F(multiprocess_test, slices_cut_into_chunks_between_processes_train_to_the_closed_form) {
  auto coord = start_cluster({"--cluster.chunk-bytes=16"});
  auto line = wait_for_line(coord, "result: train loss ", 60s);
  ASSERT_FALSE(line.empty()) << kids[coord].text;
  EXPECT_NE(kids[coord].text.find("cross nodes in chunks of 16 bytes"), std::string::npos)
      << kids[coord].text;
  expect_clean_exits_and_closed_form(line);
}

TEST_F(multiprocess_test, a_sigkilled_worker_process_does_not_stop_the_job_or_leave_processes) {
  auto coord = start_cluster();
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto victim = kids.size() - 3;  // the first worker process
  ::kill(kids[victim].pid, SIGKILL);
  auto line = wait_for_line(coord, "result: train loss ", 25s);
  ASSERT_FALSE(line.empty()) << kids[coord].text;
  EXPECT_NE(kids[coord].text.find(" lost at step "), std::string::npos) << kids[coord].text;
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  for (std::size_t i = 0; i < kids.size(); ++i) {
    if (i == victim) {
      EXPECT_TRUE(WIFSIGNALED(kids[i].status));
      continue;
    }
    EXPECT_TRUE(WIFEXITED(kids[i].status) && WEXITSTATUS(kids[i].status) == 0) << kids[i].text;
  }
  auto best = closed_form();
  EXPECT_LT((std::stod(line) - best) / best, 1e-2);
}

// A hung node: SIGSTOP keeps its sockets open, so only heartbeats can tell. The connections'
// timeout is far away (30 s): actrain's own node heartbeats (node-timeout 500 ms) find it. Sync
// mode, so the whole job waits for the stopped worker until it is declared lost and the barriers
// shrink. The coordinator names the silent node; resumed, the worker process learns it was taken
// as lost (or its own beacon finds the coordinator silent since the stop) and exits on its own.
TEST_F(multiprocess_test, a_sigstopped_worker_process_is_declared_lost_within_a_second) {
  auto coord = start_cluster(
      {"--job.mode=sync", "--cluster.connection-timeout=30000", "--cluster.node-timeout=500"});
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto victim = kids.size() - 3;  // the first worker process
  ASSERT_EQ(wait_for_line(coord, " lost at step ", 0s), "") << "lost before the stop";
  auto stopped_at = clock_type::now();
  ASSERT_EQ(::kill(kids[victim].pid, SIGSTOP), 0);
  auto silent = wait_for_line(coord, "sent no heartbeat for ", 10s);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - stopped_at).count();
  ASSERT_FALSE(silent.empty()) << kids[coord].text;
  EXPECT_NE(silent.find("([cluster] node-timeout 500 ms): its 1 actor(s) are taken as lost"),
            std::string::npos)
      << silent;
  EXPECT_LT(ms, 1000) << "the silent node was named " << ms << " ms after SIGSTOP";
  std::cerr << "SIGSTOP found by node heartbeats after " << ms << " ms\n";
  EXPECT_FALSE(wait_for_line(coord, " lost at step ", 5s).empty()) << kids[coord].text;
  auto line = wait_for_line(coord, "result: train loss ", 25s);
  ASSERT_FALSE(line.empty()) << kids[coord].text;
  ::kill(kids[victim].pid, SIGCONT);
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  for (auto& k : kids) EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.text;
  auto best = closed_form();
  EXPECT_LT((std::stod(line) - best) / best, 1e-2);
}

// A hung ps node: its sockets stay open, only heartbeats can tell. Here CAF's connection
// heartbeats (on the coordinator's link and on the workers' direct links; connection timeout
// 500 ms) find it before actrain's own (node-timeout 2 s by default). Its shard's state is gone
// (no replica here), so the job fails naming the shard within a second, and the ps process,
// resumed, finds its coordinator gone and exits on its own.
TEST_F(multiprocess_test, a_sigstopped_ps_process_fails_the_job_within_a_second) {
  auto coord = start_cluster({"--cluster.connection-timeout=500"});
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto victim = std::size_t{1};  // the first ps process
  auto index = shard_of(coord, victim);
  ASSERT_FALSE(index.empty()) << kids[coord].text;
  auto stopped_at = clock_type::now();
  ASSERT_EQ(::kill(kids[victim].pid, SIGSTOP), 0);
  auto failed = wait_for_line(coord, "job failed: ", 10s);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - stopped_at).count();
  ASSERT_FALSE(failed.empty()) << kids[coord].text;
  EXPECT_NE(failed.find("shard " + index + " went down"), std::string::npos) << failed;
  EXPECT_LT(ms, 1000) << "the stopped ps node was noticed " << ms << " ms after SIGSTOP";
  std::cerr << "ps SIGSTOP detected after " << ms << " ms\n";
  ::kill(kids[victim].pid, SIGCONT);
  ASSERT_TRUE(reap_all(15s)) << "a node did not exit";
  EXPECT_TRUE(WIFEXITED(kids[coord].status) && WEXITSTATUS(kids[coord].status) == 1)
      << kids[coord].text;
  for (std::size_t i = 1; i < kids.size(); ++i)
    EXPECT_TRUE(WIFEXITED(kids[i].status)) << "process " << i << " did not exit on its own\n"
                                           << kids[i].text;
}

TEST_F(multiprocess_test, a_sigkilled_ps_process_fails_the_job_naming_its_shard) {
  auto coord = start_cluster();
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto victim = std::size_t{1};  // the first ps process
  auto index = shard_of(coord, victim);
  ASSERT_FALSE(index.empty()) << kids[coord].text;
  ::kill(kids[victim].pid, SIGKILL);
  auto failed = wait_for_line(coord, "job failed: ", 15s);
  EXPECT_NE(failed.find("shard " + index + " went down"), std::string::npos) << failed << "\n"
                                                                             << kids[coord].text;
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  EXPECT_TRUE(WIFEXITED(kids[coord].status) && WEXITSTATUS(kids[coord].status) == 1)
      << kids[coord].text;
  EXPECT_TRUE(WIFSIGNALED(kids[victim].status));
  // The surviving ps exits 1 naming the cause. A worker learns it from the coordinator, or
  // fails on its own request to the dead shard, or finds the coordinator gone first: it exits
  // 1 saying the job failed, or 0 (a node dropped from the job), never by a signal.
  EXPECT_TRUE(WIFEXITED(kids[2].status) && WEXITSTATUS(kids[2].status) == 1) << kids[2].text;
  EXPECT_NE(kids[2].text.find("the job failed: shard " + index + " went down"), std::string::npos)
      << kids[2].text;
  for (std::size_t i = 3; i < kids.size(); ++i) {
    ASSERT_TRUE(WIFEXITED(kids[i].status)) << kids[i].text;
    if (WEXITSTATUS(kids[i].status) != 0) {
      EXPECT_NE(kids[i].text.find("the job failed: "), std::string::npos) << kids[i].text;
    }
  }
}

// With the default connection timeout (2 s) a node that stalls for 0.7 s (SIGSTOP, then SIGCONT)
// is only late: the job goes on and trains to the closed form, whichever role stalled.
TEST_F(multiprocess_test, a_0_7_s_sigstop_of_a_ps_a_worker_or_the_coordinator_is_tolerated) {
  auto coord = start_cluster({"--job.mode=sync", "--job.epochs=8"});
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  for (auto victim : {std::size_t{1}, kids.size() - 1, coord}) {
    ASSERT_EQ(::kill(kids[victim].pid, SIGSTOP), 0);
    std::this_thread::sleep_for(700ms);  // the stall itself is what is tested
    ASSERT_EQ(::kill(kids[victim].pid, SIGCONT), 0);
  }
  ASSERT_EQ(wait_for_line(coord, "result: ", 0s), "") << "the job ended before the last stall";
  auto line = wait_for_line(coord, "result: train loss ", 60s);
  ASSERT_FALSE(line.empty()) << kids[coord].text;
  EXPECT_EQ(kids[coord].text.find(" lost at step "), std::string::npos) << kids[coord].text;
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  for (auto& k : kids) EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.text;
  // Sync with the async job's cosine schedule (a third as many updates): as in the test above.
  auto best = closed_form();
  EXPECT_LT((std::stod(line) - best) / best, 1e-2);
}

// SIGTERM, as documented: a worker node leaves (exit 4; its rows go to the others and the job
// completes); the coordinator node ends the job after a last checkpoint (exit 4), every node
// exits, and the cluster restarted with --resume completes the job.
TEST_F(multiprocess_test, sigterm_stops_a_worker_node_and_the_coordinator_node_as_documented) {
  auto dir = ::testing::TempDir() + "actrain_mp_term_" + std::to_string(::getpid());
  std::vector<std::string> ckpt{"--checkpoint.dir=" + dir, "--job.mode=sync", "--job.epochs=8"};
  auto coord = start_cluster(ckpt);
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto worker = kids.size() - 1;
  ::kill(kids[worker].pid, SIGTERM);
  ASSERT_FALSE(wait_for_line(coord, " lost at step ", 10s).empty()) << kids[coord].text;
  ::kill(kids[coord].pid, SIGTERM);
  ASSERT_TRUE(reap_all(20s)) << "a node did not exit";
  EXPECT_TRUE(WIFEXITED(kids[worker].status) && WEXITSTATUS(kids[worker].status) == 4)
      << kids[worker].text;
  EXPECT_NE(kids[worker].text.find("stopped by TERM"), std::string::npos) << kids[worker].text;
  EXPECT_TRUE(WIFEXITED(kids[coord].status) && WEXITSTATUS(kids[coord].status) == 4)
      << kids[coord].text;
  EXPECT_NE(kids[coord].text.find("stopped: signal TERM (resume from checkpoint " + dir),
            std::string::npos)
      << kids[coord].text;
  // The other nodes were stopped with the job, and say so: exit 4, resumable.
  for (std::size_t i = 1; i < kids.size(); ++i) {
    if (i == worker) continue;
    EXPECT_TRUE(WIFEXITED(kids[i].status) && WEXITSTATUS(kids[i].status) == 4) << kids[i].text;
    EXPECT_NE(kids[i].text.find("the job was stopped: stopped: signal TERM"), std::string::npos)
        << kids[i].text;
  }

  resume_to_the_closed_form(ckpt, dir);
}

// SIGTERM of a ps node: its shards hold part of the model, so the whole job stops after a last
// checkpoint (the ps keeps serving until then), every node exits 4 naming it, and the cluster
// restarted with --resume trains to the closed form.
TEST_F(multiprocess_test, sigterm_of_a_ps_node_stops_the_job_after_a_last_checkpoint) {
  auto dir = ::testing::TempDir() + "actrain_mp_psterm_" + std::to_string(::getpid());
  std::vector<std::string> ckpt{"--checkpoint.dir=" + dir, "--job.mode=sync", "--job.epochs=8"};
  auto coord = start_cluster(ckpt);
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  const std::size_t ps = coord + 1;
  ::kill(kids[ps].pid, SIGTERM);
  ASSERT_TRUE(reap_all(20s)) << "a node did not exit";
  EXPECT_NE(kids[coord].text.find("stopping the job: ps node "), std::string::npos)
      << kids[coord].text;
  EXPECT_NE(kids[coord].text.find(": signal TERM (resume from checkpoint " + dir),
            std::string::npos)
      << kids[coord].text;
  for (std::size_t i = coord; i < kids.size(); ++i)
    EXPECT_TRUE(WIFEXITED(kids[i].status) && WEXITSTATUS(kids[i].status) == 4) << kids[i].text;
  EXPECT_NE(kids[ps].text.find("stopped by TERM"), std::string::npos) << kids[ps].text;

  resume_to_the_closed_form(ckpt, dir);
}

// No replica yet: a lost ps node ends the job, and the whole cluster restarted with --resume on
// the coordinator continues from the last checkpoint to the closed form, every row trained.
// Elastic workers across processes: a worker process started while the job runs (beyond its
// 3 [job] workers) joins, takes a share of the rows the others had not started, trains them (its
// own last line says the job completed) and the job reaches the closed form with every process
// exiting 0.
TEST_F(multiprocess_test, a_worker_process_started_mid_run_joins_the_job_and_trains) {
  // 5 ms a step on the first three (about a second an epoch): the joiner, whose process takes a
  // second or more to start on a loaded machine, comes in well before the last epoch (CI once
  // saw it join in the last epoch of an undelayed run, with nothing left to give).
  auto coord = start_cluster({"--cluster.worker-delay=0.005"});
  auto port = wait_for_line(coord, "listening on port ", 0s);
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto joiner = spawn("worker", {"--cluster.port=" + port, "--cluster.name=joiner"});
  auto joined = wait_for_line(coord, "worker 3 ('joiner') joined at step ", 20s);
  ASSERT_FALSE(joined.empty()) << kids[coord].text;
  auto taken = joined.find("takes ");
  ASSERT_NE(taken, std::string::npos) << joined;
  EXPECT_GT(std::stoll(joined.substr(taken + 6)), 0) << joined;
  auto line = wait_for_line(coord, "result: train loss ", 60s);
  ASSERT_FALSE(line.empty()) << kids[coord].text;
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  for (auto& k : kids) EXPECT_TRUE(WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) << k.text;
  EXPECT_NE(kids[joiner].text.find("worker 3: "), std::string::npos) << kids[joiner].text;
  auto best = closed_form();
  EXPECT_LT((std::stod(line) - best) / best, 1e-2);
}

// A coordinator killed mid-run (kill -9): with [cluster] rejoin-timeout the ps and worker
// processes wait for it instead of exiting; restarted on the same port with --resume DIR it
// restores the shards from its newest checkpoint, the same processes register again (fresh
// shards and workers), and the job completes near the closed form with every one exiting 0.
TEST_F(multiprocess_test, a_killed_coordinator_restarted_with_resume_completes_the_job_with_the_same_nodes) {
  auto dir = ::testing::TempDir() + "actrain_mp_rejoin_" + std::to_string(::getpid());
  std::vector<std::string> ckpt;
  std::string port;
  auto coord = start_recoverable_cluster(dir, ckpt, port);
  ASSERT_EQ(::kill(kids[coord].pid, SIGKILL), 0);
  ASSERT_EQ(kids[coord].text.find("result: "), std::string::npos) << "the job ended first";
  for (std::size_t k = coord + 1; k < kids.size(); ++k)
    ASSERT_FALSE(wait_for_line(k, "the coordinator went away; waiting up to 30000 ms", 15s).empty())
        << kids[k].text;
  auto args = ckpt;
  args.insert(args.end(), {"--cluster.port=" + port, "--resume", dir});
  auto again = spawn("coordinator", args);
  EXPECT_FALSE(wait_for_line(again, "resuming from checkpoint ", 20s).empty()) << kids[again].text;
  auto result = wait_for_line(again, "result: train loss ", 60s);
  if (result.empty()) {
    dump_all();
    FAIL() << "the restarted coordinator did not complete the job";
  }
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  EXPECT_TRUE(WIFSIGNALED(kids[coord].status));
  for (std::size_t k = coord + 1; k < kids.size(); ++k)
    EXPECT_TRUE(WIFEXITED(kids[k].status) && WEXITSTATUS(kids[k].status) == 0) << kids[k].text;
  auto best = closed_form();
  EXPECT_LT((std::stod(result) - best) / best, 1e-2);
  std::filesystem::remove_all(dir);
}

// A ps process killed mid-run (kill -9) with checkpoints and [cluster] rejoin-timeout: the
// coordinator keeps running, every other node waits, and once the ps is restarted with the same
// command the job goes on from the newest checkpoint (what was trained since is lost) and
// completes near the closed form; every process but the killed one exits 0.
TEST_F(multiprocess_test, a_killed_ps_restarted_with_its_command_resumes_the_job_from_its_checkpoint) {
  auto dir = ::testing::TempDir() + "actrain_mp_psback_" + std::to_string(::getpid());
  std::vector<std::string> ckpt;
  std::string port;
  auto coord = start_recoverable_cluster(dir, ckpt, port);
  auto victim = coord + 1;  // the first ps process
  ASSERT_EQ(::kill(kids[victim].pid, SIGKILL), 0);
  auto waiting = wait_for_line(coord, "once its ps node is back", 15s);
  if (waiting.empty()) {
    dump_all();
    FAIL() << "the coordinator did not wait for the ps node";
  }
  EXPECT_EQ(kids[coord].text.find("job failed"), std::string::npos) << kids[coord].text;
  auto args = ckpt;
  args.push_back("--cluster.port=" + port);
  auto back = spawn("ps", args);
  auto result = wait_for_line(coord, "result: train loss ", 60s);
  if (result.empty()) {
    dump_all();
    FAIL() << "the job did not complete after the ps came back";
  }
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  EXPECT_TRUE(WIFSIGNALED(kids[victim].status));
  for (std::size_t k = 0; k < kids.size(); ++k) {
    if (k == victim) continue;
    EXPECT_TRUE(WIFEXITED(kids[k].status) && WEXITSTATUS(kids[k].status) == 0) << kids[k].text;
  }
  EXPECT_NE(kids[back].text.find("ps "), std::string::npos) << kids[back].text;
  auto best = closed_form();
  EXPECT_LT((std::stod(result) - best) / best, 1e-2);
  std::filesystem::remove_all(dir);
}

// A ps process killed mid-run (kill -9) with [cluster] replicas = 1: the replica of its shard on
// the other ps node takes over and the job goes on, with no checkpoint and no restart. No update
// is lost and none applied twice: a primary answers a push only once its replica has it, and a
// worker resends what was not answered, so every shard ends at one version per step pushed (each
// step pushes to every shard). Every process but the killed one exits 0; the MSE is the closed
// form's within 1e-3.
TEST_F(multiprocess_test, a_killed_ps_with_replicas_is_replaced_by_its_replica_losing_no_update) {
  auto coord = start_cluster({"--cluster.replicas=1"});
  ASSERT_FALSE(wait_for_line(coord, "epoch ", 25s).empty()) << kids[coord].text;
  auto victim = std::size_t{1};  // the first ps process
  auto index = shard_of(coord, victim);
  ASSERT_FALSE(index.empty()) << kids[coord].text;
  ASSERT_EQ(::kill(kids[victim].pid, SIGKILL), 0);
  auto took = wait_for_line(coord, "shard " + index + " lost on node 'ps-", 15s);
  if (took.empty()) {
    dump_all();
    FAIL() << "no replica took over shard " << index;
  }
  auto at = took.find(" in ");
  ASSERT_NE(at, std::string::npos) << took;
  std::cerr << "replica took over: " << took << "\n";
  EXPECT_LT(std::stod(took.substr(at + 4)), 1000.0) << took;
  auto result = wait_for_line(coord, "result: train loss ", 60s);
  if (result.empty()) {
    dump_all();
    FAIL() << "the job did not complete after the failover";
  }
  EXPECT_EQ(kids[coord].text.find("job failed"), std::string::npos) << kids[coord].text;
  // "replicated shards end at versions [a, b] for N steps pushed (1 failover)"
  auto ends = wait_for_line(coord, "replicated shards end at versions [", 0s);
  ASSERT_FALSE(ends.empty()) << kids[coord].text;
  auto close = ends.find(']');
  auto steps = std::stoll(ends.substr(ends.find(" for ") + 5));
  std::string list = ends.substr(0, close);
  std::cerr << "replicated shards end at versions [" << ends << "\n";
  EXPECT_NE(ends.find("(1 failover)"), std::string::npos) << ends;
  EXPECT_GT(steps, 1000) << ends;
  for (std::size_t pos = 0; pos < list.size();) {
    auto comma = list.find(',', pos);
    auto v = std::stoll(list.substr(pos, comma == std::string::npos ? std::string::npos
                                                                    : comma - pos));
    EXPECT_EQ(v, steps) << "a shard's version differs from the steps pushed: " << ends;
    pos = comma == std::string::npos ? list.size() : comma + 1;
  }
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  EXPECT_TRUE(WIFSIGNALED(kids[victim].status));
  for (std::size_t k = 0; k < kids.size(); ++k) {
    if (k == victim) continue;
    EXPECT_TRUE(WIFEXITED(kids[k].status) && WEXITSTATUS(kids[k].status) == 0) << kids[k].text;
  }
  auto best = closed_form();
  EXPECT_LT((std::stod(result) - best) / best, 1e-3) << "cluster " << result << ", closed form "
                                                     << best;
}

TEST_F(multiprocess_test, a_cluster_restarted_after_a_ps_kill_resumes_from_its_checkpoint) {
  auto dir = ::testing::TempDir() + "actrain_mp_ckpt_" + std::to_string(::getpid());
  std::vector<std::string> ckpt{"--checkpoint.dir=" + dir, "--checkpoint.every-steps=400"};
  auto coord = start_cluster(ckpt);
  ASSERT_FALSE(wait_for_line(coord, "checkpoint written: ", 40s).empty()) << kids[coord].text;
  ::kill(kids[1].pid, SIGKILL);
  ASSERT_FALSE(wait_for_line(coord, "job failed: ", 15s).empty()) << kids[coord].text;
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  ASSERT_EQ(kids[coord].text.find("result: "), std::string::npos) << "the job ended first";

  auto first_run = kids.size();
  auto again = start_cluster(ckpt, {"--resume", dir});
  auto resumed = wait_for_line(again, "resuming from checkpoint ", 20s);
  EXPECT_FALSE(resumed.empty()) << kids[again].text;
  auto result = wait_for_line(again, "result: train loss ", 60s);
  ASSERT_FALSE(result.empty()) << kids[again].text;
  ASSERT_TRUE(reap_all(10s)) << "a node did not exit";
  for (auto k = first_run; k < kids.size(); ++k)
    EXPECT_TRUE(WIFEXITED(kids[k].status) && WEXITSTATUS(kids[k].status) == 0) << kids[k].text;
  auto mse = std::stod(result);
  auto best = closed_form();
  EXPECT_LT((mse - best) / best, 1e-3) << "resumed cluster " << mse << ", closed form " << best;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace actrain
