// Large slices across nodes in chunks (cluster/chunking.hpp): reassembly refuses every kind of bad
// chunk, the proxy never has more than `window` chunks unanswered, a proxy and a gateway on two
// actor systems joined by a real BASP connection move slices bit for bit like a local shard, and a
// simulated cluster whose slices are all chunked trains exactly like the single-process engine.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include <actrain/backend.hpp>
#include <actrain/cluster.hpp>
#include <actrain/job.hpp>
#include <actrain/testing/sim_cluster.hpp>
#include "../actors/actor_fixture.hpp"
#include "../integration/cluster_jobs.hpp"
#include "cluster/chunking.hpp"
#include "data/readers.hpp"

namespace actrain {
namespace {

using namespace std::chrono_literals;

tensor ramp(std::size_t n, float start, float step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i % 977);
  return tensor(std::move(v));
}

bool same(const tensor& a, const tensor& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

tensor_chunk piece(std::uint64_t id, int index, int count, std::int64_t offset, shape_t shape,
                   tensor part) {
  tensor_chunk c;
  c.transfer = id;
  c.index = index;
  c.count = count;
  c.offset = offset;
  c.shape = std::move(shape);
  c.part = std::move(part);
  return c;
}

// -- reassembly ---------------------------------------------------------------------------------

struct reassembly_test : ::testing::Test {
  testing::deterministic_system ds;
  caf::actor a = ds.sys->spawn([] { return caf::behavior{[](std::int8_t) {}}; });
  caf::actor b = ds.sys->spawn([] { return caf::behavior{[](std::int8_t) {}}; });
  caf::actor_addr from_a = a.address(), from_b = b.address();
  ~reassembly_test() override {
    caf::anon_send_exit(a, caf::exit_reason::kill);
    caf::anon_send_exit(b, caf::exit_reason::kill);
    ds.run();
  }
};

TEST_F(reassembly_test, chunks_in_any_order_rebuild_the_tensor_exactly) {
  reassembly r(10, 8);
  auto whole = ramp(10, -1.f, 0.37f);
  // Three chunks (4, 4, 2 values), the last first, interleaved with another sender's transfer
  // that uses the same id.
  ASSERT_FALSE(r.add(from_a, piece(7, 2, 3, 8, {10}, whole.slice(8, 2))));
  ASSERT_FALSE(r.add(from_b, piece(7, 0, 1, 0, {10}, ramp(10, 5.f, 1.f))));
  ASSERT_FALSE(r.add(from_a, piece(7, 0, 3, 0, {10}, whole.slice(0, 4))));
  EXPECT_FALSE(r.take(from_a, 7)) << "incomplete: 2 of 3 chunks";
  ASSERT_FALSE(r.add(from_a, piece(7, 1, 3, 4, {10}, whole.slice(4, 4))));
  auto t = r.take(from_a, 7);
  ASSERT_TRUE(t) << describe_error(t.error());
  EXPECT_TRUE(same(*t, whole));
  EXPECT_EQ(t->shape(), (shape_t{10}));
  auto other = r.take(from_b, 7);
  ASSERT_TRUE(other);
  EXPECT_TRUE(same(*other, ramp(10, 5.f, 1.f)));
  EXPECT_EQ(r.open(), 0u);
  EXPECT_EQ(r.chunks(), 4);
  EXPECT_FALSE(r.take(from_a, 7)) << "taken once only";
}

TEST_F(reassembly_test, bad_chunks_are_refused_with_what_is_wrong_and_spoil_nothing) {
  reassembly r(10, 8);
  auto whole = ramp(10, 2.f, 0.5f);
  ASSERT_FALSE(r.add(from_a, piece(1, 0, 2, 0, {10}, whole.slice(0, 5))));
  auto refused = [&](tensor_chunk c, const std::string& says) {
    auto err = r.add(from_a, c);
    ASSERT_TRUE(err) << "accepted a chunk that " << says;
    EXPECT_NE(describe_error(err).find(says), std::string::npos) << describe_error(err);
  };
  refused(piece(1, 2, 2, 5, {10}, whole.slice(5, 5)), "index outside");
  refused(piece(1, -1, 2, 5, {10}, whole.slice(5, 5)), "index outside");
  refused(piece(2, 0, 1, 0, {11}, ramp(11, 0.f, 1.f)), "the receiver holds 10");
  refused(piece(1, 1, 2, 6, {10}, whole.slice(5, 5)), "outside [0, 10)");
  refused(piece(1, 1, 2, -1, {10}, whole.slice(5, 5)), "outside [0, 10)");
  refused(piece(1, 1, 3, 5, {10}, whole.slice(5, 5)), "differs from its first chunk");
  refused(piece(1, 0, 2, 0, {10}, whole.slice(0, 5)), "received twice");
  refused(piece(0, 0, 1, 0, {10}, whole), "reserved");
  refused(piece(3, 0, 1, 0, {-10}, tensor()), "negative dimension");
  refused(piece(4, 0, 1, 0, {std::int64_t{1} << 32, std::int64_t{1} << 32}, tensor()), "overflows");
  // Chunks tile the tensor: the second chunk of 5 must hold [5, 10). At offset 0 it would
  // cover the first chunk's values again and leave [5, 10) holding recycled bytes.
  refused(piece(1, 1, 2, 0, {10}, whole.slice(0, 5)), "its tile is [5, 10)");
  refused(piece(1, 1, 2, 4, {10}, whole.slice(4, 6)), "its tile is [5, 10)");
  refused(piece(5, 1, 2, 3, {10}, whole.slice(3, 7)), "cannot tile");  // last first: 3 per chunk
  refused(piece(6, 0, 1, 2, {10}, whole.slice(2, 8)), "the only chunk");
  // The good transfer is untouched and completes.
  ASSERT_FALSE(r.add(from_a, piece(1, 1, 2, 5, {10}, whole.slice(5, 5))));
  auto t = r.take(from_a, 1);
  ASSERT_TRUE(t);
  EXPECT_TRUE(same(*t, whole));
}

TEST_F(reassembly_test, open_transfers_are_bounded_and_a_gone_sender_is_forgotten) {
  reassembly r(4, 2);
  auto half = ramp(2, 1.f, 1.f);
  ASSERT_FALSE(r.add(from_a, piece(1, 0, 2, 0, {4}, half)));
  ASSERT_FALSE(r.add(from_a, piece(2, 0, 2, 0, {4}, half)));
  ASSERT_FALSE(r.add(from_a, piece(3, 0, 2, 0, {4}, half)));  // drops transfer 1, the oldest
  EXPECT_EQ(r.open(), 2u);
  ASSERT_FALSE(r.add(from_a, piece(1, 1, 2, 2, {4}, half)));  // starts afresh: 1 of 2
  EXPECT_FALSE(r.take(from_a, 1));
  r.drop(from_a);
  EXPECT_EQ(r.open(), 0u);
}

TEST(chunk_options_test, settings_that_cannot_work_are_refused_by_name) {
  chunk_options o;
  EXPECT_NO_THROW(validate(o));
  o.window = 0;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o.window = 2;
  o.chunk_bytes = std::size_t{1} << 31;
  try {
    validate(o);
    FAIL() << "a chunk larger than one message was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.chunk-bytes"), std::string::npos);
  }
  o.chunk_bytes = 0;
  EXPECT_NO_THROW(validate(o));
  EXPECT_FALSE(needs_chunking(std::size_t{1} << 30, o)) << "0 turns chunking off";
  o.chunk_bytes = 4096;
  EXPECT_TRUE(needs_chunking(4097, o));
  EXPECT_FALSE(needs_chunking(4096, o));
}

