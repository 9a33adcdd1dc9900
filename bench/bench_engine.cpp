// `actrain bench engine`: the async engine against the reference trainer (and PyTorch when it is
// installed), side by side in one run; `--full` runs the 15-epoch MLP runs with 1, 2, 4, 8
// workers. Figures are printed and written to docs/benchmarks.md (section "engine").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "apps/commands.hpp"
#include "bench/bench.hpp"
#include "bench/doc_section.hpp"
#include "bench/median.hpp"
#include "bench/torch_script.hpp"

namespace actrain {
namespace {

/// job -> samples/s from the JSON lines a bench/torch script prints (empty when not measured).
std::map<std::string, double> run_torch(const std::string& script_and_args) {
  std::map<std::string, double> out;
  for (auto& j : torch_json_lines(script_and_args))
    if (j.contains("job") && j.contains("samples_per_s"))
      out[j["job"].get<std::string>()] = j["samples_per_s"].get<double>();
  return out;
}

/// PyTorch, 1 thread, batch 64, one epoch of `torch_job` (linear, softmax or mlp); 0 when not
/// measured.
double torch_rate(const std::string& torch_job) {
  auto r = run_torch("torch_ref.py --jobs " + torch_job + " --epochs-linear 1 --epochs-softmax 1 " +
                     "--epochs-mlp 1 --threads 1");
  return r.count(torch_job) ? r[torch_job] : 0.0;
}

using rt_ping_atom = caf::atom_constant<caf::atom("rtping")>;

struct round_trip_state {
  int left = 0;
  caf::actor echo;
  std::chrono::steady_clock::time_point t0;
  std::shared_ptr<double> seconds;
};

void round_trip(caf::stateful_actor<round_trip_state>* self) {
  self->request(self->state.echo, caf::infinite, rt_ping_atom::value, self->state.left)
      .then([self](int) {
        auto& st = self->state;
        if (--st.left > 0) return round_trip(self);
        *st.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - st.t0).count();
        self->quit();
      });
}

/// The floor under every engine step: one request and its response between two actors that do
/// nothing else, on the scheduler the engine runs on. Microseconds per round trip.
double caf_round_trip_us(caf::actor_system& sys, int round_trips) {
  auto echo =
      sys.spawn([]() -> caf::behavior { return {[](rt_ping_atom, int x) { return x + 1; }}; });
  auto seconds = std::make_shared<double>(0);
  auto client = sys.spawn([=](caf::stateful_actor<round_trip_state>* self) {
    self->state = round_trip_state{round_trips, echo, std::chrono::steady_clock::now(), seconds};
    round_trip(self);
  });
  caf::scoped_actor self{sys};
  self->wait_for(client);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  return *seconds / round_trips * 1e6;
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

/// What `actrain bench engine` was asked for. Options that narrow or vary the runs make them an
/// experiment: nothing is written to the docs then.
struct engine_options {
  bool full = false, with_torch = true;
  int only_workers = 0, full_epochs = 15;
  bool aggregate = false;
  std::string stale;  ///< a staleness policy kind for the full runs
  std::string only;   ///< comma list of row keys (adam, softmax, linear, sgd)
  int runs = 3;
  std::int64_t rows = 20000;
  std::vector<std::string> caf_args;  ///< --scheduler.* / --work-stealing.* go to CAF
  bool experiment() const {
    return !only.empty() || only_workers || full_epochs != 15 || aggregate || !stale.empty();
  }
};

/// Throws std::invalid_argument naming the first option it does not know.
engine_options parse_engine_options(const std::vector<std::string>& args) {
  engine_options o;
  for (auto& a : args) {
    if (a == "--full")
      o.full = true;
    else if (a == "--no-torch")
      o.with_torch = false;
    else if (a.rfind("--runs=", 0) == 0)
      o.runs = std::stoi(a.substr(7));
    else if (a.rfind("--workers=", 0) == 0)
      o.only_workers = std::stoi(a.substr(10));
    else if (a.rfind("--epochs=", 0) == 0)
      o.full_epochs = std::stoi(a.substr(9));
    else if (a == "--agg")
      o.aggregate = true;
    else if (a.rfind("--stale=", 0) == 0)
      o.stale = a.substr(8);
    else if (a.rfind("--only=", 0) == 0)
      o.only = "," + a.substr(7) + ",";
    else if (a.rfind("--rows=", 0) == 0)
      o.rows = std::stoll(a.substr(7));
    else if (a.rfind("--scheduler.", 0) == 0 || a.rfind("--work-stealing.", 0) == 0)
      o.caf_args.push_back(a);
    else
      throw std::invalid_argument(a);
  }
  return o;
}

/// One model of the side-by-side table.
struct row_t {
  std::string key, name, torch_key;
  job_spec job;
  /// Passes over the rows per run: the small models' runs would otherwise last a few ms, and
  /// the engine's fixed start (assignment, replica, first pull) would be what is timed.
  int epochs = 1;
};

/// A row's step against the floor a message round trip puts under it.
struct floor_t {
  std::string name;
  double step_us, round_trip_us;  // the reference's step; CAF's bare request/response
  double engine_step_us, ratio;   // the 1-worker engine's step; the paired ratio
};

std::vector<row_t> side_by_side_rows(std::int64_t rows) {
  // PyTorch's 2-trainer RPC parameter server (bench/torch/torch_rpc_ps.py) trains with plain
  // SGD: the same optimizer here makes the 2-worker comparison with it like for like.
  auto mlp_sgd = reference_mlp_job(1);
  mlp_sgd.optim = optim_spec{};
  mlp_sgd.optim.kind = "sgd";
  mlp_sgd.optim.lr = 0.1f;
  return {{"adam", "MLP 784-256-10, Adam (the reference config)", "", reference_mlp_job(1), 1},
          {"softmax", "softmax 784-10", "softmax", reference_softmax_job(1), 10},
          {"linear", "linear 100 features", "linear", reference_linear_job(rows, 100, 1), 100},
          {"sgd", "MLP 784-256-10, plain SGD 0.1 (PyTorch RPC PS's optimizer)", "mlp", mlp_sgd, 1}};
}

/// What the runs of one row measured.
struct row_result {
  double ref = 0, one = 0, two = 0, paired = 0, paired_lo = 0, paired_hi = 0;
  double torch = 0, torch_lo = 0, torch_hi = 0;  ///< 0: PyTorch not measured
  floor_t floor;
};

row_result measure_row(caf::actor_system& sys, row_t r, const engine_options& o, bool torch_ok) {
  r.job.data.train_subset = o.rows;
  r.job.epochs = r.epochs;
  r.job.data.test_subset = 1000;
  auto data = std::make_shared<job_data>(load_job_data(r.job));
  fit_model_to_data(r.job, *data);
  std::vector<double> ref, one, two, pt, rt, paired;
  for (int i = 0; i < o.runs; ++i) {
    // Each 1-worker run sits between two reference runs and is compared with their mean: this
    // shared machine's speed drifts over seconds, and a pair a second apart sees the same
    // machine (medians over all runs mix fast and slow moments).
    double before = reference_train(r.job, *data).samples_per_s;
    one.push_back(run_engine(sys, r.job, data, 1, 1).samples_per_s);
    double after = reference_train(r.job, *data).samples_per_s;
    ref.push_back(before);
    ref.push_back(after);
    paired.push_back(one.back() / ((before + after) / 2));
    two.push_back(run_engine(sys, r.job, data, 2, 2).samples_per_s);
    rt.push_back(caf_round_trip_us(sys, 20000));
    if (torch_ok && !r.torch_key.empty()) pt.push_back(torch_rate(r.torch_key));
  }
  row_result out;
  out.ref = median(ref);
  out.one = median(one);
  out.two = median(two);
  out.paired = median(paired);
  auto [plo, phi] = std::minmax_element(paired.begin(), paired.end());
  out.paired_lo = *plo;
  out.paired_hi = *phi;
  if (!pt.empty() && median(pt) > 0) {
    out.torch = median(pt);
    auto [lo, hi] = std::minmax_element(pt.begin(), pt.end());
    out.torch_lo = *lo;
    out.torch_hi = *hi;
  }
  out.floor = {r.name, 1e6 * r.job.batch / out.ref, median(rt), 1e6 * r.job.batch / out.one,
               out.paired};
  return out;
}

std::string side_by_side_intro(const engine_options& o) {
  return "## Async engine vs the reference trainer (and PyTorch), side by side\n\n"
         "Reproduce: `actrain bench engine --runs=" +
         std::to_string(o.runs) + " --rows=" + std::to_string(o.rows) +
         "`. Batch 64, 1 BLAS thread per worker; each run passes over the first " +
         std::to_string(o.rows) +
         " training rows once for the MLP, 10 times for softmax and 100 times for linear "
         "regression (so every run lasts about half a second), medians of " +
         std::to_string(o.runs) +
         " runs. Each 1-worker engine run runs between two reference runs; *ratio* is the "
         "median over the runs of the engine's samples/s over the mean of its two neighbours "
         "(slowest-fastest in brackets). Evaluation is not timed. The engine's figure is "
         "training wall time from the first assignment to the last step, every message "
         "included. Cores: every side runs in this one process (no side crosses a process "
         "boundary). The reference trainer and PyTorch compute on one thread; the engine's "
         "1-worker side computes on one thread too, but its shard's optimizer step runs on a "
         "scheduler thread beside it, so it may use both of this machine's " +
         std::to_string(std::thread::hardware_concurrency()) +
         " cores, and its 2-worker side computes on two: *engine / PyTorch* compares the "
         "engine on up to that many cores with PyTorch on one, not like for like "
         "(`actrain bench cluster` compares sides on the same cores).\n\n";
}

std::string floor_section(const std::vector<floor_t>& floors, const std::string& torch_spread,
                          int runs) {
  std::string md =
      "\nPyTorch's 1-thread script (`bench/torch/torch_ref.py`, one epoch of the full data per "
      "run, run between the engine's runs, median) trains the MLP with plain SGD lr 0.1, so it "
      "is compared with the SGD row. Its runs spread widely on this shared machine (samples/s, "
      "slowest-fastest: " +
      torch_spread +
      "), as do the engine's and the reference's: the medians of interleaved runs are what "
      "compare.\n\n"
      "What one message round trip costs against a step: a 1-worker engine step needs at least "
      "one request and its response between the worker and the shard (push_pull), so its "
      "samples/s can at best be step / (step + round trip) of the reference's. Measured in "
      "the same run, between the runs above: two actors that do nothing but answer each other, "
      "on the scheduler the engine uses (median of " +
      std::to_string(runs) +
      " x 20000 round trips). Steps are 64 / median samples/s. A small model's worker and "
      "shard take turns on one scheduler thread, so everything the engine adds to a step "
      "(messages, the shard's bookkeeping, progress reports) is in *engine - reference*; the "
      "MLP's worker has a thread of its own and its shard's optimizer step runs beside it on "
      "the other core.\n\n"
      "| model | reference step us | engine step us | engine - reference us | CAF round trip "
      "us | best possible ratio | ratio |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (auto& f : floors)
    md += "| " + f.name + " | " + fmt(f.step_us, 1) + " | " + fmt(f.engine_step_us, 1) + " | " +
          fmt(f.engine_step_us - f.step_us, 1) + " | " + fmt(f.round_trip_us, 2) + " | " +
          fmt(f.step_us / (f.step_us + f.round_trip_us), 2) + " | " + fmt(f.ratio, 2) + " |\n";
  return md;
}

/// The side-by-side table: reference, engine with 1 and 2 workers, PyTorch; then the RPC PS
/// peer and the message floor under a step.
void side_by_side(caf::actor_system& sys, const engine_options& o,
                  const std::function<void(const std::string&)>& emit) {
  emit(side_by_side_intro(o));
  std::string torch_note;
  bool torch_ok = o.with_torch && torch_rate("linear") > 0;  // also warms the page cache
  if (!o.with_torch)
    torch_note = "PyTorch not measured (--no-torch)";
  else if (!torch_ok)
    torch_note = "PyTorch not measured (/usr/bin/python3 without torch, or the script failed)";
  emit(
      "| model | reference samples/s | engine 1 worker + 1 shard | ratio (paired) | engine 2 "
      "workers + 2 shards | PyTorch 1 thread | engine 1w (worker + shard threads) / PyTorch "
      "(1 thread) | engine 2w (2 worker threads) / PyTorch (1 thread) |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  double two_sgd = 0;  // the SGD MLP row's 2-worker figure, against the RPC PS
  std::vector<floor_t> floors;
  std::string torch_spread;  // each row's slowest and fastest PyTorch run
  for (auto& r : side_by_side_rows(o.rows)) {
    if (!o.only.empty() && o.only.find("," + r.key + ",") == std::string::npos) continue;
    auto m = measure_row(sys, r, o, torch_ok);
    floors.push_back(m.floor);
    if (r.key == "sgd") two_sgd = m.two;
    std::string t = "-", t1 = "-", t2 = "-";
    if (m.torch > 0) {
      torch_spread += (torch_spread.empty() ? "" : ", ") + r.name + " " + fmt(m.torch_lo, 0) + "-" +
                      fmt(m.torch_hi, 0);
      t = fmt(m.torch, 0);
      t1 = fmt(m.one / m.torch, 2) + "x";
      t2 = fmt(m.two / m.torch, 2) + "x";
    }
    emit("| " + r.name + " | " + fmt(m.ref, 0) + " | " + fmt(m.one, 0) + " | " + fmt(m.paired, 2) +
         " (" + fmt(m.paired_lo, 2) + "-" + fmt(m.paired_hi, 2) + ") | " + fmt(m.two, 0) + " | " +
         t + " | " + t1 + " | " + t2 + " |\n");
  }
  if (!torch_note.empty()) emit("\n" + torch_note + ".\n");
  double rpc_ps = 0;
  if (torch_ok && two_sgd > 0) {
    auto r = run_torch("torch_rpc_ps.py --trainers 2 --epochs 1");
    rpc_ps = r.count("rpc_ps_mlp") ? r["rpc_ps_mlp"] : 0;
  }
  if (rpc_ps > 0)
    emit(
        "\nPyTorch's RPC parameter server, 1 PS + 2 async trainers on the MLP with plain SGD "
        "lr 0.1 (`bench/torch/torch_rpc_ps.py`, 3 processes, 1 thread each, one epoch, "
        "measured in this run): " +
        fmt(rpc_ps, 0) +
        " samples/s; the engine's 2 workers + 2 shards on the same MLP and optimizer (SGD "
        "row): " +
        fmt(two_sgd, 0) + " samples/s = " + fmt(two_sgd / rpc_ps, 2) +
        "x. This compares the engine in one process (a message there is a pointer copy) with "
        "PyTorch across three: it is not like for like. `actrain bench cluster` compares "
        "actrain's own processes with it (and with DDP).\n");
  emit(floor_section(floors, torch_spread, o.runs));
}

/// The full runs: the reference MLP config, async, 1/2/4/8 workers, full data.
void full_runs(caf::actor_system& sys, const engine_options& o,
               const std::function<void(const std::string&)>& emit) {
  emit("## MLP 784-256-10 on Fashion-MNIST, async, " + std::to_string(o.full_epochs) +
       " epochs (full data)\n\n");
  emit("Reproduce: `actrain bench engine --full`. ");
  emit("Hyper-parameters: " + describe_hparams(reference_mlp_job(o.full_epochs)) +
       "; shards = 2; the default staleness policy (late pushes damped, Adam's beta1 corrected "
       "for the momentum asynchrony adds, the shards' weight average evaluated), the same job "
       "for every row. Test accuracy on the 10,000 test images.\n\n");
  emit("| workers | test accuracy | test loss | samples/s | wall s | max staleness seen |\n");
  emit("| --- | --- | --- | --- | --- | --- |\n");
  auto job = reference_mlp_job(o.full_epochs);
  auto data = std::make_shared<job_data>(load_job_data(job));
  fit_model_to_data(job, *data);
  for (int w : {1, 2, 4, 8}) {
    if (o.only_workers && w != o.only_workers) continue;
    auto j = job;
    if (!o.stale.empty()) j.staleness.kind = o.stale;
    j.local_aggregation = o.aggregate;
    auto res = run_engine(sys, j, data, w, 2);
    std::int64_t maxs = 0;
    for (std::size_t i = 0; i < res.staleness_histogram.size(); ++i)
      if (res.staleness_histogram[i] > 0) maxs = static_cast<std::int64_t>(i);
    emit("| " + std::to_string(w) + " | " + fmt(res.test.accuracy, 4) + " | " +
         fmt(res.test.loss, 4) + " | " + fmt(res.samples_per_s, 0) + " | " + fmt(res.seconds, 1) +
         " | " + std::to_string(maxs) + " |\n");
  }
}

}  // namespace

int bench_engine(const std::vector<std::string>& args) {
  engine_options o;
  try {
    o = parse_engine_options(args);
  } catch (const std::exception& e) {
    std::cerr << "bench engine: unknown option " << e.what()
              << " (--full, --no-torch, --runs=N, --rows=N, --only=adam,softmax,linear,sgd)\n";
    return 2;
  }
  caf::actor_system_config cfg;
  prepare_config(cfg);
  std::istringstream no_file;
  if (auto err = cfg.parse(o.caf_args, no_file)) {
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
  if (o.full)
    full_runs(sys, o, emit);
  else
    side_by_side(sys, o, emit);
  if (o.experiment()) return 0;  // a partial table is not the record
  update_doc_section(benchmarks_doc_path(), o.full ? "engine-full" : "engine", md.str());
  std::cout << "\nwritten to " << benchmarks_doc_path() << "\n";
  return 0;
}

}  // namespace actrain
