// Embedding actrain in an application's own actor system: spawn a shard and talk to it, then
// run a whole (small) job with workers and a coordinator in the same system.
#include <iostream>

#include <caf/all.hpp>

#include <actrain/engine.hpp>
#include <actrain/system.hpp>

int main(int argc, char** argv) {
  caf::actor_system_config cfg;
  actrain::prepare_config(cfg);  // actrain's message types + scheduler settings
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << cfg.render(err) << "\n";
    return 2;
  }
  caf::actor_system sys{cfg};

  // 1. A shard on its own: 4 parameters, plain SGD with lr 0.5.
  actrain::shard_config sc;
  sc.init = {1.f, 1.f, 1.f, 1.f};
  sc.optim.kind = "sgd";
  sc.optim.lr = 0.5f;
  auto s = actrain::spawn_shard(sys, sc);
  caf::scoped_actor self{sys};
  actrain::gradient g;
  g.rows = 1;
  g.values = actrain::tensor(std::vector<float>{1.f, 0.f, -1.f, 2.f});
  self->request(s, caf::infinite, actrain::push_pull_atom::value, g)
      .receive(
          [](const actrain::weights& w) {
            std::cout << "shard after one push: version " << w.version << ", values";
            for (auto v : w.values.values()) std::cout << " " << v;
            std::cout << "\n";
          },
          [&](const caf::error& e) { std::cerr << actrain::describe_error(e) << "\n"; });
  self->send_exit(s, caf::exit_reason::user_shutdown);

  // 2. A whole job: linear regression, 2 workers, 2 shards, in this actor system.
  actrain::job_spec job;
  job.model.kind = "linear";
  job.data.kind = "synthetic_linear";
  job.data.rows = 4000;
  job.data.test_rows = 500;
  job.data.features = 8;
  job.workers = 2;
  job.shards = 2;
  job.epochs = 3;
  job.optim.lr = 0.05f;
  auto data = std::make_shared<actrain::job_data>(actrain::load_job_data(job));
  actrain::fit_model_to_data(job, *data);
  auto res = actrain::run_job(sys, job, data);
  if (!res.ok) {
    std::cerr << "job failed: " << res.error << "\n";
    return 1;
  }
  std::cout << "embedded job: test MSE " << res.test.loss << " after " << res.samples
            << " samples\n";
  return 0;
}
