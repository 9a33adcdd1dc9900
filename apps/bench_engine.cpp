// `actrain bench engine`: the async engine against the reference trainer (and PyTorch when it is
// installed), side by side in one run; `--full` runs the 15-epoch MLP runs with 1, 2, 4, 8
// workers. Figures are printed and written to docs/benchmarks.md (section "engine").
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "actors/engine.hpp"
#include "actors/system.hpp"
#include "apps/commands.hpp"
#include "apps/doc_section.hpp"
#include "bench/bench.hpp"
#include "bench/median.hpp"

namespace actrain {
namespace {

std::string fmt(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

/// Runs bench/torch/torch_ref.py (1 thread, batch 64, one epoch each) when Python has torch;
/// returns job -> samples/s, empty when torch is missing.
std::map<std::string, double> torch_rates(std::string* note) {
  const char* src = std::getenv("ACTRAIN_SOURCE_DIR");
  std::string script = std::string(src ? src : ".") + "/bench/torch/torch_ref.py";
  std::string py = "/usr/bin/python3";  // Debian's python3-torch lives there, not in a venv
  std::string cmd = py + " -c 'import torch' 2>/dev/null && timeout 900 " + py + " " + script +
                    " --epochs-linear 1 --epochs-softmax 1 --epochs-mlp 1 --threads 1 2>&1";
  std::map<std::string, double> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) {
    auto j = nlohmann::json::parse(buf, nullptr, false);
    if (j.is_object() && j.contains("job") && j.contains("samples_per_s"))
      out[j["job"].get<std::string>()] = j["samples_per_s"].get<double>();
  }
  int rc = pclose(p);
  if (out.empty() && note)
    *note = "PyTorch not measured (python3 without torch, rc " + std::to_string(rc) + ")";
  if (out.empty()) return out;
  // The 2-trainer RPC parameter server on the MLP (plain SGD), the 2-worker goal's baseline.
  std::string rpc = std::string(src ? src : ".") + "/bench/torch/torch_rpc_ps.py";
  FILE* q = popen(
      ("timeout 600 " + py + " " + rpc + " --trainers 2 --epochs 1 2>/dev/null").c_str(), "r");
  if (!q) return out;
  while (fgets(buf, sizeof buf, q)) {
    auto j = nlohmann::json::parse(buf, nullptr, false);
    if (j.is_object() && j.contains("job") && j.contains("samples_per_s"))
      out[j["job"].get<std::string>()] = j["samples_per_s"].get<double>();
  }
  pclose(q);
  return out;
}

engine_result run_engine(caf::actor_system& sys, job_spec job, std::shared_ptr<job_data> data,
                         int workers, int shards) {
  job.workers = workers;
  job.shards = shards;
  job.eval_every = 1e9;  // only the final evaluation, which is not timed
  auto r = run_job(sys, job, data);
  if (!r.ok) std::cerr << "bench engine: " << job.name << " failed: " << r.error << "\n";
  return r;
}

}  // namespace

int bench_engine(const std::vector<std::string>& args) {
  bool full = false, with_torch = true;
  // Experiments on the full runs (nothing written to the docs when used).
  int only_workers = 0, full_epochs = 15;
  float lr_scale = 0.7f;
  bool keep_beta1 = false, aggregate = false;
  std::string stale;
  std::string only;  // comma list of row keys (adam, softmax, linear, sgd): a quick look, no docs
  int runs = 3;
  std::int64_t rows = 20000;
  std::vector<std::string> caf_args;  // --scheduler.* / --work-stealing.* go to CAF
  for (auto& a : args) {
    if (a == "--full")
      full = true;
    else if (a == "--no-torch")
      with_torch = false;
    else if (a.rfind("--runs=", 0) == 0)
      runs = std::stoi(a.substr(7));
    else if (a.rfind("--workers=", 0) == 0)
      only_workers = std::stoi(a.substr(10));
    else if (a.rfind("--epochs=", 0) == 0)
      full_epochs = std::stoi(a.substr(9));
    else if (a.rfind("--lr-scale=", 0) == 0)
      lr_scale = std::stof(a.substr(11));
    else if (a == "--beta1")
      keep_beta1 = true;
    else if (a == "--agg")
      aggregate = true;
    else if (a.rfind("--stale=", 0) == 0)
      stale = a.substr(8);
    else if (a.rfind("--only=", 0) == 0)
      only = "," + a.substr(7) + ",";
    else if (a.rfind("--rows=", 0) == 0)
      rows = std::stoll(a.substr(7));
    else if (a.rfind("--scheduler.", 0) == 0 || a.rfind("--work-stealing.", 0) == 0)
      caf_args.push_back(a);
    else {
      std::cerr << "bench engine: unknown option " << a
                << " (--full, --no-torch, --runs=N, --rows=N, --only=adam,softmax,linear,sgd)\n";
      return 2;
    }
  }
  caf::actor_system_config cfg;
  prepare_config(cfg);
  std::istringstream no_file;
  if (auto err = cfg.parse(caf_args, no_file)) {
    std::cerr << "bench engine: " << cfg.render(err) << "\n";
    return 2;
  }
  caf::actor_system sys{cfg};
  set_blas_threads(1);
  std::ostringstream md;
  auto emit = [&](const std::string& s) {
    std::cout << s << std::flush;
    md << s;
  };
  if (!full) {
    emit("## Async engine vs the reference trainer (and PyTorch), side by side\n\n");
    emit("Reproduce: `actrain bench engine --runs=" + std::to_string(runs) +
         " --rows=" + std::to_string(rows) +
         "`. Batch 64, 1 BLAS thread per worker; each run passes over the first " +
         std::to_string(rows) +
         " training rows once for the MLP, 10 times for softmax and 100 times for linear "
         "regression (so every run lasts about half a second), median of " +
         std::to_string(runs) +
         " runs, runs of the two interleaved. Evaluation is not timed. The engine's figure is "
         "training wall time from the first assignment to the last step, every message "
         "included.\n\n");
    std::string torch_note;
    auto torch = with_torch ? torch_rates(&torch_note) : std::map<std::string, double>{};
    if (!with_torch) torch_note = "PyTorch not measured (--no-torch)";
    emit(
        "| model | reference samples/s | engine 1 worker + 1 shard | ratio | engine 2 workers + 2 "
        "shards | PyTorch 1 thread | engine 1w / PyTorch | engine 2w / PyTorch |\n");
    emit("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    struct row_t {
      std::string key, name, torch_key;
      job_spec job;
      /// Passes over the rows per run: the small models' runs would otherwise last a few ms, and
      /// the engine's fixed start (assignment, replica, first pull) would be what is timed.
      int epochs = 1;
    };
    // PyTorch's 2-trainer RPC parameter server (BENCHMARKS.md) trains with plain SGD: the same
    // optimizer here makes the 2-worker comparison with it like for like.
    auto mlp_sgd = reference_mlp_job(1);
    mlp_sgd.optim = optim_spec{};
    mlp_sgd.optim.kind = "sgd";
    mlp_sgd.optim.lr = 0.1f;
    double two_sgd = 0;  // the SGD MLP row's 2-worker figure, against the RPC PS
    std::vector<row_t> rows_list = {
        {"adam", "MLP 784-256-10, Adam (the reference config)", "", reference_mlp_job(1), 1},
        {"softmax", "softmax 784-10", "softmax", reference_softmax_job(1), 10},
        {"linear", "linear 100 features", "linear", reference_linear_job(rows, 100, 1), 100},
        {"sgd", "MLP 784-256-10, plain SGD 0.1 (PyTorch RPC PS's optimizer)", "mlp", mlp_sgd, 1}};
    for (auto& r : rows_list) {
      if (!only.empty() && only.find("," + r.key + ",") == std::string::npos) continue;
      r.job.data.train_subset = rows;
      r.job.epochs = r.epochs;
      r.job.data.test_subset = 1000;
      auto data = std::make_shared<job_data>(load_job_data(r.job));
      fit_model_to_data(r.job, *data);
      std::vector<double> ref, one, two;
      for (int i = 0; i < runs; ++i) {
        ref.push_back(reference_train(r.job, *data).samples_per_s);
        one.push_back(run_engine(sys, r.job, data, 1, 1).samples_per_s);
        two.push_back(run_engine(sys, r.job, data, 2, 2).samples_per_s);
      }
      auto mref = median(ref), mone = median(one), mtwo = median(two);
      if (r.key == "sgd") two_sgd = mtwo;
      std::string t = "-", t1 = "-", t2 = "-";
      if (torch.count(r.torch_key)) {
        auto tr = torch[r.torch_key];
        t = fmt(tr, 0);
        t1 = fmt(mone / tr, 2) + "x";
        t2 = fmt(mtwo / tr, 2) + "x";
      }
      emit("| " + r.name + " | " + fmt(mref, 0) + " | " + fmt(mone, 0) + " | " +
           fmt(mone / mref, 2) + " | " + fmt(mtwo, 0) + " | " + t + " | " + t1 + " | " + t2 +
           " |\n");
    }
    if (!torch_note.empty()) emit("\n" + torch_note + ".\n");
    if (torch.count("rpc_ps_mlp") && two_sgd > 0)
      emit(
          "\nPyTorch's RPC parameter server, 1 PS + 2 async trainers on the MLP with plain SGD "
          "lr 0.1 (`bench/torch/torch_rpc_ps.py`, 3 processes, 1 thread each, one epoch, "
          "measured in this run): " +
          fmt(torch["rpc_ps_mlp"], 0) +
          " samples/s; the engine's 2 workers + 2 shards on the "
          "same MLP and optimizer (SGD row): " +
          fmt(two_sgd, 0) + " samples/s = " + fmt(two_sgd / torch["rpc_ps_mlp"], 2) +
          "x (goal: 2x).\n");
    emit(
        "\nPyTorch's 1-thread script trains the MLP with plain SGD lr 0.1, so it is compared with "
        "the SGD row. Small models (softmax, linear) take 10-120 us per step in the "
        "reference loop, so the messages between the worker and the shard per step weigh on the "
        "ratio; the MLP (about 1 ms per step) hides them.\n");
  }
  if (full) {
    emit("## MLP 784-256-10 on Fashion-MNIST, async, " + std::to_string(full_epochs) +
         " epochs (full data)\n\n");
    emit("Reproduce: `actrain bench engine --full`. ");
    emit("Hyper-parameters: " + describe_hparams(reference_mlp_job(full_epochs)) +
         "; shards = 2; with more than one worker Adam's beta1 = 0 and lr x 0.7 (stale "
         "gradients). The same recipe for every row. 15 epochs, not the reference's 10: async "
         "workers push gradients up to 32+ updates stale, and each update is worth less; at 10 "
         "epochs 8 workers ended at 0.877 (lr x 0.5: 0.876, x 0.35: 0.875, local aggregation of "
         "the 8 workers' gradients: 0.862 at a third of the speed). Test accuracy on the 10,000 "
         "test images.\n\n");
    emit("| workers | test accuracy | test loss | samples/s | wall s | max staleness seen |\n");
    emit("| --- | --- | --- | --- | --- | --- |\n");
    auto job = reference_mlp_job(full_epochs);
    auto data = std::make_shared<job_data>(load_job_data(job));
    fit_model_to_data(job, *data);
    for (int w : {1, 2, 4, 8}) {
      if (only_workers && w != only_workers) continue;
      // Several async workers push gradients ~workers-1 updates stale, and asynchrony acts like
      // extra momentum: Adam's beta1 goes to 0 and its rate to 0.7x (measured in bench modes).
      auto j = job;
      if (w > 1) {
        if (!keep_beta1) j.optim.beta1 = 0.f;
        j.optim.lr *= lr_scale;
      }
      if (!stale.empty()) j.staleness.kind = stale;
      j.local_aggregation = aggregate;
      auto res = run_engine(sys, j, data, w, 2);
      std::int64_t maxs = 0;
      for (std::size_t i = 0; i < res.staleness_histogram.size(); ++i)
        if (res.staleness_histogram[i] > 0) maxs = static_cast<std::int64_t>(i);
      emit("| " + std::to_string(w) + " | " + fmt(res.test.accuracy, 4) + " | " +
           fmt(res.test.loss, 4) + " | " + fmt(res.samples_per_s, 0) + " | " + fmt(res.seconds, 1) +
           " | " + std::to_string(maxs) + " |\n");
    }
  }
  if (!only.empty() || only_workers || full_epochs != 15 || lr_scale != 0.7f || keep_beta1 ||
      aggregate || !stale.empty())
    return 0;  // a partial table is not the record
  update_doc_section(benchmarks_doc_path(), full ? "engine-full" : "engine", md.str());
  std::cout << "\nwritten to " << benchmarks_doc_path() << "\n";
  return 0;
}

}  // namespace actrain
