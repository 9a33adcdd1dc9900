// validate(job_spec): every field of a job checked before anything is built, so a bad INI file
// fails at once with a message that names the field ("job.workers must be >= 1, got 0").
#include <actrain/job.hpp>

#include "tensor/device.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace actrain {
namespace {

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw std::invalid_argument("job." + field + " " + what);
}

template <class T>
void require_at_least(const std::string& field, T value, T min) {
  if (value < min) {
    std::ostringstream os;
    os << "must be >= " << min << ", got " << value;
    fail(field, os.str());
  }
}

template <class List>
void require_in(const std::string& field, const std::string& value, const List& allowed) {
  std::string list;
  for (const auto& a : allowed) {
    if (value == a) return;
    list += list.empty() ? "" : ", ";
    list += a;
  }
  fail(field, "must be one of " + list + ", got '" + value + "'");
}
void require_one_of(const std::string& field, const std::string& value,
                    std::initializer_list<const char*> allowed) {
  require_in(field, value, allowed);
}

// Runs a lower layer's validate() and prefixes its message with the job field it came from.
template <class Spec>
void validate_nested(const std::string& field, const Spec& spec) {
  try {
    validate(spec);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("job." + field + ": " + e.what());
  }
}

void validate_device(const std::string& device) {
  if (!is_device_name(device)) fail("device", "must be cpu, auto or cuda:N, got '" + device + "'");
}

void validate_model(const model_spec& m) {
  if (!m.factory) require_in("model.kind", m.kind, model_kinds());
  const bool builtin = m.kind == "linear" || m.kind == "softmax" || m.kind == "mlp";
  // 0 means "take it from the data" (fit_model_to_data); negative is always wrong.
  require_at_least("model.input_dim", m.input_dim, 0);
  require_at_least("model.output_dim", m.output_dim, 0);
  if (m.kind == "linear" && m.output_dim > 1)
    fail("model.output_dim",
         "must be 1 for linear regression, got " + std::to_string(m.output_dim));
  if (builtin && m.kind != "mlp" && !m.hidden.empty())
    fail("model.hidden", "is only for kind mlp, got " + std::to_string(m.hidden.size()) +
                             " layers for kind " + m.kind);
  for (std::size_t i = 0; i < m.hidden.size(); ++i)
    require_at_least("model.hidden[" + std::to_string(i) + "]", m.hidden[i], 1);
  // Dims known: the model layer has the final word (it knows its own limits).
  if (m.input_dim > 0 && m.output_dim > 0) validate_nested("model", m);
}

void validate_data(const data_spec& d) {
  require_one_of("data.kind", d.kind, {"fashion_mnist", "synthetic_linear", "csv"});
  if (d.kind == "synthetic_linear") {
    require_at_least<std::int64_t>("data.rows", d.rows, 1);
    require_at_least<std::int64_t>("data.test_rows", d.test_rows, 0);
    require_at_least("data.features", d.features, 1);
    if (!(d.noise >= 0) || !std::isfinite(d.noise))
      fail("data.noise", "must be a finite value >= 0, got " + std::to_string(d.noise));
  }
  if (d.kind == "csv") {
    if (d.path.empty()) fail("data.path", "must name the training CSV file for kind csv");
    csv_delimiter(d.delimiter);  // throws naming data.delimiter
    if (d.test_path.empty() && !(d.test_fraction > 0 && d.test_fraction < 1))
      fail("data.test-fraction", "must be in (0, 1) when data.test-path is empty, got " +
                                     std::to_string(d.test_fraction));
  }
  require_at_least<std::int64_t>("data.train_subset", d.train_subset, 0);
  require_at_least<std::int64_t>("data.test_subset", d.test_subset, 0);
}

/// The CPUs this process may run on (its affinity mask), or the machine's.
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

