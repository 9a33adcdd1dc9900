// `actrain bench checkpoint`: throughput with periodic checkpoints against none, side by side in
// one run, plus checkpoint write time, size and read-back time.
#include "bench/bench_checkpoint.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include <unistd.h>

#include <actrain/checkpoint.hpp>
#include <actrain/engine.hpp>
#include <actrain/system.hpp>
#include "bench/bench.hpp"
#include "bench/doc_section.hpp"
#include "bench/median.hpp"

namespace actrain {
namespace {

struct options {
  int epochs = 8;
  int repeats = 2;
  std::vector<int> every{10, 1};  ///< seconds between checkpoints; 0 is always run (none)
  std::vector<std::string> modes{"async", "sync"};
  bool doc = true;
};

options parse(const std::vector<std::string>& args) {
  options o;
  for (auto& a : args) {
    if (a.rfind("--epochs=", 0) == 0) {
      o.epochs = std::stoi(a.substr(9));
    } else if (a.rfind("--repeats=", 0) == 0) {
      o.repeats = std::stoi(a.substr(10));
    } else if (a.rfind("--every=", 0) == 0) {
      o.every = parse_int_list(a.substr(8));
    } else if (a.rfind("--modes=", 0) == 0) {
      o.modes.clear();
      std::istringstream in(a.substr(8));
      for (std::string m; std::getline(in, m, ',');) o.modes.push_back(m);
    } else if (a == "--no-doc") {
      o.doc = false;
    } else {
      throw std::invalid_argument(a);
    }
  }
  if (o.epochs < 1 || o.repeats < 1) throw std::invalid_argument("--epochs / --repeats");
  for (auto s : o.every)
    if (s < 1) throw std::invalid_argument("--every: seconds >= 1");
  for (auto& m : o.modes)
    if (m != "async" && m != "sync") throw std::invalid_argument("--modes=" + m);
  return o;
}

/// One configuration's runs: throughput of each, and the checkpoints of all of them.
struct cell {
  std::vector<double> rates;
  std::int64_t written = 0, skipped = 0, bytes = 0;
  double write_s = 0;
  double accuracy = 0;
};

std::string label(int every) {
  return every == 0 ? "none" : "every " + std::to_string(every) + " s";
}

}  // namespace

int bench_checkpoint(const std::vector<std::string>& args) {
  options o;
  try {
    o = parse(args);
  } catch (const std::exception& e) {
    std::cerr << "actrain bench checkpoint: bad option " << e.what() << "\n";
    return 2;
  }
  auto dir = std::filesystem::temp_directory_path() /
             ("actrain-bench-checkpoint-" + std::to_string(::getpid()));
  std::vector<int> intervals{0};
  intervals.insert(intervals.end(), o.every.begin(), o.every.end());
  std::map<std::string, std::map<int, cell>> cells;  // mode -> interval -> runs
  std::string last_file;
  job_spec base = reference_mlp_job(o.epochs);
  base.workers = 2;
  base.shards = 2;
  base.eval_every = 100;  // the final evaluation only: the runs differ by their checkpoints alone
  base.optim = optim_spec{};
  base.optim.kind = "adam";
  base.optim.lr = 1e-3f;
  auto data = std::make_shared<job_data>(load_job_data(base));
  fit_model_to_data(base, *data);
  caf::actor_system_config cfg;
  prepare_config(cfg);
  caf::actor_system sys{cfg};
  std::cout << "checkpoint cost: " << describe(base.model) << " adam, 2 workers, 2 shards, "
            << o.epochs << " epochs, " << o.repeats << " repeat(s), interleaved\n";
  for (int r = 0; r < o.repeats; ++r) {
    for (auto& mode : o.modes) {
      for (int every : intervals) {
        auto job = base;
        job.mode = mode;
        std::filesystem::remove_all(dir);
        if (every > 0) {
          job.checkpoint.dir = dir.string();
          job.checkpoint.every_seconds = every;
          job.checkpoint.keep = 2;
          job.checkpoint.at_end = false;  // only the periodic ones count
        }
        auto res = run_job(sys, job, data);
        if (!res.ok) {
          std::cerr << "actrain bench checkpoint: " << mode << " " << label(every)
                    << " failed: " << res.error << "\n";
          return 1;
        }
        auto& c = cells[mode][every];
        c.rates.push_back(res.samples_per_s);
        c.written += res.checkpoints;
        c.skipped += res.checkpoints_skipped;
        c.write_s += res.checkpoint_write_s;
        c.bytes = std::max(c.bytes, res.checkpoint_bytes);
        c.accuracy = res.test.accuracy;
        if (!res.last_checkpoint.empty()) {
          last_file = (dir.parent_path() / "actrain-bench-checkpoint-last.bin").string();
          std::filesystem::copy_file(res.last_checkpoint, last_file,
                                     std::filesystem::copy_options::overwrite_existing);
        }
        std::cout << "  " << mode << ", " << label(every) << ": " << fmt(res.samples_per_s, 0)
                  << " samples/s over " << fmt(res.seconds, 1) << " s, " << res.checkpoints
                  << " checkpoint(s) written, " << res.checkpoints_skipped << " skipped\n"
                  << std::flush;
      }
    }
  }
  std::filesystem::remove_all(dir);
  // The resume's first phase: read a checkpoint back (header, crc32s, parse).
  double read_s = 0;
  if (!last_file.empty()) {
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto c = load_checkpoint(last_file);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    read_s = median(t);
    std::filesystem::remove(last_file);
  }

  std::ostringstream md;
  md << "`actrain bench checkpoint --epochs=" << o.epochs << " --repeats=" << o.repeats
     << "` (MLP 784-256-10 on Fashion-MNIST, Adam: the values and two optimizer slots of "
        "every parameter are saved; 2 workers, 2 shards, one process, both sides on the same 2 "
        "cores, runs interleaved; median throughput of the repeats; the ratio is samples/s with "
        "checkpoints over samples/s without, same mode). Checkpoints go to the system's temporary "
        "folder (written, fsync'd, renamed, folder fsync'd).\n\n"
     << "| mode | checkpoints | samples/s | ratio to none | written | skipped (writer busy) | "
        "mean write s | size MB | test accuracy |\n| --- | --- | --- | --- | --- | --- | --- | "
        "--- | --- |\n";
  for (auto& mode : o.modes) {
    auto none = median(cells[mode][0].rates);
    for (int every : intervals) {
      auto& c = cells[mode][every];
      auto rate = median(c.rates);
      md << "| " << mode << " | " << label(every) << " | " << fmt(rate, 0) << " | "
         << (every == 0 ? "1" : fmt(rate / none, 3)) << " | " << c.written << " | " << c.skipped
         << " | " << (c.written > 0 ? fmt(c.write_s / c.written, 3) : "-") << " | "
         << (c.bytes > 0 ? fmt(c.bytes / 1e6, 2) : "-") << " | " << fmt(c.accuracy, 4) << " |\n";
    }
  }
  md << "\nReading the last checkpoint back (the first phase of a resume: header, both crc32s, "
        "parse): "
     << fmt(read_s * 1e3, 1) << " ms (median of 5).\n";
  std::cout << "\n" << md.str();
  if (o.doc) {
    update_doc_section(benchmarks_doc_path(), "checkpoint", md.str());
    std::cout << "written to " << benchmarks_doc_path() << " (section checkpoint)\n";
  }
  return 0;
}

}  // namespace actrain
