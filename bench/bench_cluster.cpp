// `actrain bench cluster`: the same async MLP job in one process and across processes, and
// PyTorch's RPC parameter server across processes, side by side (bench/bench_cluster.hpp).
#include "bench/bench_cluster.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <actrain/backend.hpp>
#include <actrain/job.hpp>
#include <actrain/reference_trainer.hpp>
#include "bench/bench.hpp"
#include "bench/bench_wire.hpp"
#include "bench/doc_section.hpp"
#include "bench/median.hpp"
#include "bench/torch_script.hpp"

extern char** environ;

namespace actrain {

namespace {

struct cluster_options {
  int runs = 3;
  int epochs = 1;
  bool torch = true;
  bool doc = true;
};

/// A child process writing its stdout and stderr to `log`.
struct child_process {
  pid_t pid = -1;
  std::string log;
};

child_process spawn_logged(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  child_process c;
  c.log = log;
  // posix_spawn, not Boost.Process: its v1 needs the compiled Boost.Filesystem library, which
  // nothing else here links (as in bench wire).
  if (::posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  if (c.pid < 0) throw std::runtime_error("bench cluster: cannot start " + args[0]);
  return c;
}

/// Waits (bounded) for every child; kills and reaps those still running. True when all
/// exited 0.
bool wait_all(std::vector<child_process>& kids, std::chrono::seconds bound) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  bool ok = true;
  for (auto& k : kids) {
    int status = 0;
    for (;;) {
      auto r = ::waitpid(k.pid, &status, WNOHANG);
      if (r == k.pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(k.pid, SIGKILL);
        ::waitpid(k.pid, &status, 0);
        ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The samples/s of a coordinator's result line ("..., 29612 samples/s over 4.1 s"); 0: none.
double result_rate(const std::string& text) {
  static const std::regex re(R"(result: .*, (\d+) samples/s over )");
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stod(m[1]) : 0;
}

/// The job both actrain sides run: the tree's config file and the same overrides.
std::vector<std::string> job_args(const std::string& src, const cluster_options& o) {
  auto e = std::to_string(o.epochs);
  return {
      "--config",          src + "/config/mlp_fashion.ini", "--job.workers=2",  "--job.shards=1",
      "--job.epochs=" + e, "--job.eval-every=" + e,         "--optim.kind=sgd", "--optim.lr=0.1",
      "--job.batch=64"};
}

double run_in_process(const std::string& bin, const std::string& src, const cluster_options& o,
                      const std::string& dir) {
  std::vector<std::string> args{bin, "train"};
  for (auto& a : job_args(src, o)) args.push_back(a);
  std::vector<child_process> kids{spawn_logged(args, dir + "/train.log")};
  if (!wait_all(kids, std::chrono::seconds(600))) {
    std::cerr << "bench cluster: actrain train failed:\n" << read_file(dir + "/train.log");
    return 0;
  }
  return result_rate(read_file(dir + "/train.log"));
}

/// The job as `actrain node` processes (a coordinator, 1 ps, 2 workers) with `overrides` on top.
double run_processes(const std::string& bin, const std::string& src, const cluster_options& o,
                     const std::string& dir, const std::vector<std::string>& overrides) {
  auto port_file = dir + "/port";
  std::filesystem::remove(port_file);
  auto common = job_args(src, o);
  common.insert(common.end(), overrides.begin(), overrides.end());
  for (std::string a :
       {"--cluster.host=127.0.0.1", "--cluster.ps-nodes=1", "--cluster.join-timeout=60000"})
    common.push_back(a);
  common.push_back("--cluster.token=bench-" + std::to_string(::getpid()));
  auto node = [&](const std::string& role, std::vector<std::string> extra) {
    std::vector<std::string> args{bin, "node", "--role", role};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  std::vector<child_process> kids;
  kids.push_back(
      spawn_logged(node("coordinator", {"--cluster.port=0", "--cluster.port-file=" + port_file}),
                   dir + "/coordinator.log"));
  std::string port;
  for (int i = 0; i < 3000 && port.empty(); ++i) {
    std::ifstream in(port_file);
    if (!(in >> port)) port.clear();
    if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (port.empty()) {
    wait_all(kids, std::chrono::seconds(0));
    std::cerr << "bench cluster: the coordinator did not listen\n";
    return 0;
  }
  kids.push_back(spawn_logged(node("ps", {"--cluster.port=" + port}), dir + "/ps.log"));
  for (int w = 0; w < 2; ++w)
    kids.push_back(spawn_logged(node("worker", {"--cluster.port=" + port}),
                                dir + "/worker" + std::to_string(w) + ".log"));
  auto ok = wait_all(kids, std::chrono::seconds(600));
  auto text = read_file(dir + "/coordinator.log");
  if (!ok) {
    std::cerr << "bench cluster: a node failed:\n" << text;
    return 0;
  }
  return result_rate(text);
}

cluster_options parse(const std::vector<std::string>& args) {
  cluster_options o;
  for (auto& a : args) {
    if (a.rfind("--runs=", 0) == 0)
      o.runs = std::max(1, std::stoi(a.substr(7)));
    else if (a.rfind("--epochs=", 0) == 0)
      o.epochs = std::max(1, std::stoi(a.substr(9)));
    else if (a == "--no-torch")
      o.torch = false;
    else if (a == "--no-doc")
      o.doc = false;
    else
      throw std::invalid_argument(a);
  }
  return o;
}

}  // namespace

int bench_cluster(const std::vector<std::string>& args) {
  cluster_options o;
  try {
    o = parse(args);
  } catch (const std::exception& e) {
    std::cerr << "actrain bench cluster: unknown option '" << e.what()
              << "' (--runs=N, --epochs=N, --no-torch, --no-doc)\n";
    return 2;
  }
  auto* env = std::getenv("ACTRAIN_SOURCE_DIR");
  std::string src = env ? env : std::filesystem::current_path().string();
  auto bin = std::filesystem::read_symlink("/proc/self/exe").string();
  // The MLP's whole parameter vector crosses each way every step (one shard): 203530 floats.
  const std::uint64_t step_bytes = (784 * 256 + 256 + 256 * 10 + 10) * sizeof(float);
  // Forks: before this process starts any thread. Its push_pulls are timed in every run, right
  // before that run's processes: the bound then sees the same moments of this shared machine.
  raw_tcp_peer raw(step_bytes);
  // Compute per step: the reference trainer on one thread, the same model, optimizer and batch.
  default_blas_threads(1);
  auto ref = reference_mlp_job(1);
  ref.optim = optim_spec{};
  ref.optim.kind = "sgd";
  ref.optim.lr = 0.1f;
  ref.data.train_subset = 20000;
  ref.data.test_subset = 1000;
  auto data = load_job_data(ref);
  fit_model_to_data(ref, data);
  std::vector<double> step_s, tcp_runs, local, procs, procs_prefetch, procs_sync, rpc, rpc_overlap,
      ddp;
  auto dir = std::filesystem::temp_directory_path() /
             ("actrain_bench_cluster_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  bool torch_ok = o.torch;
  for (int r = 0; r < o.runs; ++r) {
    step_s.push_back(64.0 / reference_train(ref, data).samples_per_s);
    local.push_back(run_in_process(bin, src, o, dir.string()));
    tcp_runs.push_back(raw.push_pull_seconds(200));
    // The two async forms swap places every run, so neither always runs right after the other.
    auto async_default = [&] {
      procs.push_back(run_processes(bin, src, o, dir.string(), {"--job.mode=async"}));
    };
    auto async_prefetch = [&] {
      procs_prefetch.push_back(run_processes(bin, src, o, dir.string(),
                                             {"--job.mode=async", "--job.async-pull=prefetch"}));
    };
    if (r % 2 == 0) {
      async_default();
      async_prefetch();
    } else {
      async_prefetch();
      async_default();
    }
    procs_sync.push_back(run_processes(bin, src, o, dir.string(), {"--job.mode=sync"}));
    if (torch_ok) {
      auto e = " --epochs " + std::to_string(o.epochs);
      auto rate = [&](const std::string& script, const std::string& job) {
        for (auto& j : torch_json_lines(script + e))
          if (j.value("job", "") == job) return j.value("samples_per_s", 0.0);
        return 0.0;
      };
      rpc.push_back(rate("torch_rpc_ps.py --trainers 2", "rpc_ps_mlp"));
      rpc_overlap.push_back(rate("torch_rpc_ps.py --trainers 2 --overlap", "rpc_ps_mlp_overlap"));
      ddp.push_back(rate("torch_ddp.py --ranks 2", "ddp_mlp"));
      if (rpc.back() <= 0 || rpc_overlap.back() <= 0 || ddp.back() <= 0) {
        torch_ok = false;  // no torch here: the rest of the table stands
        rpc.clear();
        rpc_overlap.clear();
        ddp.clear();
      }
    }
    std::cerr << "bench cluster: run " << r + 1 << ": one process " << local.back()
              << " samples/s, processes " << procs.back() << " (prefetching "
              << procs_prefetch.back() << ", sync " << procs_sync.back() << "; the bound "
              << 2 * 64 / (step_s.back() + tcp_runs.back()) << "), PyTorch RPC "
              << (rpc.empty() ? 0 : rpc.back()) << " (overlapped "
              << (rpc_overlap.empty() ? 0 : rpc_overlap.back()) << "), DDP "
              << (ddp.empty() ? 0 : ddp.back()) << "\n";
    if (local.back() <= 0 || procs.back() <= 0 || procs_prefetch.back() <= 0 ||
        procs_sync.back() <= 0)
      return 1;
  }
  std::filesystem::remove_all(dir);
  double step = median(step_s), one = median(local), across = median(procs);
  double across_sync = median(procs_sync);
  double tcp_s = median(tcp_runs);
  double bound = 2 * 64 / (step + tcp_s);
  // Ratios are paired: each run's sides ran within a minute of one another, and this shared
  // machine's speed drifts more than that between runs.
  auto paired = [&](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> q;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) q.push_back(a[i] / b[i]);
    return median(q);
  };
  std::vector<double> bounds;
  for (std::size_t r = 0; r < step_s.size(); ++r)
    bounds.push_back(2 * 64 / (step_s[r] + tcp_runs[r]));
  std::ostringstream md;
  md << "## Across processes: the same job in one process, in `actrain node` processes, and "
        "PyTorch's RPC parameter server and DDP\n\n"
     << "Reproduce: `actrain bench cluster --runs=" << o.runs << " --epochs=" << o.epochs
     << "`. MLP 784-256-10 on Fashion-MNIST (60000 training rows), plain SGD lr 0.1, batch 64 "
        "per worker, 2 workers and 1 shard, "
     << o.epochs
     << " epoch(s); both actrain sides run config/mlp_fashion.ini with the same overrides and "
        "report the coordinator's training samples/s (first assignment to last step; "
        "evaluation not timed). Medians of "
     << o.runs
     << " runs, each running every side once in turn; every ratio is the median of the runs' own "
        "ratios (paired: a run's sides ran within a minute of one another). Every side shares this "
        "machine's 2 cores: "
        "one process (`actrain train`: 2 worker threads, 1 BLAS thread each), four processes "
        "(`actrain node`: a coordinator, 1 ps, 2 workers, 1 BLAS thread each; in sync mode the "
        "barrier runs on the ps node, behind its bulk channel), PyTorch's RPC parameter server in "
        "three (1 PS + "
        "2 trainers, 1 thread each; `bench/torch/torch_rpc_ps.py`, tutorial form: pull, compute, "
        "push, each a blocking rpc_sync; overlapped form `--overlap`: the next pull in flight "
        "during compute and the push asynchronous, as actrain's workers do in one process; across "
        "processes they send one push_pull per step, answered with the next weights: "
        "`job.async-pull = auto`) and DDP in two (2 ranks over gloo, 1 thread each, local batch 64 "
        "= global 128 like 2 sync workers; "
        "`bench/torch/torch_ddp.py`).\n\n"
     << "| side | mode | processes | samples/s | ratio (what it measures) |\n"
     << "| --- | --- | --- | --- | --- |\n"
     << "| actrain, one process | async | 1 | " << fmt(one, 0) << " | - |\n"
     << "| actrain, `actrain node` processes | async | 4 | " << fmt(across, 0) << " | "
     << fmt(paired(procs, local), 2) << " of one process (goal 0.7); "
     << fmt(paired(procs, bounds), 2) << " of the bound below (goal 0.9) |\n"
     << "| actrain, `actrain node` processes, `--job.async-pull=prefetch` | async | 4 | "
     << fmt(median(procs_prefetch), 0)
     << " | the default across processes (one push_pull per step) / this = "
     << fmt(paired(procs, procs_prefetch), 2) << "x |\n";
  if (!rpc.empty()) {
    double pt = median(rpc), po = median(rpc_overlap);
    md << "| PyTorch RPC parameter server, tutorial form | async | 3 | " << fmt(pt, 0)
       << " | actrain across processes / this = " << fmt(paired(procs, rpc), 2)
       << "x (goal 2.5x) |\n"
       << "| PyTorch RPC parameter server, overlapped | async | 3 | " << fmt(po, 0)
       << " | actrain across processes / this = " << fmt(paired(procs, rpc_overlap), 2)
       << "x (goal 2x) |\n";
  }
  md << "| actrain, `actrain node` processes | sync | 4 | " << fmt(across_sync, 0) << " | - |\n";
  if (!ddp.empty()) {
    double pd = median(ddp);
    md << "| PyTorch DDP over gloo | sync | 2 | " << fmt(pd, 0)
       << " | actrain sync across processes / this = " << fmt(paired(procs_sync, ddp), 2)
       << "x (goal 1.5x) |\n";
  }
  md << "\nThe bound across processes, measured in every run: a worker step computes for "
     << fmt(step * 1e6, 0)
     << " us (the reference trainer, one thread, the same model and batch) and moves the "
        "whole parameter vector each way ("
     << step_bytes << " bytes), which a raw-TCP push_pull between two processes does in "
     << fmt(tcp_s * 1e6, 0)
     << " us (Boost.Asio; the median of 200, timed right before each run's processes on a "
        "connection kept open; medians of the runs): 2 workers x 64 / ("
     << fmt(step * 1e6, 0) << " + " << fmt(tcp_s * 1e6, 0) << ") us = " << fmt(bound, 0)
     << " samples/s. The ratio to the bound is paired like the others: each run's processes "
        "against that run's bound.\n";
  std::cout << md.str();
  if (o.doc) update_doc_section(benchmarks_doc_path(), "cluster", md.str());
  return 0;
}

}  // namespace actrain
