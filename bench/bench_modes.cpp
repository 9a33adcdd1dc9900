// `actrain bench modes`: async, ssp, sync and sync+backup on the same Fashion-MNIST MLP job, with
// and without a straggler, and coordination overhead with simulated compute. One command writes
// the tables (docs/benchmarks.md, section "modes") and the plots (docs/img/modes-*.svg).
#include "bench/bench_modes.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "bench/bench.hpp"
#include "bench/doc_section.hpp"
#include "observe/svg_plot.hpp"

namespace actrain {
namespace {

struct mode_t {
  std::string name, mode;
  int backup = 0, bound = 0;
};

/// One training run and what the study reads from it.
struct run_t {
  std::string mode;
  int workers = 0;
  bool straggler = false;
  engine_result res;
  double steady = 0;  ///< samples/s between 10% and 60% of the job's samples
  std::vector<std::pair<double, double>> ticks;  ///< (seconds, samples)
};

/// Samples/s over the middle of the run: rows are split evenly at the start, and how the tail
/// goes is a data-assignment effect (in sync and ssp a slow worker's own share finishes last; in
/// async finished workers take shares of it), so the steady rate is read while every worker
/// still has rows; the whole-job rate shows the tail.
double steady_rate(const std::vector<std::pair<double, double>>& ticks, double total) {
  auto at = [&](double frac) {
    double target = frac * total;
    for (std::size_t i = 1; i < ticks.size(); ++i)
      if (ticks[i].second >= target) {
        auto [t0, s0] = ticks[i - 1];
        auto [t1, s1] = ticks[i];
        return s1 > s0 ? t0 + (t1 - t0) * (target - s0) / (s1 - s0) : t1;
      }
    return -1.0;
  };
  double a = at(0.1), b = at(0.6);
  return (a >= 0 && b > a) ? 0.5 * total / (b - a) : 0;
}

run_t train_once(caf::actor_system& sys, job_spec job, const std::shared_ptr<job_data>& data,
                 const mode_t& m, int workers, double straggler_delay) {
  job.mode = m.mode;
  job.backup = m.backup;
  job.ssp_bound = m.bound;
  job.workers = workers;
  job.shards = 2;
  job.name = m.name;
  // Async and ssp run with the job's own optimizer and the default staleness policy, which
  // corrects Adam's beta1 for the momentum asynchrony adds (bench staleness measures it).
  if (m.mode == "sync") {
    // K workers per step take K times fewer, K times larger steps: scale Adam's rate by sqrt(K)
    // and fit the cosine schedule to the shard's own step count.
    auto k = std::max(1, workers - m.backup);
    job.optim.lr *= static_cast<float>(std::sqrt(static_cast<double>(k)));
    fit_schedule_to_sync(job, k);
  }
  if (straggler_delay > 0) {
    job.stragglers = {workers - 1};
    job.straggler_delay_s = straggler_delay;
  }
  run_t r;
  r.mode = m.name;
  r.workers = workers;
  r.straggler = straggler_delay > 0;
  engine_hooks hooks;
  hooks.tick = std::chrono::milliseconds(50);
  auto ticks = std::make_shared<std::vector<std::pair<double, double>>>();
  hooks.on_tick = [ticks](const progress_point& p, double) {
    ticks->emplace_back(p.seconds, static_cast<double>(p.samples));
  };
  r.res = run_job(sys, job, data, hooks);
  r.ticks = *ticks;
  r.ticks.insert(r.ticks.begin(), {0.0, 0.0});
  r.ticks.emplace_back(r.res.seconds, static_cast<double>(r.res.samples));
  r.steady = steady_rate(r.ticks, static_cast<double>(r.res.samples));
  std::int64_t late = 0;
  for (auto& s : r.res.shards) late += s.dropped_late;
  std::cout << "  " << m.name << " x" << workers << (r.straggler ? " (straggler)" : "") << ": "
            << fmt(r.res.seconds, 2) << " s, " << fmt(r.res.samples_per_s, 0)
            << " samples/s, steady " << fmt(r.steady, 0) << ", accuracy "
            << fmt(r.res.test.accuracy, 4) << ", late " << late
            << (r.res.ok ? "" : ", FAILED: " + r.res.error) << "\n"
            << std::flush;
  return r;
}

/// What `actrain bench modes` was asked for.
struct modes_options {
  // 8 epochs: with 5, 8 stale async workers plateau at 0.85-0.86 whatever the rate (Adam
  // 2.5e-4 to 2e-3, SGD 0.05 to 0.3, momentum).
  int epochs = 8;
  int sim_steps = 200;
  std::string only;  ///< --modes=async,sync: run only these (",async,sync,")
  std::vector<int> worker_counts{1, 2, 4, 8}, sim_counts{1, 2, 4, 8, 16, 32};
  bool doc = true;
};

/// Throws std::invalid_argument naming the first option it does not know.
modes_options parse_modes_options(const std::vector<std::string>& args) {
  modes_options o;
  for (auto& a : args) {
    if (a.rfind("--epochs=", 0) == 0)
      o.epochs = std::stoi(a.substr(9));
    else if (a.rfind("--workers=", 0) == 0)
      o.worker_counts = parse_int_list(a.substr(10));
    else if (a.rfind("--sim-workers=", 0) == 0)
      o.sim_counts = parse_int_list(a.substr(14));
    else if (a.rfind("--sim-steps=", 0) == 0)
      o.sim_steps = std::stoi(a.substr(12));
    else if (a == "--no-doc")
      o.doc = false;
    else if (a.rfind("--modes=", 0) == 0)
      o.only = "," + a.substr(8) + ",";
    else
      throw std::invalid_argument(a);
  }
  return o;
}

struct sim_t {
  std::string mode;
  int workers;
  double steps_per_s, ideal;
};

/// Everything the study ran: the MLP under every mode (runs), again with a straggler (slow),
/// and the simulated-compute runs (sims).
struct modes_study {
  job_spec job, sim;
  std::vector<mode_t> modes{{"async", "async", 0, 0},
                            {"ssp s=2", "ssp", 0, 2},
                            {"sync", "sync", 0, 0},
                            {"sync+backup 1", "sync", 1, 0}};
  std::vector<run_t> runs, slow;
  std::vector<sim_t> sims;
  int sw = 4;        ///< worker count of the straggler runs
  double delay = 0;  ///< the straggler's extra seconds per step
  double base = 0;   ///< steady samples/s of the first async run (speed-up = against it)
};

bool wanted(const modes_options& o, const mode_t& m) {
  auto key = m.backup > 0 ? std::string("backup") : m.mode;
  return o.only.empty() || o.only.find("," + key + ",") != std::string::npos;
}

/// Part 1: the MLP under every mode and worker count, then with one worker 4x slower than a
/// worker of the async run with as many workers.
void run_real(caf::actor_system& sys, const modes_options& o, modes_study& st) {
  st.job = reference_mlp_job(o.epochs);
  st.job.eval_every = 1;
  auto data = std::make_shared<job_data>(load_job_data(st.job));
  fit_model_to_data(st.job, *data);
  std::cout << "bench modes: " << describe_hparams(st.job) << "\n";
  for (int w : o.worker_counts)
    for (auto& m : st.modes) {
      if (m.backup >= w || !wanted(o, m)) continue;
      st.runs.push_back(train_once(sys, st.job, data, m, w, 0));
    }
  st.sw = 4;
  if (std::find(o.worker_counts.begin(), o.worker_counts.end(), st.sw) == o.worker_counts.end())
    st.sw = o.worker_counts.back();
  double step_s = 0;
  for (auto& r : st.runs)
    if (r.mode == "async" && r.workers == st.sw && r.steady > 0)
      step_s = st.sw * st.job.batch / r.steady;  // one worker's seconds per step
  st.delay = 3 * step_s;
  std::cout << "straggler: worker " << st.sw - 1 << " of " << st.sw << " sleeps "
            << fmt(st.delay * 1e3, 2) << " ms per step (3x a step of " << fmt(step_s * 1e3, 2)
            << " ms)\n";
  if (st.sw > 1)
    for (auto& m : st.modes)
      if (m.backup < st.sw && wanted(o, m))
        st.slow.push_back(train_once(sys, st.job, data, m, st.sw, st.delay));
  for (auto& r : st.runs)
    if (r.workers == o.worker_counts.front() && r.mode == "async") st.base = r.steady;
}

/// Part 2: simulated compute (5 ms per step, a 17-parameter model): coordination overhead.
void run_simulated(caf::actor_system& sys, const modes_options& o, modes_study& st) {
  job_spec& sim = st.sim;
  sim.name = "simulated";
  sim.model.kind = "linear";
  sim.data.kind = "synthetic_linear";
  sim.data.features = 16;
  sim.data.test_rows = 100;
  sim.batch = 16;
  sim.epochs = 1;
  sim.eval_every = 1e9;
  sim.simulated_compute_s = 0.005;
  sim.optim.kind = "sgd";
  sim.optim.lr = 0.01f;
  std::cout << "simulated compute 5 ms/step, " << o.sim_steps << " steps per worker:\n";
  for (auto& mode : {std::string("async"), std::string("sync")})
    for (int w : o.sim_counts) {
      auto j = sim;
      j.mode = mode;
      j.workers = w;
      j.shards = 1;  // a 17-parameter model: one shard, one barrier
      j.data.rows = static_cast<std::int64_t>(w) * o.sim_steps * sim.batch;
      auto d = std::make_shared<job_data>(load_job_data(j));
      fit_model_to_data(j, *d);
      auto res = run_job(sys, j, d);
      double steps =
          res.seconds > 0 ? res.samples / static_cast<double>(sim.batch) / res.seconds : 0;
      st.sims.push_back({mode, w, steps, w / sim.simulated_compute_s});
      std::cout << "  " << mode << " x" << w << ": " << fmt(steps, 0) << " steps/s of ideal "
                << fmt(w / sim.simulated_compute_s, 0) << " ("
                << fmt(100 * steps / st.sims.back().ideal, 1) << "%)"
                << (res.ok ? "" : " FAILED: " + res.error) << "\n"
                << std::flush;
    }
}

std::int64_t late_slices(const run_t& r) {
  std::int64_t late = 0;
  for (auto& s : r.res.shards) late += s.dropped_late;
  return late;
}

void describe_setup(std::ostringstream& md, const modes_options& o, const modes_study& st) {
  md << "## Sync vs async: one barrier mechanism, four modes\n\n"
     << "Reproduce: `actrain bench modes --epochs=" << o.epochs << "`. " << describe_hparams(st.job)
     << ", batch " << st.job.batch << " per worker, 2 shards, " << o.epochs
     << " epochs over all 60,000 training rows, accuracy on the 10,000 test rows. Workers are "
        "detached threads on this 2-core machine, one BLAS thread each. *steady* is samples/s "
        "between 10% and 60% of the job (the coordinator's progress every 50 ms), before the tail. "
        "*whole* is samples over the whole wall time, the tail included: rows are split evenly at "
        "the start, so in sync and ssp a slow worker's share is walked at its pace to the end, "
        "while in async a worker done with its rows takes a share of the others' epochs not "
        "started (at least 32 batches a share). Speed-up "
        "is steady throughput against 1 async worker in the same run. Sync runs scale Adam's "
        "rate by sqrt(K) and fit the cosine schedule to their K-times fewer steps; async and ssp "
        "run the job's own Adam with the default staleness policy (damped step, corrected "
        "momentum, weight average: section staleness). Sync workers send push_pull: the reply to "
        "step "
        "t's slice is step t+1's weights (one message each way per shard and step).\n\n";
}

void modes_table(std::ostringstream& md, const modes_study& st) {
  md << "| mode | workers | steady samples/s | speed-up | whole samples/s | wall s | test accuracy "
        "| late slices dropped |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (auto& r : st.runs)
    md << "| " << r.mode << (r.straggler ? " + straggler" : "") << " | " << r.workers << " | "
       << fmt(r.steady, 0) << " | " << (st.base > 0 ? fmt(r.steady / st.base, 2) + "x" : "-")
       << " | " << fmt(r.res.samples_per_s, 0) << " | " << fmt(r.res.seconds, 1) << " | "
       << (r.res.ok ? fmt(r.res.test.accuracy, 4) : "failed: " + r.res.error) << " | "
       << late_slices(r) << " |\n";
}

/// The run of `slow`'s mode and worker count without the straggler, or null.
const run_t* without_straggler(const modes_study& st, const run_t& slow) {
  for (auto& r : st.runs)
    if (r.mode == slow.mode && r.workers == slow.workers) return &r;
  return nullptr;
}

/// Samples/s over the whole job of `mode`'s straggler run over its run without it (0: none).
double whole_ratio(const modes_study& st, const std::string& mode) {
  for (auto& s : st.slow)
    if (auto* r = without_straggler(st, s); s.mode == mode && r && r->res.samples_per_s > 0)
      return s.res.samples_per_s / r->res.samples_per_s;
  return 0;
}

/// The straggler table; returns each mode's steady rate with the straggler over without it.
std::map<std::string, double> straggler_table(std::ostringstream& md, const modes_study& st) {
  md << "\n### With a straggler (worker " << st.sw - 1 << " of " << st.sw << " 4x slower: +"
     << fmt(st.delay * 1e3, 1) << " ms per step)\n\n"
     << "| mode | steady samples/s | without straggler | ratio | whole samples/s | without "
        "straggler | ratio | test accuracy | late slices dropped |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  std::map<std::string, double> ratio;
  for (auto& s : st.slow) {
    auto* r = without_straggler(st, s);
    double without = r ? r->steady : 0, whole = r ? r->res.samples_per_s : 0;
    ratio[s.mode] = without > 0 ? s.steady / without : 0;
    md << "| " << s.mode << " | " << fmt(s.steady, 0) << " | " << fmt(without, 0) << " | "
       << fmt(ratio[s.mode], 2) << "x | " << fmt(s.res.samples_per_s, 0) << " | " << fmt(whole, 0)
       << " | " << (whole > 0 ? fmt(s.res.samples_per_s / whole, 2) : "-") << "x | "
       << fmt(s.res.test.accuracy, 4) << " | " << late_slices(s) << " |\n";
  }
  return ratio;
}

/// The simulated-compute table; returns each mode's fraction of ideal at the largest count.
std::map<std::string, double> simulated_table(std::ostringstream& md, const modes_options& o,
                                              const modes_study& st) {
  md << "\n### Simulated compute (5 ms per step, " << o.sim_steps
     << " steps per worker, linear model): coordination overhead\n\n"
     << "| mode | workers | steps/s | ideal (workers / 5 ms) | of ideal |\n| --- | --- | --- | --- "
        "| --- |\n";
  std::map<std::string, double> eff;
  for (auto& s : st.sims) {
    md << "| " << s.mode << " | " << s.workers << " | " << fmt(s.steps_per_s, 0) << " | "
       << fmt(s.ideal, 0) << " | " << fmt(100 * s.steps_per_s / s.ideal, 1) << "% |\n";
    if (s.workers == o.sim_counts.back()) eff[s.mode] = s.steps_per_s / s.ideal;
  }
  return eff;
}

double lowest_accuracy(const modes_study& st) {
  double min_acc = 1;
  for (auto* list : {&st.runs, &st.slow})
    for (auto& r : *list)
      if (r.res.ok) min_acc = std::min(min_acc, r.res.test.accuracy);
  return min_acc;
}

void findings(std::ostringstream& md, const modes_options& o, const modes_study& st,
              std::map<std::string, double>& ratio, std::map<std::string, double>& eff) {
  auto verdict = [](bool ok) { return ok ? "met" : "NOT met"; };
  double min_acc = lowest_accuracy(st);
  md << "\n### What the figures show\n\n"
     << "- With one worker of " << st.sw << " slowed 4x, async keeps " << fmt(ratio["async"], 2)
     << "x and sync+backup " << fmt(ratio["sync+backup 1"], 2)
     << "x of their throughput without it, while plain sync drops to " << fmt(ratio["sync"], 2)
     << "x (every step waits for the slowest worker) and ssp to " << fmt(ratio["ssp s=2"], 2)
     << "x (the bound lets the fast workers run " << 2
     << " steps ahead, then they wait too). Goal (>= 0.8x for async and sync+backup, sync drops): "
     << verdict(ratio["async"] >= 0.8 && ratio["sync+backup 1"] >= 0.8 && ratio["sync"] < 0.8)
     << ".\n";
  md << "- Over the whole job, tail included, async keeps " << fmt(whole_ratio(st, "async"), 2)
     << "x of its throughput without the straggler (the fast workers take shares of its epochs "
        "not started), sync " << fmt(whole_ratio(st, "sync"), 2) << "x.\n"
     << "- Lowest test accuracy over all runs: " << fmt(min_acc, 4)
     << " (goal >= 0.87: " << verdict(min_acc >= 0.87)
     << "). Async and ssp lose most with many workers: each gradient is "
        "about workers-1 updates stale.\n"
     << "- With simulated compute, " << o.sim_counts.back() << " workers reach "
     << fmt(100 * eff["async"], 1) << "% of ideal in async and " << fmt(100 * eff["sync"], 1)
     << "% in sync (goals 90% and 80%: " << verdict(eff["async"] >= 0.9) << ", "
     << verdict(eff["sync"] >= 0.8)
     << "). Simulated compute sleeps, so these figures measure the actors' coordination, not "
        "this machine's 2 cores.\n"
     << "- On real compute, 2 cores cap the speed-up near 2x: more workers than cores add "
        "contention, not throughput.\n\n"
     << "Plots: ![accuracy vs time](img/modes-accuracy-time.svg) "
        "![accuracy vs samples](img/modes-accuracy-samples.svg) ![train loss vs "
        "time](img/modes-loss-time.svg) "
        "![throughput vs workers](img/modes-throughput.svg) ![speed-up](img/modes-speedup.svg) "
        "![simulated compute](img/modes-simulated.svg)\n";
}

std::string modes_report(const modes_options& o, const modes_study& st) {
  std::ostringstream md;
  describe_setup(md, o, st);
  modes_table(md, st);
  auto ratio = straggler_table(md, st);
  auto eff = simulated_table(md, o, st);
  findings(md, o, st, ratio, eff);
  return md.str();
}

observe::plot_spec plot(std::string title, std::string x, std::string y) {
  return {std::move(title), std::move(x), std::move(y), {}, 640, 400};
}

/// Curves of the runs with `sw` workers (with and without the straggler): accuracy against time
/// and samples, train loss against time.
void write_curve_plots(const modes_study& st, const std::string& dir) {
  auto n = " (" + std::to_string(st.sw) + " workers)";
  auto acc_t = plot("Test accuracy vs wall time" + n, "seconds", "test accuracy");
  auto acc_s = plot("Test accuracy vs samples" + n, "samples", "test accuracy");
  auto loss_t = plot("Train loss vs wall time" + n, "seconds", "train loss");
  auto curves = [&](const run_t& r) {
    observe::plot_series a{r.mode + (r.straggler ? " + straggler" : ""), {}, {}, ""};
    auto b = a, c = a;
    for (auto& p : r.res.history) {
      a.xs.push_back(p.seconds);
      a.ys.push_back(p.test_accuracy);
      b.xs.push_back(static_cast<double>(p.samples));
      b.ys.push_back(p.test_accuracy);
      c.xs.push_back(p.seconds);
      c.ys.push_back(p.train_loss);
    }
    acc_t.series.push_back(a);
    acc_s.series.push_back(b);
    loss_t.series.push_back(c);
  };
  for (auto& r : st.runs)
    if (r.workers == st.sw) curves(r);
  for (auto& s : st.slow) curves(s);
  observe::write_svg_plot(dir + "/modes-accuracy-time.svg", acc_t);
  observe::write_svg_plot(dir + "/modes-accuracy-samples.svg", acc_s);
  observe::write_svg_plot(dir + "/modes-loss-time.svg", loss_t);
}

/// Steady throughput and speed-up against workers per mode, and the simulated-compute rates.
void write_scaling_plots(const modes_options& o, const modes_study& st, const std::string& dir) {
  auto thr = plot("Steady throughput vs workers", "workers", "samples/s");
  auto spd = plot("Speed-up vs workers (against 1 async worker)", "workers", "speed-up");
  for (auto& m : st.modes) {
    observe::plot_series t{m.name, {}, {}, ""}, s{m.name, {}, {}, ""};
    for (auto& r : st.runs)
      if (r.mode == m.name) {
        t.xs.push_back(r.workers);
        t.ys.push_back(r.steady);
        s.xs.push_back(r.workers);
        s.ys.push_back(st.base > 0 ? r.steady / st.base : 0);
      }
    thr.series.push_back(t);
    spd.series.push_back(s);
  }
  auto simp = plot("Simulated compute 5 ms/step: steps/s vs workers", "workers", "steps/s");
  observe::plot_series ideal{"ideal (workers / 5 ms)", {}, {}, ""};
  for (int w : o.sim_counts) {
    ideal.xs.push_back(w);
    ideal.ys.push_back(w / st.sim.simulated_compute_s);
  }
  simp.series.push_back(ideal);
  for (auto& mode : {std::string("async"), std::string("sync")}) {
    observe::plot_series s{mode, {}, {}, ""};
    for (auto& x : st.sims)
      if (x.mode == mode) {
        s.xs.push_back(x.workers);
        s.ys.push_back(x.steps_per_s);
      }
    simp.series.push_back(s);
  }
  observe::write_svg_plot(dir + "/modes-throughput.svg", thr);
  observe::write_svg_plot(dir + "/modes-speedup.svg", spd);
  observe::write_svg_plot(dir + "/modes-simulated.svg", simp);
}

}  // namespace

int bench_modes(const std::vector<std::string>& args) {
  modes_options o;
  try {
    o = parse_modes_options(args);
  } catch (const std::exception&) {
    std::cerr << "bench modes: bad option (--epochs=N, --workers=1,2,4,8, "
                 "--sim-workers=1,2,...,32, --sim-steps=N, --modes=async,ssp,sync,backup, "
                 "--no-doc)\n";
    return 2;
  }
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  set_blas_threads(1);
  modes_study st;
  run_real(sys, o, st);
  run_simulated(sys, o, st);
  auto md = modes_report(o, st);
  std::cout << "\n" << md;
  if (!o.doc) return 0;
  update_doc_section(benchmarks_doc_path(), "modes", md);
  auto dir = benchmarks_img_dir();
  std::filesystem::create_directories(dir);
  write_curve_plots(st, dir);
  write_scaling_plots(o, st, dir);
  std::cout << "wrote " << benchmarks_doc_path() << " (section modes) and " << dir
            << "/modes-*.svg\n";
  return 0;
}

}  // namespace actrain
