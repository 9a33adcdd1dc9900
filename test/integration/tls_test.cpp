// TLS between real `actrain node` processes on 127.0.0.1, with certificates this test makes with
// scripts/make-certs.sh (the operator's way, docs/deployment.md): a TLS cluster trains to the
// closed form after refusing a plaintext node, a node whose certificate another CA signed and a
// wrong token; a TLS node refuses a plaintext coordinator; bad certificate files stop a node
// before it listens, naming the key. Every wait is bounded; every process is reaped.
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <actrain/cluster.hpp>
#include "data/readers.hpp"
#include "test/support/jobs.hpp"
#include "test/support/processes.hpp"
#include "test/support/temp_dir.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

std::string source_dir() {
  auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
  return env ? env : ACTRAIN_SOURCE_DEFAULT;
}

struct tls_test : test::temp_dir_test, test::process_group {
  std::string token = "tls-" + std::to_string(::getpid());

  /// A CA and one certificate per name under dir_/sub (scripts/make-certs.sh).
  void make_certs(const std::string& sub, std::vector<std::string> names) {
    std::vector<std::string> args{"/bin/bash", source_dir() + "/scripts/make-certs.sh",
                                  (dir_ / sub).string()};
    args.insert(args.end(), names.begin(), names.end());
    auto k = process_group::spawn(args);
    ASSERT_TRUE(wait_exit(k, 30s)) << kids[k].text;
    ASSERT_EQ(exit_code(k), 0) << kids[k].text;
  }

  std::vector<std::string> tls_args(const std::string& sub, const std::string& name) const {
    auto d = dir_ / sub;
    return {"--cluster.tls-ca=" + (d / "ca.pem").string(),
            "--cluster.tls-certificate=" + (d / (name + ".pem")).string(),
            "--cluster.tls-key=" + (d / (name + ".key")).string()};
  }

  std::size_t node(const std::string& role, std::vector<std::string> extra) {
    auto job = test::linear_job(2);
    std::vector<std::string> args{ACTRAIN_BINARY,
                                  "node",
                                  "--role",
                                  role,
                                  "--config",
                                  source_dir() + "/config/cluster-linear.ini",
                                  "--cluster.join-timeout=20000",
                                  "--job.workers=2",
                                  "--job.shards=2",
                                  "--job.batch=32",
                                  "--job.epochs=6",
                                  "--data.rows=20000",
                                  "--data.test-rows=1000",
                                  "--data.features=20",
                                  "--optim.lr=0.02",
                                  "--optim.total-steps=" + std::to_string(job.optim.total_steps)};
    args.insert(args.end(), extra.begin(), extra.end());
    return process_group::spawn(args);
  }