// -- the proxy's window, deterministic ----------------------------------------------------------

/// What a spy gateway saw: chunks (their acknowledgements held until the test releases them) and
/// the pushes that named a transfer.
struct spy_log {
  std::vector<tensor_chunk> chunks;
  std::vector<caf::response_promise> held;
  std::vector<gradient> pushes;
};

chunked_shard_actor::behavior_type spy_gateway(chunked_shard_actor::pointer self,
                                               std::shared_ptr<spy_log> log) {
  return {
      [self, log](chunk_atom, const tensor_chunk& c) -> caf::result<std::int32_t> {
        log->chunks.push_back(c);
        log->held.push_back(self->make_response_promise());
        return log->held.back();
      },
      [](pull_atom, const pull_request&) { return weights{}; },
      [log](push_atom, const gradient& g) {
        log->pushes.push_back(g);
        return push_ack{1, 0, true};
      },
      [](push_pull_atom, const gradient&) { return weights{}; },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      // The test's lever: acknowledge the oldest `n` held chunks.
      [log](leave_atom, std::int32_t n, bool) {
        for (std::int32_t i = 0; i < n && !log->held.empty(); ++i) {
          auto index = log->chunks[log->chunks.size() - log->held.size()].index;
          log->held.front().deliver(index);
          log->held.erase(log->held.begin());
        }
      },
  };
}

