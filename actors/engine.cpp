#include <actrain/engine.hpp>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <actrain/backend.hpp>
#include <actrain/system.hpp>
#include "actors/aggregator.hpp"
#include "actors/barrier.hpp"
#include "actors/compute_gate.hpp"
#include "actors/coordinator.hpp"
#include "actors/shard.hpp"
#include "actors/worker.hpp"

namespace actrain {

void prepare_config(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::actrain>();
  cfg.add_error_category(errc_category(),
                         [](std::uint8_t code, caf::atom_value, const caf::message& ctx) {
                           auto s = "actrain." + to_string(static_cast<errc>(code));
                           if (ctx.match_elements<std::string>())
                             s += ": " + ctx.get_as<std::string>(0);
                           return s;
                         });
  // Defaults only: a key the application set (in code, its INI file or its command line) stays.
  auto fill = [&cfg](const char* key, std::int64_t value) {
    if (!caf::get_if(&caf::content(cfg), key)) cfg.set(key, value);
  };
  fill("scheduler.max-threads", std::max(2u, std::thread::hardware_concurrency()));
  fill("work-stealing.moderate-poll-attempts", 0);
}

std::vector<shard_range_t> job_ranges(const job_spec& job) {
  auto n = static_cast<std::int64_t>(num_params(job.model));
  std::vector<shard_range_t> out;
  for (int s = 0; s < job.shards; ++s) out.push_back(param_range(n, job.shards, s));
  return out;
}

double held_steps(const job_spec& job) {
  if (job.compression != "topk" || !(job.topk_fraction > 0)) return 0;
  return (1.0 / job.topk_fraction - 1.0) / 2.0;
}

int shard_buffer(const job_spec& job) {
  if (job.mode != "async") return 1;
  const int want = job.staleness.buffer == 0 ? job.workers : job.staleness.buffer;
  return std::max(1, std::min(want, job.workers));
}

std::int64_t shard_average(const job_spec& job) {
  if (job.staleness.average >= 0) return job.staleness.average;
  return job.mode == "sync" ? 0 : 100;
}

std::vector<shard_config> make_shard_configs(const job_spec& job) {
  auto cpu = make_cpu_backend();
  auto init = make_model(job.model, *cpu, 1)->init_params(job.seed);
  std::vector<shard_config> out;
  auto ranges = job_ranges(job);
  const double held = held_steps(job);
  for (int s = 0; s < job.shards; ++s) {
    shard_config c;
    c.index = s;
    c.init.assign(init.begin() + ranges[s].begin, init.begin() + ranges[s].end);
    c.optim = job.optim;
    c.staleness = job.staleness;
    c.held_steps = held;
    c.buffer = shard_buffer(job);
    c.average = shard_average(job);
    out.push_back(std::move(c));
  }
  return out;
}

worker_config make_worker_config(const job_spec& job, const topology& topo,
                                 std::shared_ptr<const dataset> train, std::int32_t id) {
  worker_config w;
  w.id = id;
  w.model = job.model;
  w.train = std::move(train);
  w.batch = job.batch;
  w.seed = job.seed;
  w.device = job.device;
  w.clip_norm = job.clip_norm;
  w.window = job.window;
  w.simulated_compute_s = job.simulated_compute_s;
  w.push_pull = topo.push_pull;
  w.prefetch = topo.compute_slots == 0;  // in turn a worker pulls once it holds a slot
  w.turn_steps = job.turn_steps;
  w.compression = job.compression;
  w.topk_fraction = job.topk_fraction;
  if (std::find(job.stragglers.begin(), job.stragglers.end(), id) != job.stragglers.end()) {
    w.delay_s = job.straggler_delay_s;
    w.delay_jitter_s = job.straggler_jitter_s;
  }
  return w;
}

coordinator_config wire_job(caf::actor_system& sys, const job_spec& job,
                            std::shared_ptr<const job_data> data, engine_hooks hooks) {
  validate(job);
  // One BLAS thread per worker unless the host chose (oversubscription is 4-5x slower on 2 cores).
  default_blas_threads(1);
  coordinator_config cc;
  cc.job = job;
  cc.data = data;
  cc.ranges = job_ranges(job);
  const auto topo = plan_topology(job);
  for (auto& sc : make_shard_configs(job)) cc.shards.push_back(sys.spawn(shard, std::move(sc)));
  cc.fronts = make_aggregators(sys, job, topo, make_fronts(sys, job, topo, cc.shards));
  auto train = std::shared_ptr<const dataset>(data, &data->train);
  compute_gate_actor gate;
  if (topo.compute_slots > 0) gate = sys.spawn(compute_gate, topo.compute_slots);
  for (int w = 0; w < job.workers; ++w) {
    auto wc = make_worker_config(job, topo, train, w);
    wc.source = data->train_source;
    wc.gate = gate;
    cc.workers.push_back(spawn_worker(sys, std::move(wc), !topo.workers_on_scheduler));
  }
  cc.hooks = std::move(hooks);
  return cc;
}

engine_result run_coordinator(caf::actor_system& sys, const coordinator_actor& coord) {
  caf::scoped_actor self{sys};
  engine_result result;
  self->request(coord, caf::infinite, run_atom::value)
      .receive([&](engine_result& r) { result = std::move(r); },
               [&](const caf::error& err) {
                 result.ok = false;
                 result.error = describe_error(err);
               });
  self->wait_for(coord);
  return result;
}

coordinator_actor spawn_coordinator(caf::actor_system& sys, coordinator_config cfg) {
  return sys.spawn(coordinator, std::move(cfg));
}

engine_result run_coordinator(caf::actor_system& sys, coordinator_config cfg) {
  return run_coordinator(sys, spawn_coordinator(sys, std::move(cfg)));
}

engine_result run_job(caf::actor_system& sys, const job_spec& job,
                      std::shared_ptr<const job_data> data, engine_hooks hooks,
                      std::shared_ptr<const checkpoint> resume) {
  auto cc = wire_job(sys, job, std::move(data), std::move(hooks));
  cc.resume = std::move(resume);
  return run_coordinator(sys, std::move(cc));
}

shard_actor spawn_shard(caf::actor_system& sys, shard_config cfg) {
  return sys.spawn(shard, std::move(cfg));
}

worker_actor spawn_worker(caf::actor_system& sys, worker_config cfg, bool detached) {
  if (detached) return sys.spawn<caf::detached>(worker, std::move(cfg));
  return sys.spawn(worker, std::move(cfg));
}

}  // namespace actrain
