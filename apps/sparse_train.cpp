#include "apps/sparse_train.hpp"

#include <iomanip>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>

#include <actrain/data.hpp>
#include <actrain/errors.hpp>
#include <actrain/system.hpp>
#include "observe/http_server.hpp"

namespace actrain {

namespace {

std::uint64_t nonneg(std::int64_t v, const char* key) {
  if (v < 0) throw std::invalid_argument(std::string(key) + ": must be >= 0");
  return static_cast<std::uint64_t>(v);
}

}  // namespace

bool is_sparse_model_kind(const std::string& kind) {
  return kind == "sparse_lr" || kind == "fm";
}

sparse_job sparse_job_from_config(const app_config& cfg) {
  sparse_job j;
  j.model.kind = config_str(cfg, "model.kind", j.model.kind);
  j.model.factors = config_i32(cfg, "model.factors", j.model.factors);
  for (auto& [key, value] : cfg.model_options)
    throw std::invalid_argument("model." + key + ": not an option of " + j.model.kind +
                                " (factors only)");
  j.mode = config_str(cfg, "job.mode", j.mode);
  j.workers = config_i32(cfg, "job.workers", j.workers);
  j.shards = config_i32(cfg, "job.shards", j.shards);
  j.batch = config_i32(cfg, "job.batch", j.batch);
  j.epochs = config_i64(cfg, "job.epochs", j.epochs);
  j.seed = nonneg(config_i64(cfg, "job.seed", static_cast<std::int64_t>(j.seed)), "job.seed");
  j.window = config_i32(cfg, "job.window", j.window);
  j.compression = config_str(cfg, "job.compression", j.compression);
  j.topk_fraction = config_f64(cfg, "job.topk-fraction", j.topk_fraction);
  j.optim.kind = config_str(cfg, "optim.kind", j.optim.kind);
  j.optim.lr = static_cast<float>(config_f64(cfg, "optim.lr", j.optim.lr));
  j.optim.weight_decay =
      static_cast<float>(config_f64(cfg, "optim.weight-decay", j.optim.weight_decay));
  j.optim.eps = static_cast<float>(config_f64(cfg, "optim.eps", j.optim.eps));
  j.optim.initial_accumulator =
      static_cast<float>(config_f64(cfg, "optim.initial-accumulator", j.optim.initial_accumulator));
  j.optim.beta = static_cast<float>(config_f64(cfg, "optim.beta", j.optim.beta));
  j.optim.l1 = static_cast<float>(config_f64(cfg, "optim.l1", j.optim.l1));
  j.optim.l2 = static_cast<float>(config_f64(cfg, "optim.l2", j.optim.l2));
  for (auto& [key, value] : cfg.optim_options)
    throw std::invalid_argument("optim." + key + ": not an option of the sparse row rules");
  j.table.rows = nonneg(config_i64(cfg, "table.rows", 0), "table.rows");
  j.table.partition = config_str(cfg, "table.partition", j.table.partition);
  j.table.init_scale =
      static_cast<float>(config_f64(cfg, "table.init-scale", j.model.kind == "fm" ? 0.01 : 0.0));
  j.table.max_rows = config_i64(cfg, "table.max-rows", j.table.max_rows);
  j.table.seed = j.seed;
  j.table.dim = sparse_model_dim(j.model);
  return j;
}

sparse_job_data load_sparse_data(const app_config& cfg) {
  sparse_job_data out;
  auto kind = config_str(cfg, "data.kind", "");
  if (kind == "libsvm") {
    libsvm_options o;
    o.hash_buckets = nonneg(config_i64(cfg, "data.hash-buckets", 0), "data.hash-buckets");
    auto path = config_str(cfg, "data.path", "");
    if (path.empty()) throw std::invalid_argument("data.path: must name the training LIBSVM file");
    out.train = read_libsvm(path, o);
    auto test_path = config_str(cfg, "data.test-path", "");
    if (!test_path.empty()) {
      out.test = read_libsvm(test_path, o);
    } else {
      double f = config_f64(cfg, "data.test-fraction", 0.1);
      if (!(f > 0 && f < 1)) throw std::invalid_argument("data.test-fraction: must be in (0, 1)");
      auto test_rows = static_cast<std::int64_t>(out.train.rows * f);
      if (test_rows < 1 || test_rows >= out.train.rows)
        throw std::invalid_argument(path + ": too few rows to hold out a test set");
      auto all = std::move(out.train);
      out.train = slice_rows(all, 0, all.rows - test_rows);
      out.test = slice_rows(all, all.rows - test_rows, all.rows);
    }
    auto space = std::max(out.train.id_space, out.test.id_space);
    out.train.id_space = out.test.id_space = space;
  } else if (kind == "synthetic_ctr") {
    ctr_spec s;
    s.rows = config_i64(cfg, "data.rows", s.rows);
    s.fields = config_i32(cfg, "data.fields", s.fields);
    s.ids_per_field = config_i64(cfg, "data.ids-per-field", s.ids_per_field);
    s.zipf = config_f64(cfg, "data.zipf", s.zipf);
    s.weight_sd = config_f64(cfg, "data.weight-sd", s.weight_sd);
    s.bias = config_f64(cfg, "data.bias", s.bias);
    s.seed = nonneg(config_i64(cfg, "job.seed", static_cast<std::int64_t>(s.seed)), "job.seed");
    validate(s);
    auto test = s;
    test.rows = config_i64(cfg, "data.test-rows", s.rows / 10);
    validate(test);
    auto tr = make_synthetic_ctr(s, 0);
    auto te = make_synthetic_ctr(test, s.rows);
    out.truth_auc = roc_auc(te.true_logit, te.data.y);
    out.truth_log_loss = log_loss_from_logits(te.true_logit, te.data.y);
    out.train = std::move(tr.data);
    out.test = std::move(te.data);
  } else {
    throw std::invalid_argument(
        "data.kind: sparse models read \"libsvm\" or \"synthetic_ctr\", got \"" + kind + "\"");
  }
  return out;
}

int sparse_train(app_config& cfg, const std::string& http, std::ostream& out, std::ostream& err) {
  sparse_job job;
  sparse_job_data data;
  std::optional<observe::http_address> http_at;
  try {
    if (!http.empty()) http_at = observe::parse_http_address(http);
    job = sparse_job_from_config(cfg);
    data = load_sparse_data(cfg);
    if (job.table.rows == 0) job.table.rows = data.train.id_space;
    validate(job);
  } catch (const std::exception& e) {
    err << "actrain train: " << e.what() << "\n";
    return 2;
  }
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  out << "job: " << describe(job.model) << ", " << job.mode << ", " << job.workers << " worker(s), "
      << job.shards << " sparse shard(s), " << job.optim.kind << " lr " << job.optim.lr
      << ", batch " << job.batch << ", " << job.epochs << " epoch(s), " << data.train.rows
      << " training rows, " << data.train.nnz() << " entries, table of " << job.table.rows
      << " ids x " << job.table.dim << std::endl;
  observe::metrics_hub hub;
  std::unique_ptr<observe::http_server> server;
  if (http_at) {
    server = std::make_unique<observe::http_server>(hub, http_at->host, http_at->port);
    server->start();
    out << "dashboard: http://" << http_at->host << ":" << server->port()
        << "/  (metrics: /metrics, status: /status)" << std::endl;
    job.hub = &hub;
  }
  sparse_result r;
  try {
    auto train = std::make_shared<const sparse_dataset>(std::move(data.train));
    r = run_sparse_job(sys, job, train, data.test);
  } catch (const std::exception& e) {
    err << "actrain train: " << e.what() << "\n";
    return 2;
  }
  if (server) server->stop();
  if (!r.ok) {
    err << "actrain train: job failed: " << r.error << "\n";
    return 1;
  }
  out << std::setprecision(6) << "tables: " << r.rows_held << " rows held ("
      << r.memory_bytes / (1 << 20) << " MiB), " << static_cast<long>(r.rows_per_step)
      << " rows and " << static_cast<long>(r.bytes_per_step) << " bytes per step ("
      << static_cast<long>(r.bytes_pushed_per_step) << " of gradients pushed, " << job.compression
      << ")";
  if (!r.tables.empty() && !r.tables.front().hot_ids.empty()) {
    out << ", hottest ids:";
    for (std::size_t i = 0; i < std::min<std::size_t>(5, r.tables.front().hot_ids.size()); ++i)
      out << " " << r.tables.front().hot_ids[i];
    out << " (shard 0)";
  }
  out << "\n";
  out << "result: test AUC " << r.test_auc << ", test log loss " << r.test_log_loss
      << ", test accuracy " << r.test_accuracy;
  if (data.truth_auc >= 0)
    out << " (ground truth: AUC " << data.truth_auc << ", log loss " << data.truth_log_loss << ")";
  out << ", train loss " << r.train_loss << ", " << static_cast<long>(r.samples_per_s)
      << " samples/s over " << r.seconds << " s" << std::endl;
  return 0;
}

}  // namespace actrain