TEST(proxy_window_test, never_more_than_window_chunks_unanswered_then_one_push_names_them) {
  testing::deterministic_system ds;
  caf::scoped_actor self{*ds.sys};
  auto log = std::make_shared<spy_log>();
  auto spy = ds.sys->spawn(spy_gateway, log);
  chunk_options o;
  o.chunk_bytes = 16;  // 4 floats per chunk
  o.window = 2;
  auto proxy = ds.sys->spawn(shard_proxy, spy, 18, o, caf::actor{});
  auto g = ramp(18, 0.5f, 0.25f);  // 5 chunks: 4, 4, 4, 4, 2 values
  self->send(proxy, push_atom::value, gradient{3, 11, 10, 32, g});
  ds.run();
  ASSERT_EQ(log->chunks.size(), 2u) << "the window holds the rest back";
  EXPECT_TRUE(log->pushes.empty());
  for (int released = 1; released <= 3; ++released) {
    caf::anon_send(spy, leave_atom::value, std::int32_t{1}, false);
    ds.run();
    EXPECT_EQ(log->chunks.size(), 2u + static_cast<std::size_t>(released));
    EXPECT_LE(log->held.size(), 2u);
  }
  EXPECT_TRUE(log->pushes.empty()) << "the push waits for every acknowledgement";
  caf::anon_send(spy, leave_atom::value, std::int32_t{2}, false);
  ds.run();
  ASSERT_EQ(log->chunks.size(), 5u);
  ASSERT_EQ(log->pushes.size(), 1u);
  auto& p = log->pushes[0];
  EXPECT_EQ(p.values.size(), 0u) << "the values went as chunks";
  EXPECT_EQ(p.transfer, log->chunks[0].transfer);
  EXPECT_EQ(p.worker, 3);
  EXPECT_EQ(p.step, 11);
  EXPECT_EQ(p.base_version, 10);
  EXPECT_EQ(p.rows, 32);
  // The chunks cover the gradient exactly, in order, none larger than chunk_bytes.
  std::vector<float> back;
  for (std::size_t i = 0; i < log->chunks.size(); ++i) {
    auto& c = log->chunks[i];
    EXPECT_EQ(c.index, static_cast<std::int32_t>(i));
    EXPECT_EQ(c.count, 5);
    EXPECT_EQ(c.offset, static_cast<std::int64_t>(back.size()));
    EXPECT_LE(c.part.size() * sizeof(float), o.chunk_bytes);
    back.insert(back.end(), c.part.data(), c.part.data() + c.part.size());
  }
  EXPECT_TRUE(same(tensor(back), g));
  // The ack came back to the sender through the proxy.
  push_ack got;
  self->receive([&](push_ack& a) { got = a; });
  EXPECT_EQ(got.version, 1);
  self->send_exit(proxy, caf::exit_reason::user_shutdown);
  self->send_exit(spy, caf::exit_reason::user_shutdown);
  ds.run();
}

// -- across a real connection -------------------------------------------------------------------

struct node_cfg : caf::actor_system_config {
  node_cfg() { prepare_cluster_config(*this, cluster_options{}); }
};

