// `actrain bench sparse`: accuracy against a known ground truth, speed against PyTorch and
// against a whole-table (dense) pull, and the memory of a large declared table.
#include "bench/bench_sparse.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <actrain/sparse_engine.hpp>
#include <actrain/system.hpp>
#include "actors/sparse_shard.hpp"
#include "bench/doc_section.hpp"
#include "bench/torch_script.hpp"

namespace actrain {
namespace {

struct options {
  std::int64_t rows = 2000000;
  std::int64_t test_rows = 200000;
  int fields = 20;
  std::int64_t ids_per_field = 50000;
  double zipf = 1.6;
  std::int64_t speed_rows = 1000000;
  bool torch = true;
  bool doc = true;
};

options parse(const std::vector<std::string>& args) {
  options o;
  for (auto& a : args) {
    auto val = [&](const char* p) { return a.substr(std::string(p).size()); };
    if (a.rfind("--rows=", 0) == 0)
      o.rows = std::stoll(val("--rows="));
    else if (a.rfind("--test-rows=", 0) == 0)
      o.test_rows = std::stoll(val("--test-rows="));
    else if (a.rfind("--fields=", 0) == 0)
      o.fields = std::stoi(val("--fields="));
    else if (a.rfind("--ids-per-field=", 0) == 0)
      o.ids_per_field = std::stoll(val("--ids-per-field="));
    else if (a.rfind("--zipf=", 0) == 0)
      o.zipf = std::stod(val("--zipf="));
    else if (a.rfind("--speed-rows=", 0) == 0)
      o.speed_rows = std::stoll(val("--speed-rows="));
    else if (a == "--no-torch")
      o.torch = false;
    else if (a == "--no-doc")
      o.doc = false;
    else
      throw std::invalid_argument(a);
  }
  if (o.rows < 1000 || o.test_rows < 100 || o.speed_rows < 1000)
    throw std::invalid_argument("--rows >= 1000, --test-rows >= 100, --speed-rows >= 1000");
  return o;
}

std::size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

struct sets {
  ctr_spec spec;
  std::shared_ptr<const sparse_dataset> train;
  sparse_dataset test;
  double truth_auc = 0, truth_log_loss = 0;
};

sets make_sets(const options& o, std::int64_t rows, std::int64_t ids_per_field) {
  sets s;
  s.spec.rows = rows;
  s.spec.fields = o.fields;
  s.spec.ids_per_field = ids_per_field;
  s.spec.zipf = o.zipf;
  auto tr = make_synthetic_ctr(s.spec, 0);
  auto t = s.spec;
  t.rows = o.test_rows;
  auto te = make_synthetic_ctr(t, rows);
  s.truth_auc = roc_auc(te.true_logit, te.data.y);
  s.truth_log_loss = log_loss_from_logits(te.true_logit, te.data.y);
  s.train = std::make_shared<const sparse_dataset>(std::move(tr.data));
  s.test = std::move(te.data);
  return s;
}

sparse_job base_job(const char* model, const char* rule, const char* mode, int workers,
                    int shards) {
  sparse_job j;
  j.model.kind = model;
  j.model.factors = 8;
  j.optim.kind = rule;
  j.optim.lr = 0.1f;
  if (std::string(rule) == "ftrl") {
    j.optim.beta = 1e-3f;
    j.optim.l1 = 1e-5f;
  }
  if (std::string(model) == "fm") {
    j.table.init_scale = 0.01f;
    j.optim.lr = 0.05f;
  }
  j.mode = mode;
  j.workers = workers;
  j.shards = shards;
  j.batch = 256;
  return j;
}

std::string mib(double bytes) {
  return fmt(bytes / (1 << 20), 1);
}

}  // namespace

int bench_sparse(const std::vector<std::string>& args) {
  options o;
  try {
    o = parse(args);
  } catch (const std::exception& e) {
    std::cerr << "actrain bench sparse: bad option " << e.what() << "\n";
    return 2;
  }
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  std::ostringstream doc;
  auto cores = std::thread::hardware_concurrency();
  doc << "Command: `actrain bench sparse` (" << cores << " cores, shared). Synthetic CTR data "
      << "(`make_synthetic_ctr`): " << o.fields << " fields of " << o.ids_per_field << " values ("
      << o.fields * o.ids_per_field << " ids), Zipf exponent " << o.zipf
      << ", true weights N(0, 0.5^2), bias -1.5; batch 256, 1 epoch.\n\n";

  // (1) accuracy against the ground truth
  std::cout << "sparse: generating " << o.rows << " + " << o.test_rows << " rows" << std::endl;
  auto big = make_sets(o, o.rows, o.ids_per_field);
  doc << "### Accuracy against the ground truth (" << o.rows << " training rows, " << o.test_rows
      << " test rows; ground truth: test AUC " << fmt(big.truth_auc, 4) << ", log loss "
      << fmt(big.truth_log_loss, 4) << ")\n\n"
      << "| model | rule | mode | compression | workers x shards | test AUC | AUC - truth | log "
         "loss | samples/s | rows / step | bytes / step | gradient bytes / step | rows held |\n"
      << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  struct run {
    const char *model, *rule, *mode, *compression;
    double fraction;
  };
  double plain_auc = 0, plain_pushed = 0;
  std::ostringstream compression_note;
  for (auto r :
       {run{"sparse_lr", "adagrad", "async", "none", 0},
        run{"sparse_lr", "adagrad", "sync", "none", 0},
        run{"sparse_lr", "adagrad", "async", "fp16", 0},
        run{"sparse_lr", "adagrad", "async", "topk", 0.01},
        run{"sparse_lr", "ftrl", "async", "none", 0}, run{"fm", "adagrad", "async", "none", 0}}) {
    auto j = base_job(r.model, r.rule, r.mode, 4, 2);
    j.compression = r.compression;
    if (r.fraction > 0) j.topk_fraction = r.fraction;
    auto res = run_sparse_job(sys, j, big.train, big.test);
    if (!res.ok) {
      std::cerr << "actrain bench sparse: " << res.error << "\n";
      return 1;
    }
    std::ostringstream row;
    std::string comp = r.compression;
    if (comp == "topk") comp += " " + fmt(r.fraction * 100, 0) + "%";
    row << "| " << describe(j.model) << " | " << r.rule << " | " << r.mode << " | " << comp
        << " | 4 x 2 | " << fmt(res.test_auc, 4) << " | " << fmt(res.test_auc - big.truth_auc, 4)
        << " | " << fmt(res.test_log_loss, 4) << " | " << fmt(res.samples_per_s, 0) << " | "
        << fmt(res.rows_per_step, 0) << " | " << fmt(res.bytes_per_step, 0) << " | "
        << fmt(res.bytes_pushed_per_step, 0) << " | " << res.rows_held << " |\n";
    std::string mode = r.mode, rule = r.rule, model = r.model;
    if (model == "sparse_lr" && rule == "adagrad" && mode == "async") {
      if (comp == "none") {
        plain_auc = res.test_auc;
        plain_pushed = res.bytes_pushed_per_step;
      } else {
        compression_note << comp << ": AUC " << fmt(res.test_auc - plain_auc, 4)
                         << " against uncompressed, sending "
                         << fmt(100 * res.bytes_pushed_per_step / std::max(plain_pushed, 1e-9), 1)
                         << "% of its gradient bytes. ";
      }
    }
    std::cout << row.str() << std::flush;
    doc << row.str();
  }

  doc << "\nBytes per step: payload bytes a worker sends and receives per step (row ids, row "
         "versions, values, the dense bias; gradient bytes: its pushes). "
      << compression_note.str() << "\n";

  // (2) speed against PyTorch, same rows, same batch, one worker
  auto small = make_sets(o, o.speed_rows, o.ids_per_field);
  auto dir =
      std::filesystem::temp_directory_path() / ("actrain-bench-sparse-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto train_file = (dir / "train.svm").string(), test_file = (dir / "test.svm").string();
  write_libsvm(*small.train, train_file);
  write_libsvm(small.test, test_file);
  doc << "\n### Speed against PyTorch (" << o.speed_rows << " training rows, 1 epoch, batch 256, "
      << "Adagrad lr 0.1 / 0.05 (fm), same rows and order of magnitude of work)\n\n"
      << "actrain: 1 worker (its own thread) and 1 sparse shard plus the dense shard (CAF's "
         "scheduler), so up to 2 cores; samples per CPU-second divides by the process's CPU "
         "time (every thread). PyTorch 1.13: 1 thread (`torch.set_num_threads(1)`), the "
         "training loop timed alone (parsing excluded). The ratio is actrain / PyTorch.\n\n"
      << "| model | actrain samples/s | actrain samples per CPU-s | actrain AUC | PyTorch "
         "samples/s | PyTorch AUC | ratio samples/s | ratio per CPU-s |\n"
      << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const char* model : {"sparse_lr", "fm"}) {
    auto j = base_job(model, "adagrad", "async", 1, 1);
    auto res = run_sparse_job(sys, j, small.train, small.test);
    if (!res.ok) {
      std::cerr << "actrain bench sparse: " << res.error << "\n";
      return 1;
    }
    double a_rate = res.samples_per_s, a_cpu = res.samples / std::max(res.cpu_seconds, 1e-9);
    double t_rate = 0, t_auc = 0;
    if (o.torch) {
      std::string m = std::string(model) == "fm" ? "fm --dim 8 --init-scale 0.01" : "lr";
      auto lines = torch_json_lines(
          "torch_sparse.py --train " + train_file + " --test " + test_file + " --id-space " +
          std::to_string(small.train->id_space) + " --model " + m + " --optim adagrad --lr " +
          fmt(j.optim.lr, 2) + " --batch 256 --epochs 1 --threads 1");
      for (auto& l : lines)
        if (l.contains("samples_per_s")) {
          t_rate = l["samples_per_s"].get<double>();
          t_auc = l["test_auc"].get<double>();
        }
    }
    std::ostringstream row;
    row << "| " << describe(j.model) << " | " << fmt(a_rate, 0) << " | " << fmt(a_cpu, 0) << " | "
        << fmt(res.test_auc, 4) << " | " << (t_rate > 0 ? fmt(t_rate, 0) : "n/a (no torch)")
        << " | " << (t_rate > 0 ? fmt(t_auc, 4) : "n/a") << " | "
        << (t_rate > 0 ? fmt(a_rate / t_rate, 2) + "x" : "n/a") << " | "
        << (t_rate > 0 ? fmt(a_cpu / t_rate, 2) + "x" : "n/a") << " |\n";
    std::cout << row.str() << std::flush;
    doc << row.str();
  }
  std::filesystem::remove_all(dir);

  // (3) the sparse path against pulling the whole table every step
  auto narrow = make_sets(o, std::min<std::int64_t>(o.speed_rows, 200000), 1000);
  doc << "\n### Sparse rows against the whole table every step (" << o.fields
      << " x 1000 = " << o.fields * 1000 << " ids, " << narrow.train->rows
      << " rows, sparse_lr, 1 worker, 1 shard; both sides in this process on the same cores, the "
         "same batches)\n\n"
      << "| pull | samples/s | rows / step | bytes / step | test AUC |\n| --- | --- | --- | --- | "
         "--- |\n";
  double rates[2] = {0, 0}, bytes[2] = {0, 0};
  for (bool whole : {false, true}) {
    auto j = base_job("sparse_lr", "adagrad", "async", 1, 1);
    j.whole_table = whole;
    auto res = run_sparse_job(sys, j, narrow.train, narrow.test);
    if (!res.ok) {
      std::cerr << "actrain bench sparse: " << res.error << "\n";
      return 1;
    }
    rates[whole] = res.samples_per_s;
    bytes[whole] = res.bytes_per_step;
    std::ostringstream row;
    row << "| " << (whole ? "whole table (dense)" : "batch rows (sparse)") << " | "
        << fmt(res.samples_per_s, 0) << " | " << fmt(res.rows_per_step, 0) << " | "
        << fmt(res.bytes_per_step, 0) << " | " << fmt(res.test_auc, 4) << " |\n";
    std::cout << row.str() << std::flush;
    doc << row.str();
  }
  doc << "\nSparse / whole table: " << fmt(rates[0] / std::max(rates[1], 1e-9), 1)
      << "x the samples/s with " << fmt(bytes[0] / std::max(bytes[1], 1e-9) * 100, 2)
      << "% of the bytes per step.\n";

  // (4) memory of a large declared table
  {
    sparse_shard_config c;
    c.table.rows = 100000000;
    c.table.dim = 16;
    c.table.init_scale = 0.01f;
    c.optim.kind = "adagrad";
    auto before = rss_bytes();
    auto shard = sys.spawn(sparse_shard, c);
    caf::scoped_actor self{sys};
    std::mt19937_64 rng(1);
    std::int64_t held = 0, mem = 0;
    for (int chunk = 0; chunk < 100; ++chunk) {
      row_request r{0, chunk, {}};
      for (int i = 0; i < 10000; ++i) r.ids.push_back(rng() % c.table.rows);
      self->request(shard, std::chrono::seconds(60), pull_atom::value, std::move(r))
          .receive([](row_block&) {}, [](caf::error&) {});
    }
    self->request(shard, std::chrono::seconds(60), stats_atom::value)
        .receive(
            [&](table_stats& s) {
              held = s.rows_held;
              mem = s.memory_bytes;
            },
            [](caf::error&) {});
    auto after = rss_bytes();
    self->send_exit(shard, caf::exit_reason::user_shutdown);
    doc << "\n### Memory: a table of 10^8 rows x 16 declared, " << held
        << " rows touched (Adagrad state)\n\n"
        << "Process RSS grew by " << mib(static_cast<double>(after) - static_cast<double>(before))
        << " MiB; the shard counts " << mib(static_cast<double>(mem))
        << " MiB of rows, state and map (a dense table would need " << mib(100000000.0 * 16 * 4 * 2)
        << " MiB).\n";
    std::cout << "memory: " << held << " rows, RSS +" << mib(static_cast<double>(after - before))
              << " MiB" << std::endl;
  }
  if (o.doc) {
    update_doc_section(benchmarks_doc_path(), "sparse", doc.str());
    std::cout << "wrote docs/benchmarks.md (section sparse)\n";
  } else {
    std::cout << doc.str();
  }
  return 0;
}

}  // namespace actrain