topology plan_topology(const job_spec& job, placement where, int cores) {
  if (cores <= 0) cores = usable_cores();
  if (where == placement::cluster && job.local_aggregation)
    throw std::invalid_argument(
        "job.local-aggregation combines the workers of one process; across nodes each worker is "
        "its own node: turn it off");
  topology t;
  t.barriers = job.mode != "async";
  // With local aggregation the whole process pushes and pulls as one worker (group 0).
  t.barrier_workers = job.local_aggregation ? 1 : job.workers;
  t.barrier_backup = job.mode == "sync" && !job.local_aggregation ? job.backup : 0;
  t.aggregators = job.local_aggregation;
  if (where == placement::one_process) {
    // Sleeps (simulated compute, stragglers) and device calls block a thread: those get their
    // own. One worker of a small model (a step of a few tens of us) and its shards hand messages
    // over on one scheduler thread instead of waking a sleeping thread per message, which costs
    // more than the step (bench engine, linear: 0.16 -> 0.8 of the reference's samples/s). A
    // large model's step (the MLP: ~1 ms) hides the wake-ups, and a detached worker lets the
    // shard's optimizer step run on the other core meanwhile.
    constexpr double small_step_flops = 20e6;  // ~0.25 ms of one core's sgemm here
    const bool blocking =
        job.simulated_compute_s > 0 || !job.stragglers.empty() || job.device != "cpu";
    const double flops = 6.0 * static_cast<double>(num_params(job.model)) * job.batch;
    t.workers_on_scheduler = !blocking && job.workers == 1 && flops < small_step_flops;
  }
  // Sync (and an aggregator) holds step t+1's weights until step t is combined anyway: one
  // push_pull per shard and step halves the messages and wake-ups of a prefetched pull. A worker
  // sharing the scheduler with its shard gains nothing from prefetching either.
  // Async across processes: a prefetched pull is a second round trip per step, whose wake-ups
  // and socket copies cost more CPU than its overlap saves (docs/benchmarks.md, "Across
  // processes"), and makes every gradient an update staler.
  // Async in one process with more workers computing than it has cores: the cores are busy with
  // compute anyway, so a prefetched pull buys little overlap (2-5% samples/s here) and makes
  // every gradient an update staler, which costs accuracy (0.3-0.8 points at 4-8 workers with
  // momentum or Adam: docs/benchmarks.md, staleness), with a straggler too now that finished
  // workers take shares of its epochs (it no longer walks its rows alone at the end, where fresh
  // weights gave it back the full momentum). Sleeping or device compute leaves the cores free.
  const bool cores_busy =
      job.simulated_compute_s <= 0 && job.device == "cpu" && job.workers > cores;
  // More than twice as many as the cores take turns in cores + 1 compute slots (in-turn):
  // preempted mid-step by each other, 8 workers on 2 cores pushed gradients 4 updates stale on
  // average with the push, 0.8-0.9 points of accuracy below the same workers in turn at the same
  // samples/s. 4 workers on 2 cores are 1 update stale with the push, and in turn they gained
  // 0.2 points for 13% fewer samples/s (docs/benchmarks.md, staleness).
  const bool in_turn =
      job.mode == "async" && !job.local_aggregation && !t.workers_on_scheduler &&
      (job.async_pull == "in-turn" || (job.async_pull == "auto" &&
                                       where == placement::one_process && cores_busy &&
                                       job.workers > 2 * cores));
  if (in_turn && where == placement::cluster)
    throw std::invalid_argument(
        "job.async-pull=in-turn shares the compute slots of one process; across nodes each worker "
        "is its own node: use auto or with-push");
  if (in_turn) t.compute_slots = job.compute_slots > 0 ? job.compute_slots : cores + 1;
  const bool async_with_push =
      job.mode == "async" && !in_turn &&
      (job.async_pull == "with-push" ||
       (job.async_pull == "auto" && (where == placement::cluster || cores_busy)));
  t.push_pull =
      job.mode == "sync" || job.local_aggregation || t.workers_on_scheduler || async_with_push;
  return t;
}

