// `actrain bench staleness`: async training with each staleness rule at 1/2/4/8 workers (and
// with a 4x straggler) against sync at the same worker count and the reference trainer, for SGD
// with momentum and for Adam; PyTorch's RPC parameter server with momentum is the peer. Writes
// the tables to docs/benchmarks.md (section "staleness") and accuracy-vs-samples plots to
// docs/img/staleness-*.svg.
#include "bench/bench_staleness.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include <actrain/engine.hpp>
#include <actrain/reference_trainer.hpp>
#include <actrain/system.hpp>
#include "bench/bench.hpp"
#include "bench/doc_section.hpp"
#include "bench/torch_script.hpp"
#include "observe/svg_plot.hpp"

namespace actrain {
namespace {

/// A staleness rule as the study names it.
struct rule_t {
  std::string name;
  staleness_policy policy;
  std::string pull = "auto";  ///< job.async-pull
};

/// A rule on its own: every push its own update unless `buffer` says otherwise, and the live
/// weights evaluated (no average) unless `average` says otherwise.
staleness_policy policy(std::string kind, std::string momentum, float dc, int buffer = 1,
                        std::int64_t average = 0) {
  staleness_policy p;
  p.kind = std::move(kind);
  p.momentum = std::move(momentum);
  p.delay_compensation = dc;
  p.buffer = buffer;
  p.average = average;
  return p;
}

/// The rules studied; the last is the default (staleness_policy{}).
std::vector<rule_t> study_rules() {
  return {{"none (explicit momentum)", policy("none", "explicit", 0)},
          {"inverse step", policy("inverse", "explicit", 0)},
          {"sqrt step + corrected", policy("sqrt", "corrected", 0)},
          {"delay compensation", policy("none", "explicit", 2)},
          {"sqrt step + corrected + dc", policy("sqrt", "corrected", 2)},
          {"corrected momentum + buffer 2", policy("none", "corrected", 0, 2)},
          {"corrected momentum + buffer = workers", policy("none", "corrected", 0, 0)},
          {"corrected momentum", policy("none", "corrected", 0)},
          {"corrected momentum + average", policy("none", "corrected", 0, 1, 100)},
          {"damped step + corrected", policy("damped", "corrected", 0)},
          {"default rule, prefetched pull", staleness_policy{}, "prefetch"},
          {"default rule, pull with the push", staleness_policy{}, "with-push"},
          {"default rule, in turn", staleness_policy{}, "in-turn"},
          {"default: damped step + corrected + average", staleness_policy{}}};
}

struct options {
  int epochs = 10;
  std::vector<int> workers{1, 2, 4, 8};
  std::vector<std::string> optims{"momentum", "adam"};
  std::string schedule = "constant";
  bool torch = true;
  bool doc = true;
};

std::vector<std::string> parse_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

options parse(const std::vector<std::string>& args) {
  options o;
  for (auto& a : args) {
    if (a.rfind("--epochs=", 0) == 0)
      o.epochs = std::stoi(a.substr(9));
    else if (a.rfind("--workers=", 0) == 0)
      o.workers = parse_int_list(a.substr(10));
    else if (a.rfind("--optims=", 0) == 0)
      o.optims = parse_words(a.substr(9));
    else if (a.rfind("--schedule=", 0) == 0)
      o.schedule = a.substr(11);
    else if (a == "--no-torch")
      o.torch = false;
    else if (a == "--no-doc")
      o.doc = false;
    else
      throw std::invalid_argument(a);
  }
  for (auto& k : o.optims)
    if (k != "momentum" && k != "adam") throw std::invalid_argument("--optims=" + k);
  if (o.epochs < 1 || o.workers.empty()) throw std::invalid_argument("--epochs / --workers");
  return o;
}

/// The study's job: the MLP 784-256-10 on Fashion-MNIST with SGD lr 0.1 momentum 0.9, or Adam
/// lr 1e-3 with its default betas; a cosine schedule, when asked, spans the job's updates.
job_spec study_job(const options& o, const std::string& optim) {
  auto job = reference_mlp_job(o.epochs);
  job.eval_every = 1;
  job.shards = 2;
  job.optim = optim_spec{};
  job.optim.kind = optim;
  job.optim.lr = optim == "adam" ? 1e-3f : 0.1f;
  job.optim.momentum = 0.9f;
  job.optim.schedule = o.schedule;
  job.optim.total_steps = o.schedule == "cosine" ? 60000 / job.batch * o.epochs : 0;
  return job;
}

/// One run: its name, worker count and the evaluations (samples, test accuracy).
struct run_t {
  std::string name;
  int workers = 0;
  bool straggler = false;
  bool ok = false;
  std::string error;
  double accuracy = 0;
  double samples_per_s = 0;
  double mean_staleness = 0;
  std::vector<std::pair<double, double>> curve;  ///< (samples, test accuracy)
};

run_t from_result(std::string name, int workers, const engine_result& r) {
  run_t out;
  out.name = std::move(name);
  out.workers = workers;
  out.ok = r.ok;
  out.error = r.error;
  out.accuracy = r.test.accuracy;
  out.samples_per_s = r.samples_per_s;
  for (auto& s : r.shards) out.mean_staleness += s.mean_staleness / r.shards.size();
  for (auto& p : r.history) out.curve.emplace_back(double(p.samples), p.test_accuracy);
  return out;
}

void print(const run_t& r) {
  std::cout << "  " << r.name << " x" << r.workers << (r.straggler ? " (straggler)" : "")
            << ": accuracy " << fmt(r.accuracy, 4) << ", " << fmt(r.samples_per_s, 0)
            << " samples/s, mean staleness " << fmt(r.mean_staleness, 2)
            << (r.ok ? "" : ", FAILED: " + r.error) << "\n"
            << std::flush;
}

run_t run_engine(caf::actor_system& sys, job_spec job, const std::shared_ptr<job_data>& data,
                 const std::string& name, int workers, double straggler_delay) {
  job.workers = workers;
  if (straggler_delay > 0) {
    job.stragglers = {workers - 1};
    job.straggler_delay_s = straggler_delay;
  }
  auto r = from_result(name, workers, run_job(sys, job, data));
  r.straggler = straggler_delay > 0;
  print(r);
  return r;
}

run_t run_reference(const job_spec& job, const job_data& data) {
  auto t = reference_train(job, data);
  run_t r;
  r.name = "reference (one loop, no staleness)";
  r.workers = 1;
  r.ok = true;
  r.accuracy = t.test.accuracy;
  r.samples_per_s = t.samples_per_s;
  for (auto& p : t.history) r.curve.emplace_back(double(p.samples), p.test_accuracy);
  print(r);
  return r;
}

/// PyTorch's RPC parameter server (bench/torch/torch_rpc_ps.py) with SGD momentum 0.9 on the
/// PS, `trainers` async trainers; accuracy < 0 when not measured.
run_t run_torch_peer(int trainers, int epochs) {
  run_t r;
  r.name = "PyTorch RPC PS, momentum 0.9";
  r.workers = trainers;
  r.accuracy = -1;
  for (auto& j : torch_json_lines("torch_rpc_ps.py --trainers " + std::to_string(trainers) +
                                      " --epochs " + std::to_string(epochs) + " --momentum 0.9",
                                  1200)) {
    if (!j.contains("test_accuracy")) continue;
    r.ok = true;
    r.accuracy = j["test_accuracy"].get<double>();
    r.samples_per_s = j["samples_per_s"].get<double>();
  }
  if (r.ok) print(r);
  return r;
}

/// Everything one optimizer's part of the study measured.
struct part_t {
  std::string optim;
  job_spec job;
  run_t reference;
  std::vector<run_t> sync, torch;
  std::vector<run_t> sync_average;  ///< sync with the same weight average as async's default
  std::map<std::string, std::vector<run_t>> async;  ///< rule name -> one run per worker count
  std::vector<run_t> straggler;  ///< sync, the default rule, it prefetching: 4x straggler
  double straggler_delay = 0;
};

/// One worker's seconds per step in the default rule's run with `w` workers, times 3: the
/// straggler then takes 4x as long per step as the others.
double straggler_delay_for(const part_t& p, int w) {
  for (auto& r : p.async.at(study_rules().back().name))
    if (r.workers == w && r.samples_per_s > 0) return 3.0 * w * p.job.batch / r.samples_per_s;
  return 0;
}

part_t run_part(caf::actor_system& sys, const options& o, const std::string& optim) {
  part_t p;
  p.optim = optim;
  p.job = study_job(o, optim);
  auto data = std::make_shared<job_data>(load_job_data(p.job));
  fit_model_to_data(p.job, *data);
  std::cout << "bench staleness: " << describe_hparams(p.job) << "\n";
  p.reference = run_reference(p.job, *data);
  auto sync = p.job;
  sync.mode = "sync";
  for (int w : o.workers) p.sync.push_back(run_engine(sys, sync, data, "sync", w, 0));
  auto sync_avg = sync;
  sync_avg.staleness.average = shard_average(p.job);  // what async's default resolves to
  for (int w : o.workers)
    p.sync_average.push_back(run_engine(sys, sync_avg, data, "sync + average", w, 0));
  for (auto& rule : study_rules()) {
    auto job = p.job;
    job.mode = "async";
    job.staleness = rule.policy;
    job.async_pull = rule.pull;
    for (int w : o.workers)
      p.async[rule.name].push_back(run_engine(sys, job, data, rule.name, w, 0));
  }
  int sw =
      std::find(o.workers.begin(), o.workers.end(), 4) != o.workers.end() ? 4 : o.workers.back();
  p.straggler_delay = sw > 1 ? straggler_delay_for(p, sw) : 0;
  if (p.straggler_delay > 0) {
    p.straggler.push_back(run_engine(sys, sync, data, "sync", sw, p.straggler_delay));
    auto job = p.job;
    job.mode = "async";
    p.straggler.push_back(
        run_engine(sys, job, data, study_rules().back().name, sw, p.straggler_delay));
    job.async_pull = "prefetch";  // at 4 workers on 2 cores the default pulls with the push
    p.straggler.push_back(
        run_engine(sys, job, data, "default rule, prefetched pull", sw, p.straggler_delay));
  }
  if (o.torch && optim == "momentum")
    for (int t : {2, 4})
      if (auto r = run_torch_peer(t, o.epochs); r.ok) p.torch.push_back(r);
  return p;
}

/// Test accuracy against samples for every rule, sync and the reference at `w` workers.
std::string write_plot(const part_t& p, int w) {
  observe::plot_spec spec;
  spec.title = p.optim + ", " + std::to_string(w) + " workers: test accuracy";
  spec.x_label = "samples";
  spec.y_label = "test accuracy";
  auto add = [&](const run_t& r) {
    observe::plot_series s;
    s.name = r.name;
    for (auto& [x, y] : r.curve) {
      s.xs.push_back(x);
      s.ys.push_back(y);
    }
    spec.series.push_back(std::move(s));
  };
  add(p.reference);
  for (auto& r : p.sync)
    if (r.workers == w) add(r);
  for (auto& r : p.sync_average)
    if (r.workers == w) add(r);
  for (auto& [name, runs] : p.async)
    for (auto& r : runs)
      if (r.workers == w) add(r);
  auto file = "staleness-" + p.optim + "-" + std::to_string(w) + "w.svg";
  std::filesystem::create_directories(benchmarks_img_dir());
  observe::write_svg_plot(benchmarks_img_dir() + "/" + file, spec);
  return file;
}

std::string cell(const run_t& r) {
  return r.ok ? fmt(r.accuracy, 4) : "failed";
}

/// The accuracy table of one optimizer: a row per rule, a column per worker count.
void table(std::ostringstream& md, const part_t& p, const options& o) {
  md << "| " << p.optim << " | ";
  for (int w : o.workers) md << w << " workers | ";
  md << "\n| --- |";
  for (std::size_t i = 0; i < o.workers.size(); ++i) md << " --- |";
  md << "\n| sync |";
  for (auto& r : p.sync) md << " " << cell(r) << " |";
  md << "\n| sync + average |";
  for (auto& r : p.sync_average) md << " " << cell(r) << " |";
  for (auto& rule : study_rules()) {
    md << "\n| async, " << rule.name << " |";
    for (auto& r : p.async.at(rule.name))
      md << " " << cell(r) << " (s " << fmt(r.mean_staleness, 1) << ") |";
  }
  md << "\n\nReference (one loop, no staleness): " << fmt(p.reference.accuracy, 4) << ".";
  for (auto& t : p.torch)
    md << " " << t.name << ", " << t.workers << " trainers (3+ processes): " << fmt(t.accuracy, 4)
       << ".";
  md << "\n\n";
}

/// Whether the default rule reaches sync's accuracy (or comes within 0.5 points) at each count:
/// against sync's defaults, and like for like against sync with the same weight average.
void verdicts(std::ostringstream& md, const part_t& p) {
  auto& def = p.async.at(study_rules().back().name);
  auto against = [&](const char* what, const std::vector<run_t>& sync) {
    md << "- " << p.optim << ", default rule against " << what << ":";
    for (std::size_t i = 0; i < def.size() && i < sync.size(); ++i) {
      double gap = 100 * (def[i].accuracy - sync[i].accuracy);
      md << " " << def[i].workers << "w " << (gap >= 0 ? "+" : "") << fmt(gap, 2) << " pt"
         << (gap >= -0.5 ? " (met)" : " (NOT met)") << ";";
    }
    md << "\n";
  };
  against("sync (its defaults: no average)", p.sync);
  against("sync + average (like for like)", p.sync_average);
  md << "- " << p.optim << ":";
  if (!def.empty()) {
    double gap = 100 * (def.front().accuracy - p.reference.accuracy);
    md << " 1 async worker against the reference " << (gap >= 0 ? "+" : "") << fmt(gap, 2)
       << " pt.";
  }
  if (!p.straggler.empty())
    md << " With one of " << p.straggler.front().workers << " workers 4x slower (+"
       << fmt(p.straggler_delay * 1e3, 1) << " ms per step): sync " << cell(p.straggler[0])
       << " at " << fmt(p.straggler[0].samples_per_s, 0) << " samples/s, async default "
       << cell(p.straggler[1]) << " at " << fmt(p.straggler[1].samples_per_s, 0) << " samples/s"
       << (p.straggler.size() > 2
               ? ", async default with the prefetched pull " + cell(p.straggler[2]) + " at " +
                     fmt(p.straggler[2].samples_per_s, 0) + " samples/s"
               : std::string())
       << ".";
  md << "\n";
}

std::string report(const options& o, const std::vector<part_t>& parts) {
  std::ostringstream md;
  md << "## Staleness: async training with momentum, rule by rule\n\n"
     << "Reproduce: `actrain bench staleness --epochs=" << o.epochs
     << (o.schedule != "constant" ? " --schedule=" + o.schedule : "")
     << "`. Every run in one process: workers are detached threads on this 2-core machine (one "
        "BLAS thread each), 2 shards, batch 64 per worker, all 60,000 training rows, accuracy on "
        "the 10,000 test rows; sync averages the K workers' gradients into one step (K times "
        "fewer steps); the reference is the single-threaded loop. Rows named with \"average\" "
        "evaluate the shards' weight average over 100 updates (`[staleness] average`, the "
        "default in async jobs), the others the live weights. The default `job.async-pull = "
        "auto` prefetches a worker's next weights during its step while the workers are no "
        "more than the cores (1 and 2 workers here), beyond that answers each push with the "
        "next weights (`with-push`: one update fresher, no overlap; 4 workers), and beyond "
        "twice the cores lets them take turns (`in-turn`: cores + 1 compute slots; a worker "
        "pulls once it holds one and computes 8 steps, each step's weights the answer to its "
        "push; 8 workers); the rows "
        "\"default rule, prefetched pull\", \"default rule, pull with the push\" (every "
        "push answered with the next weights, the OS scheduling the workers) and \"default "
        "rule, in turn\" keep one form at every count, and the straggler job runs the default "
        "and the prefetched pull. "
        "In async a worker done with its rows takes a share of the others' epochs not started "
        "(at least 32 batches a share), so a straggler does not walk its own rows alone at the "
        "end. Cells are final test accuracy "
        "and the shards' mean staleness s. PyTorch's RPC parameter server runs 1 PS + N trainer "
        "processes (1 thread each) with momentum on the PS, the same MLP, batch and epochs. It "
        "crosses process boundaries and these actrain runs do not (all share the same 2 cores): "
        "its accuracy is the peer's, like for like across processes with actrain's worker "
        "processes in the next section, and no speed is compared here.\n\n";
  for (auto& p : parts) {
    md << "### " << describe_hparams(p.job) << "\n\n";
    table(md, p, o);
    for (int w : o.workers)
      if (w >= 4 && o.doc)
        md << "![" << p.optim << " " << w << " workers](img/" << write_plot(p, w) << ")\n";
    md << "\n";
  }
  md << "### What the figures show\n\n";
  for (auto& p : parts) verdicts(md, p);
  for (auto& p : parts)
    if (p.optim == "adam" && !p.async.at(study_rules().back().name).empty()) {
      auto& last = p.async.at(study_rules().back().name).back();
      md << "- Adam, default rule, " << last.workers << " workers: " << fmt(last.accuracy, 4)
         << " (goal >= 0.885: " << (last.accuracy >= 0.885 ? "met" : "NOT met") << ").\n";
    }
  return md.str();
}

}  // namespace

int bench_staleness(const std::vector<std::string>& args) {
  options o;
  try {
    o = parse(args);
  } catch (const std::exception& e) {
    std::cerr << "bench staleness: bad option " << e.what()
              << " (--epochs=N, --workers=1,2,4,8, --optims=momentum,adam, "
                 "--schedule=constant|cosine, --no-torch, --no-doc)\n";
    return 2;
  }
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  set_blas_threads(1);
  std::vector<part_t> parts;
  for (auto& k : o.optims) parts.push_back(run_part(sys, o, k));
  auto md = report(o, parts);
  std::cout << "\n" << md;
  if (o.doc) update_doc_section(benchmarks_doc_path(), "staleness", md);
  return 0;
}

}  // namespace actrain