shard_config sgd_shard(std::size_t n) {
  shard_config sc;
  sc.index = 1;
  sc.init = ramp(n, -0.75f, 0.001f).to_vector();
  sc.optim.kind = "momentum";
  sc.optim.lr = 0.05f;
  sc.optim.momentum = 0.9f;
  return sc;
}

TEST(chunked_wire_test, proxy_and_gateway_move_slices_bit_for_bit_like_a_local_shard) {
  constexpr std::size_t n = 10000;  // 40000 bytes: 10 chunks of 4096 bytes, the last 784 values
  chunk_options o;
  o.chunk_bytes = 4096;
  o.timeout = 10s;
  node_cfg cfg_ps, cfg_w;
  caf::actor_system ps{cfg_ps}, wn{cfg_w};
  auto sh = ps.spawn(shard, sgd_shard(n));
  auto gw = ps.spawn(shard_gateway, sh, static_cast<std::int64_t>(n), o);
  auto port = ps.middleman().publish(gw, 0, "127.0.0.1", true);
  ASSERT_TRUE(port) << ps.render(port.error());
  auto remote = wn.middleman().remote_actor<chunked_shard_actor>("127.0.0.1", *port);
  ASSERT_TRUE(remote) << wn.render(remote.error());
  auto proxy = wn.spawn(shard_proxy, *remote, static_cast<std::int64_t>(n), o, caf::actor{});
  auto local = wn.spawn(shard, sgd_shard(n));  // the same shard, reached without any wire
  caf::scoped_actor self{wn};
  auto ask = [&](const shard_actor& to, auto... xs) {
    weights out;
    self->request(to, 10s, xs...)
        .receive([&](weights& w) { out = std::move(w); },
                 [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
    return out;
  };
  auto push = [&](const shard_actor& to, gradient g) {
    push_ack out;
    self->request(to, 10s, push_atom::value, std::move(g))
        .receive([&](push_ack& a) { out = a; },
                 [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
    return out;
  };
  auto first_remote = ask(proxy, pull_atom::value, pull_request{0, 0});
  auto first_local = ask(local, pull_atom::value, pull_request{0, 0});
  EXPECT_TRUE(same(first_remote.values, first_local.values));
  EXPECT_EQ(first_remote.transfer, 0u);
  for (int step = 0; step < 3; ++step) {
    gradient g{0, step, step, 64, ramp(n, 0.1f * static_cast<float>(step + 1), -0.003f)};
    auto a = push(proxy, g);
    auto b = push(local, g);
    EXPECT_EQ(a.version, b.version);
    EXPECT_EQ(a.staleness, b.staleness);
  }
  gradient g{0, 3, 3, 64, ramp(n, -0.2f, 0.002f)};
  auto after_remote = ask(proxy, push_pull_atom::value, g);
  auto after_local = ask(local, push_pull_atom::value, g);
  EXPECT_EQ(after_remote.version, 4);
  EXPECT_EQ(after_remote.version, after_local.version);
  EXPECT_EQ(after_remote.values.size(), n);
  EXPECT_TRUE(same(after_remote.values, after_local.values)) << "momentum SGD, 4 chunked pushes";
  // A gradient of the wrong length is refused by the shard behind the gateway, weights intact.
  caf::error refused;
  self->request(proxy, 10s, push_atom::value, gradient{0, 4, 4, 64, ramp(n + 1, 0.f, 1.f)})
      .receive([](push_ack&) {}, [&](caf::error& e) { refused = e; });
  EXPECT_TRUE(refused);
  EXPECT_NE(describe_error(refused).find("bad_length"), std::string::npos)
      << describe_error(refused);
  EXPECT_TRUE(same(ask(proxy, pull_atom::value, pull_request{0, 5}).values, after_local.values));
  // The shard's node goes down: the proxy quits with it, a request to it fails at once.
  self->monitor(proxy);
  self->send_exit(gw, caf::exit_reason::kill);
  bool proxy_down = false;
  self->receive([&](caf::down_msg& dm) { proxy_down = dm.source == proxy.address(); },
                caf::after(10s) >> [] {});
  EXPECT_TRUE(proxy_down) << "the proxy outlived its gateway";
  caf::error late;
  self->request(proxy, 10s, pull_atom::value, pull_request{0, 6})
      .receive([](weights&) {}, [&](caf::error& e) { late = e; });
  EXPECT_TRUE(late);
  self->send_exit(local, caf::exit_reason::user_shutdown);
  ps.middleman().unpublish(gw, *port);
}

/// Pulls from `upstream` as a proxy would and answers with what came back as it came: the
/// weights' envelope; the chunks it received are in `log`.
chunked_shard_actor::behavior_type chunk_recorder(chunked_shard_actor::pointer self,
                                                  chunked_shard_actor upstream,
                                                  std::shared_ptr<spy_log> log) {
  return {
      [log](chunk_atom, const tensor_chunk& c) {
        log->chunks.push_back(c);
        return c.index;
      },
      [self, upstream](pull_atom, const pull_request& r) -> caf::result<weights> {
        auto rp = self->make_response_promise();
        self->request(upstream, 10s, pull_atom::value, r)
            .then([rp](weights& w) mutable { rp.deliver(std::move(w)); },
                  [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [](push_atom, const gradient&) { return push_ack{}; },
      [](push_pull_atom, const gradient&) { return weights{}; },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

// The gateway answers a remote requester's pull in chunks (then an envelope naming them), and a
// requester on its own node in one message.
TEST(chunked_wire_test, a_gateway_sends_large_replies_to_remote_requesters_in_chunks) {
  constexpr std::size_t n = 3000;  // 12000 bytes: 3 chunks of 4096 bytes, the last 904 values
  chunk_options o;
  o.chunk_bytes = 4096;
  node_cfg cfg_ps, cfg_w;
  caf::actor_system ps{cfg_ps}, wn{cfg_w};
  auto sh = ps.spawn(shard, sgd_shard(n));
  auto gw = ps.spawn(shard_gateway, sh, static_cast<std::int64_t>(n), o);
  auto port = ps.middleman().publish(gw, 0, "127.0.0.1", true);
  ASSERT_TRUE(port);
  auto remote = wn.middleman().remote_actor<chunked_shard_actor>("127.0.0.1", *port);
  ASSERT_TRUE(remote);
  auto log = std::make_shared<spy_log>();
  auto recorder = wn.spawn(chunk_recorder, *remote, log);
  caf::scoped_actor self{wn};
  weights envelope;
  self->request(recorder, 10s, pull_atom::value, pull_request{0, 0})
      .receive([&](weights& w) { envelope = std::move(w); },
               [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  EXPECT_NE(envelope.transfer, 0u);
  EXPECT_EQ(envelope.values.size(), 0u);
  ASSERT_EQ(log->chunks.size(), 3u);
  std::vector<float> back(n);
  for (auto& c : log->chunks) {
    EXPECT_EQ(c.transfer, envelope.transfer);
    EXPECT_LE(c.part.size() * sizeof(float), o.chunk_bytes);
    std::copy(c.part.data(), c.part.data() + c.part.size(), back.begin() + c.offset);
  }
  EXPECT_TRUE(same(tensor(back), ramp(n, -0.75f, 0.001f)));
  // On the gateway's own node the same pull comes back whole.
  caf::scoped_actor local{ps};
  weights whole;
  local->request(gw, 10s, pull_atom::value, pull_request{0, 0})
      .receive([&](weights& w) { whole = std::move(w); }, [](caf::error&) {});
  EXPECT_EQ(whole.transfer, 0u);
  EXPECT_TRUE(same(whole.values, ramp(n, -0.75f, 0.001f)));
  self->send_exit(recorder, caf::exit_reason::user_shutdown);
  self->send_exit(gw, caf::exit_reason::user_shutdown);
  ps.middleman().unpublish(gw, *port);
}

// A misbehaving peer sends a chunk that does not fit the shard: refused across the wire with the
// reason, and the shard's weights are untouched.
TEST(chunked_wire_test, a_bad_chunk_from_a_remote_peer_is_refused_with_its_reason) {
  chunk_options o;
  o.chunk_bytes = 64;
  node_cfg cfg_ps, cfg_w;
  caf::actor_system ps{cfg_ps}, wn{cfg_w};
  auto sh = ps.spawn(shard, sgd_shard(100));
  auto gw = ps.spawn(shard_gateway, sh, std::int64_t{100}, o);
  auto port = ps.middleman().publish(gw, 0, "127.0.0.1", true);
  ASSERT_TRUE(port);
  auto remote = wn.middleman().remote_actor<chunked_shard_actor>("127.0.0.1", *port);
  ASSERT_TRUE(remote);
  caf::scoped_actor self{wn};
  std::string why;
  self->request(*remote, 10s, chunk_atom::value, piece(9, 0, 1, 0, {1000}, ramp(16, 0.f, 1.f)))
      .receive([](std::int32_t) {}, [&](caf::error& e) { why = describe_error(e); });
  EXPECT_NE(why.find("the receiver holds 100"), std::string::npos) << why;
  // A push naming a transfer that never came is refused too.
  gradient g{0, 0, 0, 1, tensor()};
  g.transfer = 9;
  why.clear();
  self->request(*remote, 10s, push_atom::value, g)
      .receive([](push_ack&) {}, [&](caf::error& e) { why = describe_error(e); });
  EXPECT_NE(why.find("no chunks received"), std::string::npos) << why;
  // The shard is untouched (read through a proxy: the 400-byte reply comes in chunks).
  auto proxy = wn.spawn(shard_proxy, *remote, std::int64_t{100}, o, caf::actor{});
  weights w;
  self->request(proxy, 10s, pull_atom::value, pull_request{0, 0})
      .receive([&](weights& x) { w = std::move(x); },
               [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  EXPECT_EQ(w.version, 0);
  EXPECT_TRUE(same(w.values, ramp(100, -0.75f, 0.001f)));
  self->send_exit(proxy, caf::exit_reason::user_shutdown);
  self->send_exit(gw, caf::exit_reason::user_shutdown);
  ps.middleman().unpublish(gw, *port);
}

// -- a whole cluster with every slice chunked ---------------------------------------------------

TEST(chunked_cluster_test, sync_training_in_chunks_across_nodes_matches_one_process) {
  // The integration tests' linear job, smaller: 4000 rows, 2 epochs of sync steps of 3 x 32 rows.
  auto job = test::linear_job(3, 2);
  job.mode = "sync";
  job.data.rows = 4000;
  job.data.test_rows = 500;
  job.optim.lr = 0.1f;
  job.optim.total_steps = 2 * 4000 / (32 * 3);
  auto c = test::sim_config(job);
  job = c.job;  // fitted to the data
  auto& data = c.data;
  c.cluster.chunking.chunk_bytes = 16;  // 11-value slices travel as 3 chunks each way
  std::vector<std::string> events;
  engine_result across;
  {
    sim_cluster cluster(c);
    try {
      across = cluster.wait(20s);
    } catch (const std::exception& e) {
      for (auto& line : cluster.events()) ADD_FAILURE() << line;
      throw;
    }
    events = cluster.events();
  }
  ASSERT_TRUE(across.ok) << across.error;
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const std::string& e) {
    return e.find("cross nodes in chunks of 16 bytes") != std::string::npos;
  })) << "the cluster did not chunk";
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  auto local = run_job(sys, job, data);
  ASSERT_TRUE(local.ok) << local.error;
  ASSERT_EQ(across.params.size(), local.params.size());
  for (std::size_t i = 0; i < local.params.size(); ++i)
    EXPECT_NEAR(across.params[i], local.params[i], 1e-5 * std::max(1.f, std::abs(local.params[i])))
        << "parameter " << i;
  EXPECT_EQ(across.samples, local.samples);
  EXPECT_NEAR(across.test.loss, local.test.loss, 1e-5 * local.test.loss);
  auto best = least_squares_mse(data->train);
  auto cpu = make_cpu_backend();
  EXPECT_LT((evaluate(job.model, across.params, data->train, *cpu).loss - best) / best, 0.05);
}

}  // namespace
}  // namespace actrain
