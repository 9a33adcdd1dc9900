// A real job with the endpoint on port 0. /metrics parses as Prometheus
// text with the expected names and plausible values while the job runs, /status is JSON with
// the expected fields, bad requests get a 4xx, and 1000 garbage payloads on raw sockets leave
// both the endpoint and the job standing (the job still ends with a sane accuracy).
#include <cmath>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "prom_text.hpp"
#include "running_job.hpp"
#include "synthetic_run.hpp"  // test/unit/observe: raw-socket HTTP client with timeouts

namespace actrain::job_testing {
namespace {

using observe::testing::http_get;
using observe::testing::parse_response;
using observe::testing::raw_exchange;

/// Scrapes /metrics until the job has counted samples (bounded: 30 s).
prom_text scrape_until_samples(running_job& run) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string last;
  while (std::chrono::steady_clock::now() < until && !run.done()) {
    auto r = http_get(run.port(), "/metrics");
    if (r.status == 200) {
      last = r.body;
      auto m = parse_prom_text(r.body);
      if (m.value("actrain_samples_total") > 0 && m.sum("actrain_shard_pushes_total") > 0) return m;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll interval, not a wait
  }
  throw std::runtime_error("no samples on /metrics while the job ran; last body:\n" + last);
}

/// Garbage that a confused or hostile client might send: random bytes, broken request lines,
/// oversized headers, bad methods, half requests, binary zeroes, bogus chunking.
std::string garbage(std::mt19937& rng, int i) {
  std::uniform_int_distribution<int> byte(0, 255);
  switch (i % 8) {
    case 0: {
      std::string s(static_cast<std::size_t>(1 + rng() % 2000), '\0');
      for (auto& c : s) c = static_cast<char>(byte(rng));
      return s;
    }
    case 1:
      return "GET\r\n\r\n";
    case 2:
      return "GET /metrics HTTP/9.9\r\n\r\n";
    case 3:
      return "GET /" + std::string(70 * 1024, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
    case 4:
      return "POST /status HTTP/1.1\r\nContent-Length: 99999999\r\n\r\nxx";
    case 5:
      return std::string("\0\0\0\0GET / HTTP/1.1\r\n\r\n", 23);
    case 6:
      return "GET /status HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    default:
      return "\r\n\r\n\r\nHTTP/1.1 200 OK\r\n" + std::to_string(rng());
  }
}

/// Softmax on 12000 Fashion-MNIST rows for 4 epochs; each worker sleeps 4 ms per step (the
/// straggler option on both), so the job lasts a few seconds: long enough for the garbage loop
/// to run while it trains.
job_spec paced_job() {
  auto job = small_fashion_job(12000, 4);
  job.stragglers = {0, 1};
  job.straggler_delay_s = 0.004;
  return job;
}

TEST(job_endpoint, metrics_status_bad_requests_and_garbage_during_a_real_job) {
  running_job run(paced_job());
  ASSERT_NE(run.port(), 0);

  // /metrics: the format, the names, plausible values.
  const auto m = scrape_until_samples(run);
  for (const char* name :
       {"actrain_samples_total", "actrain_samples_per_second", "actrain_train_loss",
        "actrain_test_loss", "actrain_test_accuracy", "actrain_epoch", "actrain_step",
        "actrain_shard_pushes_total", "actrain_shard_pulls_total", "actrain_shard_version",
        "actrain_staleness", "actrain_dropped_late_gradients_total", "actrain_mailbox_depth",
        "actrain_worker_step", "actrain_worker_samples_per_second", "actrain_worker_busy_ratio"}) {
    EXPECT_TRUE(m.types.count(name)) << "no # TYPE for " << name;
    EXPECT_TRUE(m.helps.count(name)) << "no # HELP for " << name;
  }
  EXPECT_EQ(m.types.at("actrain_staleness"), "histogram");
  EXPECT_EQ(m.types.at("actrain_shard_pushes_total"), "counter");
  EXPECT_GT(m.value("actrain_samples_per_second"), 0);
  EXPECT_GT(m.value("actrain_samples_total"), 0);
  const double acc = m.value("actrain_test_accuracy");  // NaN until the first evaluation
  EXPECT_TRUE(std::isnan(acc) || (acc >= 0 && acc <= 1)) << acc;
  const auto pushes = m.all("actrain_shard_pushes_total");
  ASSERT_EQ(pushes.size(), 2u);  // one per shard, labelled
  std::set<std::string> shard_names;
  for (const auto& p : pushes) {
    shard_names.insert(p.labels.at("shard"));
    EXPECT_GE(p.value, 0);
  }
  EXPECT_EQ(shard_names, (std::set<std::string>{"shard-0", "shard-1"}));
  EXPECT_GT(m.sum("actrain_shard_pushes_total"), 0);
  EXPECT_EQ(m.all("actrain_worker_step").size(), 2u);
  // A worker's recent rate is of the order of the job's rate, never orders of magnitude above
  // it (a rate over a near-zero interval would be).
  const double job_rate = m.value("actrain_samples_per_second");
  for (const auto& w : m.all("actrain_worker_samples_per_second")) {
    EXPECT_GE(w.value, 0) << w.labels.at("worker");
    EXPECT_LT(w.value, 50 * job_rate) << w.labels.at("worker") << " vs job " << job_rate;
  }
  // Histogram: cumulative buckets, +Inf bucket equals the count.
  double prev = 0, inf = -1;
  for (const auto& b : m.all("actrain_staleness_bucket")) {
    EXPECT_GE(b.value, prev) << "buckets must be cumulative";
    prev = b.value;
    if (b.labels.at("le") == "+Inf") inf = b.value;
  }
  EXPECT_EQ(inf, m.value("actrain_staleness_count"));

  // /status: valid JSON with the job, mode, epoch, per-worker step and rate, per-shard version.
  auto st = http_get(run.port(), "/status");
  ASSERT_EQ(st.status, 200);
  EXPECT_NE(st.header("Content-Type").find("application/json"), std::string::npos);
  const auto j = nlohmann::json::parse(st.body);  // throws (fails the test) when not JSON
  EXPECT_EQ(j.at("job"), "watch-softmax");
  EXPECT_EQ(j.at("mode"), "async");
  EXPECT_TRUE(j.at("epoch").is_number_integer());
  ASSERT_EQ(j.at("workers").size(), 2u);
  for (const auto& w : j.at("workers")) {
    EXPECT_TRUE(w.at("name").get<std::string>().rfind("worker-", 0) == 0);
    EXPECT_GE(w.at("step").get<std::int64_t>(), 0);
    EXPECT_GE(w.at("samples_per_s").get<double>(), 0);
    // The busy fraction closes with the rate's window: a worker with a rate has computed.
    const double busy = w.at("busy").get<double>();
    EXPECT_GE(busy, 0);
    EXPECT_LE(busy, 1);
    if (w.at("samples_per_s").get<double>() > 0) {
      EXPECT_GT(busy, 0) << w.dump();
    }
  }
  ASSERT_EQ(j.at("shards").size(), 2u);
  for (const auto& s : j.at("shards")) EXPECT_GE(s.at("version").get<std::int64_t>(), 0);

  // Bad requests get a 4xx, not a crash and not a 200.
  EXPECT_EQ(http_get(run.port(), "/no-such-page").status, 404);
  EXPECT_EQ(http_get(run.port(), "/metrics", "DELETE").status, 405);
  const auto broken = parse_response(raw_exchange(run.port(), "NOT HTTP AT ALL\r\n\r\n", 2));
  if (broken.status != 0) {  // the server may also just close the connection
    EXPECT_GE(broken.status, 400);
    EXPECT_LT(broken.status, 500);
  }

  // 1000 garbage payloads, each on its own connection with 2 s timeouts (a bounded loop).
  std::mt19937 rng(6);
  ASSERT_FALSE(run.done()) << "the job ended before the garbage; lengthen paced_job()";
  const auto garbage_from = std::chrono::steady_clock::now();
  const auto accepted_before = run.server().connections_accepted();
  int answered_2xx = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto r = parse_response(raw_exchange(run.port(), garbage(rng, i), 2));
    if (r.status >= 200 && r.status < 300) ++answered_2xx;
  }
  EXPECT_GE(run.server().connections_accepted() - accepted_before, 1000u);
  EXPECT_EQ(answered_2xx, 0) << "garbage must never get a success reply";
  const bool ran_through_garbage = !run.done();
  std::cout
      << "1000 garbage exchanges in "
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - garbage_from).count()
      << " s\n";
  EXPECT_TRUE(ran_through_garbage) << "the job ended during the garbage; lengthen paced_job()";

  // Still serving, and the job finishes normally.
  EXPECT_EQ(http_get(run.port(), "/status").status, 200);
  const auto res = run.wait();
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.samples, 4 * 12000);
  EXPECT_GT(res.test.accuracy, 0.70);  // softmax on 12k Fashion-MNIST rows, 4 epochs
  EXPECT_LE(res.test.accuracy, 1.0);
  const auto final_snap = run.hub().snapshot();
  EXPECT_TRUE(final_snap.finished);
  EXPECT_DOUBLE_EQ(final_snap.test_accuracy, res.test.accuracy);
}

}  // namespace
}  // namespace actrain::job_testing
