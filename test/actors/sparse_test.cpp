// Sparse shards, the sparse barrier and whole sparse jobs on a real actor system: row
// push/pull against a dense shard doing the same updates, malformed messages refused, the sync
// barrier's weighted mean, and training on synthetic CTR data to its ground truth's AUC.
#include <cmath>

#include <gtest/gtest.h>

#include <actrain/engine.hpp>
#include <actrain/sparse_engine.hpp>
#include <actrain/system.hpp>
#include "actors/sparse_barrier.hpp"
#include "actors/sparse_shard.hpp"
#include "observe/prometheus.hpp"
#include "observe/status_json.hpp"

namespace actrain {
namespace {

struct sparse_test : ::testing::Test {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::unique_ptr<caf::scoped_actor> self;
  sparse_test() {
    prepare_config(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    self = std::make_unique<caf::scoped_actor>(*sys);
  }
  ~sparse_test() override { self.reset(); }

  template <class Handle, class... Ts>
  auto ask(const Handle& h, Ts&&... xs) {
    using reply =
        typename caf::response_type<typename Handle::signatures, std::decay_t<Ts>...>::tuple_type;
    std::tuple_element_t<0, reply> out;
    caf::error failed;
    (*self)
        ->request(h, std::chrono::seconds(10), std::forward<Ts>(xs)...)
        .receive([&](std::tuple_element_t<0, reply>& r) { out = std::move(r); },
                 [&](caf::error& e) { failed = e; });
    EXPECT_FALSE(failed) << describe_error(failed);
    return out;
  }
  caf::error ask_error(const sparse_shard_actor& h, row_gradient g) {
    caf::error failed;
    (*self)
        ->request(h, std::chrono::seconds(10), push_atom::value, std::move(g))
        .receive([](push_ack&) {}, [&](caf::error& e) { failed = e; });
    return failed;
  }
};

table_spec small_table() {
  table_spec t;
  t.rows = 50;
  t.dim = 3;
  t.init_scale = 0.1f;
  t.seed = 9;
  return t;
}

// A sparse shard and a dense shard over the same table (every row, laid out id-major) get the
// same updates; the rows a worker pulls are the dense shard's values at those ids, bit for bit.
void exact_against_dense(sparse_test& T, const char* kind) {
  SCOPED_TRACE(kind);
  auto t = small_table();
  row_optim_spec ro;
  ro.kind = kind;
  ro.lr = 0.3f;
  ro.eps = 1e-8f;
  sparse_shard_config sc;
  sc.table = t;
  sc.optim = ro;
  auto sparse = T.sys->spawn(sparse_shard, sc);
  shard_config dc;
  for (std::uint64_t id = 0; id < t.rows; ++id)
    for (int c = 0; c < t.dim; ++c) dc.init.push_back(table_init_value(t, id, c));
  dc.optim.kind = kind;
  dc.optim.lr = 0.3f;
  dc.optim.eps = 1e-8f;
  auto dense = spawn_shard(*T.sys, dc);
  std::vector<std::vector<std::uint64_t>> steps = {{3, 17, 42}, {17, 0}, {42, 49, 3, 8}};
  for (std::size_t k = 0; k < steps.size(); ++k) {
    auto& ids = steps[k];
    auto rb = T.ask(sparse, pull_atom::value, row_request{0, static_cast<std::int64_t>(k), ids});
    row_gradient g;
    g.ids = ids;
    g.base_versions = rb.row_versions;
    g.rows = 1;
    std::vector<float> full(t.rows * t.dim, 0.f);
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (int c = 0; c < t.dim; ++c) {
        float v = 0.1f * static_cast<float>(k + 1) - 0.07f * static_cast<float>(i * 3 + c);
        g.values.push_back(v);
        full[ids[i] * t.dim + c] = v;
      }
    T.ask(sparse, push_atom::value, g);
    T.ask(dense, push_atom::value, gradient{0, 0, 0, 1, tensor(full)});
  }
  std::vector<std::uint64_t> all(t.rows);
  for (std::uint64_t id = 0; id < t.rows; ++id) all[id] = id;
  auto rb = T.ask(sparse, pull_atom::value, row_request{0, 9, all});
  auto w = T.ask(dense, pull_atom::value, pull_request{0, 9});
  ASSERT_EQ(rb.values.size(), w.values.size());
  for (std::size_t i = 0; i < rb.values.size(); ++i) EXPECT_EQ(rb.values[i], w.values[i]) << i;
  EXPECT_EQ(rb.row_versions[3], 2);
  EXPECT_EQ(rb.row_versions[1], 0);
  auto stats = T.ask(sparse, stats_atom::value);
  EXPECT_EQ(stats.rows_held, 50);  // the last pull touched every row
  EXPECT_EQ(stats.pushes, 3);
  EXPECT_EQ(stats.rows_pushed, 9);
  EXPECT_EQ(stats.hot_ids.front(),
            3u);  // pulled 3 times, pushed twice (tied with 17, 42: lowest id)
  caf::anon_send_exit(sparse, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(dense, caf::exit_reason::user_shutdown);
}

TEST_F(sparse_test, row_push_pull_matches_a_dense_shard_doing_the_same_updates) {
  exact_against_dense(*this, "sgd");
  exact_against_dense(*this, "adagrad");
}

TEST_F(sparse_test, evaluation_pulls_do_not_create_rows) {
  sparse_shard_config sc;
  sc.table = small_table();
  auto s = sys->spawn(sparse_shard, sc);
  auto rb = ask(s, pull_atom::value, row_request{-1, -1, {1, 2, 3}});
  EXPECT_EQ(rb.values[4], table_init_value(sc.table, 2, 1));
  EXPECT_EQ(ask(s, stats_atom::value).rows_held, 0);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_F(sparse_test, malformed_row_messages_are_refused_and_change_nothing) {
  sparse_shard_config sc;
  sc.table = small_table();
  sc.shards = 2;
  sc.index = 0;
  sc.optim.kind = "sgd";
  auto s = sys->spawn(sparse_shard, sc);
  std::uint64_t mine = 0, theirs = 0;
  while (table_shard_of(sc.table, 2, mine) != 0) ++mine;
  while (table_shard_of(sc.table, 2, theirs) != 1) ++theirs;
  auto push = [&](std::vector<std::uint64_t> ids, std::vector<float> v,
                  std::vector<std::int64_t> base) {
    row_gradient g;
    g.worker = 7;
    g.ids = std::move(ids);
    g.values = std::move(v);
    g.base_versions = std::move(base);
    return ask_error(s, g);
  };
  auto e1 = push({theirs}, {1, 1, 1}, {0});
  EXPECT_NE(describe_error(e1).find("belongs to another shard"), std::string::npos)
      << describe_error(e1);
  auto e2 = push({mine}, {1, 1}, {0});
  EXPECT_NE(describe_error(e2).find("2 gradient values for 1 rows of 3"), std::string::npos)
      << describe_error(e2);
  auto e3 = push({mine}, {1, NAN, 1}, {0});
  EXPECT_NE(describe_error(e3).find("NaN"), std::string::npos);
  auto e4 = push({1000}, {1, 1, 1}, {0});
  EXPECT_NE(describe_error(e4).find("outside the table"), std::string::npos);
  auto e5 = push({mine}, {1, 1, 1}, {});
  EXPECT_NE(describe_error(e5).find("base versions"), std::string::npos);
  auto st = ask(s, stats_atom::value);
  EXPECT_EQ(st.rejected, 5);
  EXPECT_EQ(st.rows_held, 0);
  EXPECT_EQ(st.version, 0);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

/// A sparse shard of 1-wide rows starting at 0 (SGD, lr 1: a row moves by exactly minus the
/// applied gradient) and a sync barrier for 2 workers in front of it.
std::pair<sparse_shard_actor, sparse_shard_actor> sync_pair(caf::actor_system& sys) {
  sparse_shard_config sc;
  sc.table = small_table();
  sc.table.dim = 1;
  sc.table.init_scale = 0;
  sc.optim.kind = "sgd";
  sc.optim.lr = 1.f;
  auto s = sys.spawn(sparse_shard, sc);
  return {s, sys.spawn(sparse_barrier, sparse_barrier_config{s, 2, 1})};
}

TEST_F(sparse_test, the_sync_barrier_applies_the_row_weighted_mean_and_holds_the_next_pull) {
  auto pair = sync_pair(*sys);
  auto s = pair.first, b = pair.second;
  // The pull for step 1 is asked first; it may only be answered once step 0 is applied.
  caf::scoped_actor puller{*sys};
  puller->send(b, pull_atom::value, row_request{0, 1, {5, 6}});
  row_gradient g0;
  g0.worker = 0;
  g0.step = 0;
  g0.rows = 1;
  g0.ids = {5};
  g0.base_versions = {0};
  g0.values = {1.f};
  ask(b, push_atom::value, g0);
  row_gradient g1 = g0;
  g1.worker = 1;
  g1.rows = 3;
  g1.ids = {6, 5};
  g1.base_versions = {0, 0};
  g1.values = {4.f, 2.f};
  ask(b, push_atom::value, g1);
  row_block got;
  puller->receive([&](row_block& rb) { got = std::move(rb); },
                  caf::after(std::chrono::seconds(10)) >> [] { FAIL() << "pull never answered"; });
  ASSERT_EQ(got.values.size(), 2u);
  EXPECT_FLOAT_EQ(got.values[0], -(1 * 1.f + 3 * 2.f) / 4);  // id 5
  EXPECT_FLOAT_EQ(got.values[1], -(3 * 4.f) / 4);            // id 6
  EXPECT_EQ(ask(s, stats_atom::value).pushes, 1);            // one combined push
  caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

// A worker that pushed step t and left (it finished its rows) before another pushed step t: the
// step waits for the live one and sums both; the live worker's later steps close on its own.
TEST_F(sparse_test, the_sync_barrier_waits_for_live_workers_after_one_leaves) {
  auto pair = sync_pair(*sys);
  auto s = pair.first, b = pair.second;
  auto grad = [](std::int32_t worker, std::int64_t step, float v) {
    row_gradient g;
    g.worker = worker;
    g.step = step;
    g.rows = 1;
    g.ids = {5};
    g.base_versions = {step};
    g.values = {v};
    return g;
  };
  EXPECT_TRUE(ask(b, push_atom::value, grad(1, 0, 2.f)).applied);
  (*self)->send(b, leave_atom::value, std::int32_t{1});
  // Asked through the barrier after the leave: a push it made on leaving reached the shard first.
  EXPECT_EQ(ask(b, stats_atom::value).pushes, 0) << "closed without worker 0's rows";
  EXPECT_TRUE(ask(b, push_atom::value, grad(0, 0, 4.f)).applied) << "dropped as late";
  auto pull_value = [&](std::int64_t step) {
    caf::scoped_actor puller{*sys};
    puller->send(b, pull_atom::value, row_request{0, step, {5}});
    float v = NAN;
    puller->receive(
        [&](row_block& rb) { v = rb.values.at(0); },
        caf::after(std::chrono::seconds(10)) >>
            [&] { ADD_FAILURE() << "the pull for step " << step << " was never answered"; });
    return v;
  };
  EXPECT_FLOAT_EQ(pull_value(1), -3.f);  // the mean of 2 and 4
  EXPECT_TRUE(ask(b, push_atom::value, grad(0, 1, 1.f)).applied);
  EXPECT_FLOAT_EQ(pull_value(2), -4.f);
  EXPECT_EQ(ask(s, stats_atom::value).pushes, 2);
  caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

// CAF 0.17 drops a promise nobody delivers without a word: a barrier that ends while it holds a
// pull answers it, with the job's own reason when it has one.
TEST_F(sparse_test, a_sync_barrier_that_ends_answers_its_held_pulls) {
  for (auto reason : {caf::error{caf::exit_reason::kill},
                      make_error(errc::job_stopped, "stopped: signal TERM")}) {
    auto pair = sync_pair(*sys);
    auto s = pair.first, b = pair.second;
    caf::scoped_actor puller{*sys};
    puller->send(b, pull_atom::value, row_request{0, 1, {5}});  // step 0 never closes
    ask(b, stats_atom::value);  // the pull is held once this returns (mailbox order)
    puller->send_exit(b, reason);
    std::string got;
    puller->receive([&](row_block&) { got = "a row block"; },
                    [&](caf::error& e) { got = describe_error(e); },
                    caf::after(std::chrono::seconds(10)) >> [&] { got = "nothing"; });
    auto want = reason == caf::exit_reason::kill
                    ? "the sparse barrier stopped while pull of step 1 by worker 0 waited"
                    : "actrain.job_stopped: stopped: signal TERM";
    EXPECT_NE(got.find(want), std::string::npos) << got;
    caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
}

struct ctr_sets {
  ctr_spec spec;
  ctr_data train, test;
  double truth_auc = 0;
};

ctr_sets small_ctr() {
  ctr_sets c;
  c.spec.rows = 200000;
  c.spec.fields = 6;
  c.spec.ids_per_field = 200;
  c.spec.zipf = 1.1;
  c.spec.weight_sd = 0.6;
  c.spec.bias = -1.0;
  c.spec.seed = 5;
  c.train = make_synthetic_ctr(c.spec, 0);
  auto t = c.spec;
  t.rows = 20000;
  c.test = make_synthetic_ctr(t, c.spec.rows);
  c.truth_auc = roc_auc(c.test.true_logit, c.test.data.y);
  return c;
}

sparse_job lr_job(const char* mode) {
  sparse_job j;
  j.model.kind = "sparse_lr";
  j.optim.kind = "adagrad";
  j.optim.lr = 0.1f;
  j.mode = mode;
  j.workers = 3;
  j.shards = 2;
  j.batch = 128;
  j.epochs = 2;
  return j;
}

TEST_F(sparse_test, async_and_sync_logistic_regression_reach_the_ground_truth_auc) {
  auto c = small_ctr();
  auto train = std::make_shared<const sparse_dataset>(c.train.data);
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    auto r = run_sparse_job(*sys, lr_job(mode), train, c.test.data);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.samples, 2 * c.spec.rows);
    EXPECT_GT(c.truth_auc, 0.7);
    EXPECT_NEAR(r.test_auc, c.truth_auc, 0.01) << "truth " << c.truth_auc;
    EXPECT_LE(r.rows_held, 6 * 200);
    EXPECT_LE(r.rows_per_step, 6 * 128);  // at most one row per entry of the batch
  }
}

TEST_F(sparse_test, a_factorization_machine_trains_and_the_whole_table_baseline_matches_sparse) {
  auto c = small_ctr();
  auto train = std::make_shared<const sparse_dataset>(c.train.data);
  auto j = lr_job("async");
  j.model.kind = "fm";
  j.model.factors = 4;
  j.table.init_scale = 0.01f;
  auto fm = run_sparse_job(*sys, j, train, c.test.data);
  ASSERT_TRUE(fm.ok) << fm.error;
  EXPECT_NEAR(fm.test_auc, c.truth_auc, 0.015);
  auto lr = lr_job("async");
  lr.workers = 1;
  lr.epochs = 1;
  auto sparse = run_sparse_job(*sys, lr, train, c.test.data);
  lr.whole_table = true;
  auto whole = run_sparse_job(*sys, lr, train, c.test.data);
  ASSERT_TRUE(sparse.ok && whole.ok) << sparse.error << whole.error;
  EXPECT_DOUBLE_EQ(whole.rows_per_step, 1200.0);  // every row, every step
  EXPECT_LT(sparse.rows_per_step, whole.rows_per_step / 2);
  // One worker: the same updates in the same order (rows outside the batch get zero gradients,
  // which Adagrad leaves unchanged), so the same model.
  EXPECT_NEAR(sparse.test_auc, whole.test_auc, 1e-6);
}

TEST_F(sparse_test, fp16_and_topk_with_error_feedback_send_fewer_bytes_and_keep_the_auc) {
  auto c = small_ctr();
  auto train = std::make_shared<const sparse_dataset>(c.train.data);
  auto j = lr_job("async");
  auto plain = run_sparse_job(*sys, j, train, c.test.data);
  j.compression = "fp16";
  auto half = run_sparse_job(*sys, j, train, c.test.data);
  j.compression = "topk";
  j.topk_fraction = 0.1;
  auto topk = run_sparse_job(*sys, j, train, c.test.data);
  ASSERT_TRUE(plain.ok && half.ok && topk.ok) << plain.error << half.error << topk.error;
  // Per row pushed: 8 bytes of id, 8 of base version, 4 (float) or 2 (half) of value.
  // (plus 4 bytes of the dense gradient per step)
  EXPECT_NEAR(half.bytes_pushed_per_step / plain.bytes_pushed_per_step, 18.0 / 20.0, 0.01);
  EXPECT_LT(topk.bytes_pushed_per_step, 0.11 * plain.bytes_pushed_per_step);
  EXPECT_GT(topk.bytes_pushed_per_step, 0.09 * plain.bytes_pushed_per_step);
  EXPECT_NEAR(half.test_auc, plain.test_auc, 0.002);
  EXPECT_NEAR(topk.test_auc, plain.test_auc, 0.01);
  // Without error feedback the unsent 90% would be lost: the residual is what keeps the AUC.
  EXPECT_GT(topk.test_auc, c.truth_auc - 0.02);
}

TEST_F(sparse_test, a_lost_worker_s_rows_go_to_a_survivor_and_the_job_completes) {
  auto c = small_ctr();
  auto train = std::make_shared<const sparse_dataset>(c.train.data);
  for (const char* mode : {"async", "sync"}) {
    SCOPED_TRACE(mode);
    auto j = lr_job(mode);
    j.fail_worker = 1;
    j.fail_after_steps = 300;  // of about 521 per epoch: in its first epoch
    auto r = run_sparse_job(*sys, j, train, c.test.data);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.workers_lost, 1);
    // Its 300 steps were trained, and then its whole range again for both epochs.
    EXPECT_GE(r.samples, 2 * c.spec.rows);
    EXPECT_NEAR(r.test_auc, c.truth_auc, 0.01);
  }
  auto j = lr_job("async");
  j.workers = 1;
  j.fail_worker = 0;
  j.fail_after_steps = 5;
  auto r = run_sparse_job(*sys, j, train, c.test.data);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("every worker was lost; the last: worker 0 lost: "), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("injected fault at step 5"), std::string::npos) << r.error;
}

TEST_F(sparse_test, the_run_state_shows_tables_rows_per_step_and_hot_rows) {
  auto c = small_ctr();
  auto train = std::make_shared<const sparse_dataset>(c.train.data);
  observe::metrics_hub hub;
  auto j = lr_job("async");
  j.epochs = 1;
  j.hub = &hub;
  j.tick = std::chrono::milliseconds(20);
  auto r = run_sparse_job(*sys, j, train, c.test.data);
  ASSERT_TRUE(r.ok) << r.error;
  auto snap = hub.snapshot();
  EXPECT_TRUE(snap.finished);
  EXPECT_EQ(snap.samples, c.spec.rows);
  ASSERT_EQ(snap.tables.size(), 2u);
  std::int64_t held = 0;
  for (auto& t : snap.tables) held += t.rows_held;
  EXPECT_EQ(held, r.rows_held);
  EXPECT_NEAR(snap.rows_per_step, r.rows_per_step, 1e-9);
  EXPECT_NEAR(snap.bytes_per_push, r.bytes_pushed_per_step, 1e-9);
  // The most frequent value of field 0 (rank 0: id 0) is among the hottest rows of its shard.
  auto& t0 = snap.tables[static_cast<std::size_t>(table_shard_of(j.table, 2, 0))];
  ASSERT_FALSE(t0.hot_ids.empty());
  EXPECT_NE(std::find(t0.hot_ids.begin(), t0.hot_ids.end(), 0u), t0.hot_ids.end());
  EXPECT_EQ(snap.workers.size(), 3u);
  EXPECT_FALSE(snap.curve.empty());
  auto text = observe::prometheus_text(snap);
  EXPECT_NE(text.find("actrain_table_rows{table=\"table-0\""), std::string::npos);
  EXPECT_NE(text.find("actrain_table_hot_row_traffic{table="), std::string::npos);
  EXPECT_NE(text.find("actrain_rows_per_step "), std::string::npos);
  auto json = observe::status_json(snap);
  ASSERT_TRUE(json.contains("tables"));
  EXPECT_EQ(json["tables"].size(), 2u);
  EXPECT_EQ(json["tables"][0]["rows"].get<std::int64_t>(), snap.tables[0].rows_held);
}

TEST_F(sparse_test, malformed_half_values_are_refused) {
  sparse_shard_config sc;
  sc.table = small_table();
  auto s = sys->spawn(sparse_shard, sc);
  row_gradient g;
  g.ids = {1};
  g.base_versions = {0};
  g.half_values = {0x3c00, 0x3c00};  // 2 values for a row of 3
  EXPECT_NE(describe_error(ask_error(s, g)).find("2 half-precision values for 1 rows of 3"),
            std::string::npos);
  g.half_values = {0x3c00, 0x3c00, 0x7c00};  // +infinity
  EXPECT_NE(describe_error(ask_error(s, g)).find("NaN or infinity"), std::string::npos);
  g.half_values = {0x3c00, 0x3c00, 0x3c00};
  g.values = {1, 1, 1};
  EXPECT_NE(describe_error(ask_error(s, g)).find("float values too"), std::string::npos);
  EXPECT_EQ(ask(s, stats_atom::value).version, 0);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

TEST_F(sparse_test, an_id_outside_the_table_is_refused_before_training) {
  auto c = small_ctr();
  auto j = lr_job("async");
  j.table.rows = 10;
  auto train = std::make_shared<const sparse_dataset>(c.train.data);
  try {
    run_sparse_job(*sys, j, train, c.test.data);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(">= table.rows 10"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace actrain