void validate(const job_spec& job) {
  if (job.name.empty()) fail("name", "must not be empty");
  validate_model(job.model);
  validate_nested("optim", job.optim);
  validate_nested("staleness", job.staleness);
  validate_data(job.data);

  require_one_of("mode", job.mode, {"async", "sync", "ssp"});
  require_at_least("workers", job.workers, 1);
  require_at_least("shards", job.shards, 1);
  require_at_least("batch", job.batch, 1);
  require_at_least("epochs", job.epochs, 1);
  require_at_least("window", job.window, 1);
  require_at_least("backup", job.backup, 0);
  if (job.backup >= job.workers)
    fail("backup", "must be < job.workers (" + std::to_string(job.workers) + "), got " +
                       std::to_string(job.backup));
  require_at_least("ssp_bound", job.ssp_bound, 0);
  require_one_of("late_policy", job.late_policy, {"drop", "fold"});
  require_one_of("async_pull", job.async_pull, {"auto", "prefetch", "with-push", "in-turn"});
  require_at_least("compute_slots", job.compute_slots, 0);
  require_at_least("turn_steps", job.turn_steps, 1);
  if (job.local_aggregation && job.backup > 0)
    fail("backup",
         "must be 0 with local_aggregation (the aggregator waits for every local "
         "worker, so there is no backup to skip), got " +
             std::to_string(job.backup));
  if (!(job.eval_every > 0) || !std::isfinite(job.eval_every))
    fail("eval_every", "must be > 0, got " + std::to_string(job.eval_every));
  if (!(job.target_accuracy >= 0 && job.target_accuracy <= 1))
    fail("target_accuracy",
         "must be in [0, 1] (0 = off), got " + std::to_string(job.target_accuracy));
  if (!(job.clip_norm >= 0) || !std::isfinite(job.clip_norm))
    fail("clip_norm", "must be >= 0 (0 = off), got " + std::to_string(job.clip_norm));
  if (job.compression != "none" && job.compression != "fp16" && job.compression != "topk")
    fail("compression", "must be none, fp16 or topk, got '" + job.compression + "'");
  if (!(job.topk_fraction > 0 && job.topk_fraction <= 1))
    fail("topk_fraction", "must be in (0, 1], got " + std::to_string(job.topk_fraction));
  validate_device(job.device);
  for (std::size_t i = 0; i < job.stragglers.size(); ++i)
    if (job.stragglers[i] < 0 || job.stragglers[i] >= job.workers)
      fail("stragglers[" + std::to_string(i) + "]", "must be a worker id in [0, " +
                                                        std::to_string(job.workers) + "), got " +
                                                        std::to_string(job.stragglers[i]));
  auto seconds = [](const char* field, double v) {
    if (!(v >= 0) || !std::isfinite(v))
      fail(field, "must be a finite number of seconds >= 0, got " + std::to_string(v));
  };
  seconds("straggler_delay_s", job.straggler_delay_s);
  seconds("straggler_jitter_s", job.straggler_jitter_s);
  seconds("simulated_compute_s", job.simulated_compute_s);
  seconds("checkpoint.every_seconds", job.checkpoint.every_seconds);
  require_at_least<std::int64_t>("checkpoint.every_steps", job.checkpoint.every_steps, 0);
  require_at_least("checkpoint.keep", job.checkpoint.keep, 1);
  if (!job.checkpoint.dir.empty() && job.local_aggregation)
    fail("checkpoint.dir",
         "checkpoints need one front per shard; local_aggregation is not "
         "supported with them");

  // Each shard needs at least one parameter; only checkable once the dims are known.
  if (job.model.input_dim > 0 && job.model.output_dim > 0) {
    const std::size_t n = num_params(job.model);
    if (static_cast<std::size_t>(job.shards) > n)
      fail("shards", "must be <= the model's parameter count (" + std::to_string(n) + "), got " +
                         std::to_string(job.shards));
  }
}

}  // namespace actrain
