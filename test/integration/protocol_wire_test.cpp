// Every message type of include/actrain/protocol.hpp crosses a real BASP connection (two actor
// systems on 127.0.0.1) and comes back field for field: an unregistered or badly inspected type
// would arrive empty or garbled (CAF 0.17 only prints a line on stderr), which these tests catch.
#include <cstring>

#include <gtest/gtest.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <actrain/cluster.hpp>

namespace actrain {
namespace {

using namespace std::chrono_literals;

caf::behavior reflector(caf::event_based_actor* self) {
  self->set_default_handler(caf::reflect);
  return {[](std::int8_t) {}};
}

shard_actor::behavior_type dummy_shard() {
  return {
      [](pull_atom, const pull_request&) { return weights{}; },
      [](push_atom, const gradient&) { return push_ack{}; },
      [](push_pull_atom, const gradient&) { return weights{}; },
      [](stats_atom) { return shard_stats{}; },
      [](checkpoint_atom, std::int64_t) { return shard_checkpoint{}; },
      [](restore_atom, const shard_checkpoint&) { return std::int64_t{0}; },
      [](leave_atom, std::int32_t, bool) {},
  };
}

worker_actor::behavior_type dummy_worker() {
  return {[](assign_atom, const worker_assignment&) {}, [](stop_atom) {},
          [](release_atom, std::int32_t) { return released_work{}; },
          [](moved_atom, std::int32_t, const shard_actor&) {}};
}

registrar_actor::behavior_type dummy_registrar() {
  return {
      [](hello_atom, const std::string&, const std::string&, std::uint32_t, const tensor& t,
         const std::string&) -> caf::result<std::int32_t, std::int32_t, tensor> {
        return {std::int32_t{0}, std::int32_t{1}, t};
      },
      [](join_shard_atom, std::int32_t, const shard_actor&) {},
      [](join_replica_atom, std::int32_t, const replicated_shard_actor&) {},
      [](join_front_atom, std::int32_t, const shard_actor&) {},
      [](join_worker_atom, std::int32_t, const worker_actor&) {},
      [](peer_atom, std::int32_t, const ps_endpoint&) {},
      [](peers_atom) { return std::vector<ps_endpoint>{}; },
      [](traffic_atom, const std::vector<socket_traffic>&, bool) { return true; },
      [](traffic_atom, bool) { return std::vector<observe::node_traffic>{}; },
      [](members_atom) { return true; },
      [](run_atom, const coordinator_actor&) {},
      [](heartbeat_atom) { return true; },
      [](stop_atom) { return std::string{}; },
      [](stop_atom, const std::string&) {},
  };
}

coordinator_actor::behavior_type dummy_coordinator() {
  return {[](progress_atom, const progress_report&) {}, [](run_atom) { return engine_result{}; },
          [](stop_atom, const std::string&) {},
          [](join_worker_atom, std::int32_t, const worker_actor&, const std::string&) {},
          [](heartbeat_atom, const std::string&) {}};
}

bool same(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

tensor sample_tensor(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + 0.25f * static_cast<float>(i) - 1e-7f;
  return tensor(std::move(v));
}

struct node_cfg : caf::actor_system_config {
  node_cfg() { prepare_cluster_config(*this, cluster_options{}); }
};

struct protocol_wire_test : ::testing::Test {
  node_cfg cfg_a, cfg_b;
  caf::actor_system a{cfg_a}, b{cfg_b};
  caf::actor local_reflector = a.spawn(reflector);
  caf::actor remote;  // a proxy in b for the reflector in a
  std::uint16_t port = 0;
  protocol_wire_test() {
    auto p = a.middleman().publish(local_reflector, 0, "127.0.0.1", true);
    if (!p) throw std::runtime_error("publish: " + a.render(p.error()));
    port = *p;
    auto r = b.middleman().remote_actor("127.0.0.1", port);
    if (!r) throw std::runtime_error("remote_actor: " + b.render(r.error()));
    remote = *r;
  }
  ~protocol_wire_test() override {
    caf::anon_send_exit(local_reflector, caf::exit_reason::user_shutdown);
    a.middleman().unpublish(local_reflector, port);
  }
  /// Sends xs to the reflector in the other system and returns what came back.
  template <class T, class... Ts>
  T round_trip(Ts... xs) {
    caf::scoped_actor self{b};
    T out{};
    bool got = false;
    std::string err;
    self->request(remote, 5s, std::move(xs)...)
        .receive(
            [&](T& y) {
              out = std::move(y);
              got = true;
            },
            [&](caf::error& e) { err = describe_error(e); });
    EXPECT_TRUE(got) << err;
    return out;
  }
};

// A tensor from another node is checked before anything is allocated: a shape whose element
// count overflows 64 bits ({2^32, 2^32} wraps to 0 as a plain product) is refused rather than
// taken for an empty tensor, as is a length that disagrees with the shape.
TEST(tensor_wire, a_shape_that_overflows_or_disagrees_with_its_length_is_refused) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto forge = [&](shape_t shape, std::size_t n) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    EXPECT_FALSE(sink(shape));
    EXPECT_FALSE(sink.begin_sequence(n));
    std::vector<float> values(n, 1.f);
    if (n > 0) {
      EXPECT_FALSE(sink.apply_raw(n * sizeof(float), values.data()));
    }
    EXPECT_FALSE(sink.end_sequence());
    return buf;
  };
  auto read = [&](const std::vector<char>& buf) {
    caf::binary_deserializer source{sys, buf};
    tensor t;
    auto err = source(t);
    return std::make_pair(err, t);
  };
  const std::int64_t big = std::int64_t{1} << 32;
  auto [overflow, t1] = read(forge({big, big}, 0));
  ASSERT_TRUE(overflow);
  EXPECT_NE(sys.render(overflow).find("overflowing 64 bits"), std::string::npos)
      << sys.render(overflow);
  auto [mismatch, t2] = read(forge({2, 3}, 5));
  ASSERT_TRUE(mismatch);
  EXPECT_NE(sys.render(mismatch).find("does not match shape"), std::string::npos);
  auto [fine, t3] = read(forge({2, 3}, 6));
  ASSERT_FALSE(fine) << sys.render(fine);
  EXPECT_EQ(t3.shape(), (shape_t{2, 3}));
  EXPECT_EQ(t3.size(), 6u);
}

TEST_F(protocol_wire_test, tensors_keep_shape_and_every_bit) {
  std::vector<float> v{1.f, -0.f, 3.5e-38f, 1e30f, -2.25f, 7.f};
  tensor t(v, shape_t{2, 3});
  auto back = round_trip<tensor>(t);
  EXPECT_TRUE(same(t, back));
  EXPECT_EQ(back.shape(), (shape_t{2, 3}));
  tensor empty(std::vector<float>{});  // shape {0}
  EXPECT_TRUE(same(empty, round_trip<tensor>(empty)));
  auto big = sample_tensor(3 << 20, 1.f);  // 12 MiB in one message
  EXPECT_TRUE(same(big, round_trip<tensor>(big)));
}

// A default-constructed tensor has shape {} (one element by shape_numel) but no values; the wire
// maps it back to tensor() (it used to be refused, and CAF dropped the message silently).
TEST_F(protocol_wire_test, a_default_constructed_tensor_crosses_the_wire) {
  EXPECT_TRUE(same(tensor(), round_trip<tensor>(tensor())));
}

TEST_F(protocol_wire_test, data_messages_round_trip_field_for_field) {
  auto p = round_trip<pull_request>(pull_request{7, 123456789012});
  EXPECT_EQ(p.worker, 7);
  EXPECT_EQ(p.step, 123456789012);
  auto w = round_trip<weights>(weights{3, 99, sample_tensor(1000, -5.f)});
  EXPECT_EQ(w.shard, 3);
  EXPECT_EQ(w.version, 99);
  EXPECT_TRUE(same(w.values, sample_tensor(1000, -5.f)));
  auto g = round_trip<gradient>(gradient{2, 41, 40, 32, sample_tensor(17, 0.5f)});
  EXPECT_EQ(g.worker, 2);
  EXPECT_EQ(g.step, 41);
  EXPECT_EQ(g.base_version, 40);
  EXPECT_EQ(g.rows, 32);
  EXPECT_TRUE(same(g.values, sample_tensor(17, 0.5f)));
  gradient topk{2, 41, 40, 32, sample_tensor(3, 1.f)};
  topk.indices = {0, 7, 4000000000u};
  topk.length = 5000000000;
  auto t = round_trip<gradient>(topk);
  EXPECT_EQ(t.indices, topk.indices);
  EXPECT_EQ(t.length, 5000000000);
  EXPECT_TRUE(same(t.values, sample_tensor(3, 1.f)));
  gradient half{2, 41, 40, 32, {}};
  half.half_values = {0x3c00, 0xc000, 0x7bff};
  EXPECT_EQ(round_trip<gradient>(half).half_values, half.half_values);
  replica_update u{1, 77, 0.05f, 0.81f, 3, 2, 41, sample_tensor(9, -2.f)};
  auto ru = round_trip<replica_update>(u);
  EXPECT_EQ(ru.shard, 1);
  EXPECT_EQ(ru.version, 77);
  EXPECT_EQ(ru.lr, 0.05f);
  EXPECT_EQ(ru.momentum, 0.81f);
  EXPECT_EQ(ru.staleness, 3);
  EXPECT_EQ(ru.worker, 2);
  EXPECT_EQ(ru.step, 41);
  EXPECT_TRUE(same(ru.grad, sample_tensor(9, -2.f)));
  engine_result res;
  auto& e = res.test;
  e.classes.precision = {0.5, 1};
  e.classes.average_precision = {NAN, 0.25};
  e.classes.support = {0, 4};
  e.classes.auc = 0.875;
  res.bytes_pushed = 123456789;
  auto res2 = round_trip<engine_result>(res);
  EXPECT_EQ(res2.bytes_pushed, 123456789);
  auto& e2 = res2.test;
  EXPECT_EQ(e2.classes.precision, e.classes.precision);
  EXPECT_TRUE(std::isnan(e2.classes.average_precision[0]));
  EXPECT_EQ(e2.classes.support, e.classes.support);
  EXPECT_EQ(e2.classes.auc, 0.875);
  auto ack = round_trip<push_ack>(push_ack{12, 3, false});
  EXPECT_EQ(ack.version, 12);
  EXPECT_EQ(ack.staleness, 3);
  EXPECT_FALSE(ack.applied);
  shard_stats s{1, 2, 3, 4, 5, 6, 7, 8, {9, 10, 11}, 6.25, 0.125, 13, 12, 1.5, {0, 2}};
  auto s2 = round_trip<shard_stats>(s);
  EXPECT_DOUBLE_EQ(s2.mean_staleness, 6.25);
  EXPECT_DOUBLE_EQ(s2.momentum, 0.125);
  EXPECT_EQ(s2.uncompensated, 13);
  EXPECT_EQ(s2.waiting_step, 12);
  EXPECT_DOUBLE_EQ(s2.waiting_s, 1.5);
  EXPECT_EQ(s2.waiting_for, (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(std::vector<std::int64_t>({s2.shard, s2.version, s2.pushes, s2.pulls, s2.rejected,
                                       s2.dropped_stale, s2.dropped_late, s2.mailbox}),
            std::vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s2.staleness_histogram, (std::vector<std::int64_t>{9, 10, 11}));
  progress_report r{4, 500, 320, 12.5, 0.75, 6, true, 640};
  auto r2 = round_trip<progress_report>(r);
  EXPECT_EQ(r2.worker, 4);
  EXPECT_EQ(r2.step, 500);
  EXPECT_EQ(r2.samples, 320);
  EXPECT_DOUBLE_EQ(r2.loss_sum, 12.5);
  EXPECT_DOUBLE_EQ(r2.busy_seconds, 0.75);
  EXPECT_EQ(r2.max_staleness, 6);
  EXPECT_TRUE(r2.finished);
  EXPECT_EQ(r2.replayed, 640);
  shard_checkpoint c{1, 77, 40, {1.f, 2.f, 3.f}, 76, {{0.1f, 0.2f, 0.3f}, {}}};
  auto c2 = round_trip<shard_checkpoint>(c);
  EXPECT_EQ(c2.shard, 1);
  EXPECT_EQ(c2.version, 77);
  EXPECT_EQ(c2.step, 40);
  EXPECT_EQ(c2.values, c.values);
  EXPECT_EQ(c2.opt_steps, 76);
  EXPECT_EQ(c2.opt_slots, c.opt_slots);
  checkpoint ck;
  ck.job = "job; mlp 4-3-2";
  ck.sequence = 3;
  ck.step = 40;
  ck.history = {progress_point{1, 40, 2560, 1.5, 0.4, 0.5, 0.8}};
  ck.shards = {c};
  ck.workers = {saved_worker{1, 0, 40, true, {saved_work{0, 100, 2}}}};
  auto ck2 = round_trip<checkpoint>(ck);
  EXPECT_EQ(ck2.job, ck.job);
  EXPECT_EQ(ck2.step, 40);
  ASSERT_EQ(ck2.history.size(), 1u);
  EXPECT_EQ(ck2.history[0].samples, 2560);
  ASSERT_EQ(ck2.shards.size(), 1u);
  EXPECT_EQ(ck2.shards[0].values, c.values);
  ASSERT_EQ(ck2.workers.size(), 1u);
  EXPECT_EQ(ck2.workers[0].worker, 1);
  ASSERT_EQ(ck2.workers[0].work.size(), 1u);
  EXPECT_EQ(ck2.workers[0].work[0].end, 100);
  released_work rel{2, {saved_work{0, 80, 1}, saved_work{0, 60, 2}}, {saved_work{60, 80, 2}}};
  auto rel2 = round_trip<released_work>(rel);
  EXPECT_EQ(rel2.replaced, 2);
  ASSERT_EQ(rel2.kept.size(), 2u);
  EXPECT_EQ(rel2.kept[1].end, 60);
  EXPECT_EQ(rel2.kept[1].epochs, 2);
  ASSERT_EQ(rel2.given.size(), 1u);
  EXPECT_EQ(rel2.given[0].begin, 60);
  auto ep = round_trip<ps_endpoint>(ps_endpoint{"127.0.0.1", 47111});
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, 47111);
  auto eps = round_trip<std::vector<ps_endpoint>>(
      std::vector<ps_endpoint>{{"10.0.0.1", 1}, {"", 0}, {"host-b", 65535}});
  ASSERT_EQ(eps.size(), 3u);
  EXPECT_EQ(eps[2].host, "host-b");
  EXPECT_EQ(eps[2].port, 65535);
  EXPECT_EQ(eps[1].port, 0);
  engine_result er;
  er.ok = true;
  er.error = "none";
  er.params = {1.5f, -2.f};
  er.history.push_back(progress_point{2, 300, 4000, 1.25, 0.5, 0.25, 0.875});
  er.seconds = 3.5;
  er.samples = 8000;
  er.samples_per_s = 2285.5;
  er.test = eval_result{0.125, 0.9, 1000};
  er.staleness_histogram = {5, 0, 1};
  er.shards.push_back(shard_stats{});
  er.shards[0].pushes = 42;
  er.workers_lost = 1;
  er.nodes.push_back({"ps-7", 1000, 2000, {{"worker-9", 900, 1900}, {"other", 100, 100}}});
  auto er2 = round_trip<engine_result>(er);
  EXPECT_TRUE(er2.ok);
  EXPECT_EQ(er2.error, "none");
  EXPECT_EQ(er2.params, er.params);
  ASSERT_EQ(er2.history.size(), 1u);
  EXPECT_EQ(er2.history[0].step, 300);
  EXPECT_EQ(er2.history[0].test_accuracy, 0.875);
  EXPECT_EQ(er2.seconds, 3.5);
  EXPECT_EQ(er2.samples, 8000);
  EXPECT_EQ(er2.test.rows, 1000);
  EXPECT_EQ(er2.test.accuracy, 0.9);
  EXPECT_EQ(er2.staleness_histogram, er.staleness_histogram);
  ASSERT_EQ(er2.shards.size(), 1u);
  EXPECT_EQ(er2.shards[0].pushes, 42);
  EXPECT_EQ(er2.workers_lost, 1);
  ASSERT_EQ(er2.nodes.size(), 1u);
  EXPECT_EQ(er2.nodes[0].node, "ps-7");
  EXPECT_EQ(er2.nodes[0].bytes_received, 2000);
  ASSERT_EQ(er2.nodes[0].peers.size(), 2u);
  EXPECT_EQ(er2.nodes[0].peers[0].peer, "worker-9");
  EXPECT_EQ(er2.nodes[0].peers[0].bytes_sent, 900);
  EXPECT_EQ(er2.nodes[0].peers[1].bytes_received, 100);
  auto st = round_trip<socket_traffic>(socket_traffic{"127.0.0.1:5000", "127.0.0.1:41234", 7, 9});
  EXPECT_EQ(st.peer, "127.0.0.1:41234");
  EXPECT_EQ(st.bytes_received, 9);
  auto range = round_trip<shard_range_t>(shard_range_t{10, 20});
  EXPECT_EQ(range.begin, 10);
  EXPECT_EQ(range.end, 20);
  // Chunked transfers (cluster/chunking.hpp): the transfer ids and a chunk, every field.
  weights we{1, 5, tensor(), 0xfedcba9876543210ull};
  EXPECT_EQ(round_trip<weights>(we).transfer, 0xfedcba9876543210ull);
  gradient ge{0, 1, 1, 8, tensor(), 77};
  EXPECT_EQ(round_trip<gradient>(ge).transfer, 77u);
  tensor_chunk ch;
  ch.transfer = 1ull << 40;
  ch.index = 3;
  ch.count = 9;
  ch.offset = 3 * 1024;
  ch.shape = {9000};
  ch.part = sample_tensor(1024, 2.f);
  auto ch2 = round_trip<tensor_chunk>(ch);
  EXPECT_EQ(ch2.transfer, ch.transfer);
  EXPECT_EQ(ch2.index, 3);
  EXPECT_EQ(ch2.count, 9);
  EXPECT_EQ(ch2.offset, 3 * 1024);
  EXPECT_EQ(ch2.shape, (shape_t{9000}));
  EXPECT_TRUE(same(ch2.part, ch.part));
}

TEST_F(protocol_wire_test, atoms_and_errors_round_trip) {
  caf::scoped_actor self{b};
  bool got = false;
  self->request(remote, 5s, leave_atom::value, std::int32_t{5}, true)
      .receive(
          [&](leave_atom, std::int32_t w, bool lost) {
            got = true;
            EXPECT_EQ(w, 5);
            EXPECT_TRUE(lost);
          },
          [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  EXPECT_TRUE(got);
  // An error alone would read as a failed request; with a tag it comes back as data.
  got = false;
  self->request(remote, 5s, std::int32_t{9}, make_error(errc::bad_token, "token differs"))
      .receive(
          [&](std::int32_t tag, caf::error& err) {
            got = true;
            EXPECT_EQ(tag, 9);
            EXPECT_EQ(describe_error(err), "actrain.bad_token: token differs");
          },
          [&](caf::error& e) { ADD_FAILURE() << describe_error(e); });
  EXPECT_TRUE(got);
}

TEST_F(protocol_wire_test, actor_handles_and_assignments_come_back_as_the_same_actors) {
  shard_actor s0 = b.spawn(dummy_shard), s1 = b.spawn(dummy_shard);
  worker_actor w = b.spawn(dummy_worker);
  coordinator_actor co = b.spawn(dummy_coordinator);
  EXPECT_EQ(round_trip<shard_actor>(s0), s0);
  EXPECT_EQ(round_trip<worker_actor>(w), w);
  EXPECT_EQ(round_trip<coordinator_actor>(co), co);
  registrar_actor reg = b.spawn(dummy_registrar);
  EXPECT_EQ(round_trip<registrar_actor>(reg), reg);
  chunked_shard_actor gw = caf::actor_cast<chunked_shard_actor>(s1);
  EXPECT_EQ(round_trip<chunked_shard_actor>(gw), gw);
  worker_assignment asg;
  asg.worker = 2;
  asg.shards = {s0, s1};
  asg.ranges = {{0, 10}, {10, 21}};
  asg.rows = {{100, 200}};
  asg.epochs = 3;
  asg.start_step = 17;
  asg.reports_to = caf::actor_cast<caf::actor>(co);
  auto back = round_trip<worker_assignment>(asg);
  EXPECT_EQ(back.worker, 2);
  ASSERT_EQ(back.shards.size(), 2u);
  EXPECT_EQ(back.shards[0], s0);
  EXPECT_EQ(back.shards[1], s1);
  ASSERT_EQ(back.ranges.size(), 2u);
  EXPECT_EQ(back.ranges[1].end, 21);
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].begin, 100);
  EXPECT_EQ(back.epochs, 3);
  EXPECT_EQ(back.start_step, 17);
  EXPECT_EQ(back.reports_to, caf::actor_cast<caf::actor>(co));
  for (auto h : {caf::actor_cast<caf::actor>(s0), caf::actor_cast<caf::actor>(s1),
                 caf::actor_cast<caf::actor>(w), caf::actor_cast<caf::actor>(co),
                 caf::actor_cast<caf::actor>(reg)})
    caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace actrain