  static std::vector<std::string> plus(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  /// Starts a node that must be refused: it exits non-zero (bounded) and prints `why`.
  void expect_refused(std::vector<std::string> extra, const std::string& why) {
    auto k = node("worker", std::move(extra));
    ASSERT_TRUE(wait_exit(k, 30s)) << kids[k].text;
    EXPECT_NE(exit_code(k), 0) << kids[k].text;
    EXPECT_NE(kids[k].text.find(why), std::string::npos) << kids[k].text;
  }

  double closed_form() const {
    auto job = test::linear_job(2);
    job.seed = 42;
    return least_squares_mse(load_job_data(job).train);
  }
};

TEST_F(tls_test, a_tls_cluster_refuses_bad_peers_and_trains_to_the_closed_form) {
  make_certs("cluster", {"coordinator", "ps0", "ps1", "worker0", "worker1", "intruder"});
  make_certs("other", {"stranger"});
  auto token_arg = "--cluster.token=" + token;
  auto coord = node("coordinator", plus({"--cluster.port=0", "--cluster.ps-nodes=2", token_arg},
                                        tls_args("cluster", "coordinator")));
  auto port = wait_for_line(coord, "listening on port ", 20s);
  ASSERT_FALSE(port.empty()) << kids[coord].text;
  std::vector<std::string> at{"--cluster.port=" + port, "--cluster.ps-nodes=2"};
  // Refused before the cluster forms, each with what is wrong. The first failed handshakes also
  // leave OpenSSL errors queued on the coordinator's multiplexer thread, which used to drop
  // every later TLS connection (cluster/openssl_queue.cpp): the cluster below must still train.
  expect_refused(plus(at, {token_arg}),
                 "that node probably requires TLS, and a node configured for TLS refuses "
                 "plaintext peers");
  expect_refused(plus(plus(at, {token_arg}), tls_args("other", "stranger")),
                 "the TLS handshake failed");
  expect_refused(plus(plus(at, {"--cluster.token=wrong"}), tls_args("cluster", "intruder")),
                 "does not match the coordinator's ([cluster] token)");
  std::vector<std::size_t> cluster{coord};
  for (auto name : {"ps0", "ps1"})
    cluster.push_back(node("ps", plus(plus(at, {token_arg}), tls_args("cluster", name))));
  for (auto name : {"worker0", "worker1"})
    cluster.push_back(node("worker", plus(plus(at, {token_arg}), tls_args("cluster", name))));
  auto line = wait_for_line(coord, "result: train loss ", 60s);
  if (line.empty()) {
    reap_all(15s);
    for (auto k : cluster) ADD_FAILURE() << "node " << k << ":\n" << kids[k].text;
    FAIL() << "no result";
  }
  ASSERT_TRUE(reap_all(15s));
  for (auto k : cluster) EXPECT_EQ(exit_code(k), 0) << kids[k].text;
  auto mse = std::stod(line);
  auto best = closed_form();
  EXPECT_LT((mse - best) / best, 1e-3) << "cluster " << mse << ", closed form " << best;
  EXPECT_NE(kids[coord].text.find("workers lost 0"), std::string::npos) << kids[coord].text;
}

TEST_F(tls_test, a_tls_node_refuses_a_plaintext_coordinator) {
  make_certs("cluster", {"worker"});
  auto coord = node("coordinator", {"--cluster.port=0", "--cluster.token=" + token});
  auto port = wait_for_line(coord, "listening on port ", 20s);
  ASSERT_FALSE(port.empty()) << kids[coord].text;
  expect_refused(
      plus({"--cluster.port=" + port, "--cluster.token=" + token}, tls_args("cluster", "worker")),
      "the TLS handshake failed: that node does not use TLS");
}

// Bad files are named before anything listens (CAF would load them on its multiplexer thread at
// the first connection and end the process without naming the file).
TEST_F(tls_test, bad_tls_files_are_refused_naming_the_key) {
  make_certs("cluster", {"a", "b"});
  make_certs("other", {"c"});
  auto d = dir_ / "cluster";
  tls_options ok{(d / "a.pem").string(), (d / "a.key").string(), (d / "ca.pem").string()};
  EXPECT_NO_THROW(validate(ok));
  EXPECT_NO_THROW(validate(tls_options{}));  // TLS off: nothing to check
  auto refused = [](const tls_options& o, const std::string& what) {
    try {
      validate(o);
      ADD_FAILURE() << "accepted; expected: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto o = ok;
  o.key.clear();
  refused(o, "must be given together");
  o = ok;
  o.key = (d / "b.key").string();
  refused(o, "cluster.tls-key '" + o.key + "': does not belong to the certificate");
  o = ok;
  o.certificate = (dir_ / "other" / "c.pem").string();
  o.key = (dir_ / "other" / "c.key").string();
  refused(o, "cluster.tls-certificate '" + o.certificate + "': is not accepted by the CA");
  o = ok;
  o.ca = (d / "missing.pem").string();
  refused(o, "cluster.tls-ca '" + o.ca + "': not a readable PEM CA certificate");
  o = ok;
  { std::ofstream(dir_ / "garbage.pem") << "not a certificate\n"; }
  o.certificate = (dir_ / "garbage.pem").string();
  refused(o, "cluster.tls-certificate '" + o.certificate + "': not a readable PEM certificate");
  // The same reaches an operator as a start-up error of `actrain node` (exit 2).
  auto k = node("worker", {"--cluster.port=1", "--cluster.tls-ca=" + (d / "ca.pem").string(),
                           "--cluster.tls-certificate=" + (d / "a.pem").string(),
                           "--cluster.tls-key=" + (d / "b.key").string()});
  ASSERT_TRUE(wait_exit(k, 20s)) << kids[k].text;
  EXPECT_EQ(exit_code(k), 2) << kids[k].text;
  EXPECT_NE(kids[k].text.find("does not belong to the certificate"), std::string::npos)
      << kids[k].text;
}

}  // namespace
}  // namespace actrain
