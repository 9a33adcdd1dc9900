// An outside application of actrain, built against the installed package. Each argument runs
// one check and exits non-zero naming what failed:
//   gradient   tanh_net's hand-written backward against central finite differences
//   model      tanh_net, chosen by its registered name, trained by 2 workers and 2 shards to
//              test MSE < 0.002 (the noise floor is 1e-4)
//   optimizer  an update rule of our own, registered by name, applied exactly by a shard
//   client     our own training loop over shards through the client API
//   cluster    1 coordinator + 2 ps + 2 worker simulated nodes, one worker node killed mid-run
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <actrain/actrain.hpp>
#include <actrain/testing.hpp>

#include "tanh_net.hpp"

// One line makes tanh_net a kind an INI file (or a job_spec) can name.
static const actrain::model_registration tanh_net_kind{"tanh_net",
                                                       actrain::make_factory<tanh_net>()};

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

/// x uniform in [-1, 1]^4, y from a fixed teacher tanh_net (width 6) plus N(0, 0.01^2) noise:
/// the best test MSE a student can reach is about 1e-4.
actrain::dataset teacher_data(std::int64_t rows, std::uint64_t seed) {
  auto cpu = actrain::make_cpu_backend();
  actrain::model_args args{actrain::model_spec{"tanh_net", 4, 1, {}}, cpu.get(), 1};
  args.spec.options["width"] = "6";
  tanh_net teacher{args};
  auto w = teacher.init_params(7);
  for (auto& v : w) v *= 2.f;  // a teacher with some curvature
  actrain::dataset d;
  d.rows = rows;
  d.features = 4;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::normal_distribution<float> noise(0.f, 0.01f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float x[4] = {u(rng), u(rng), u(rng), u(rng)};
    d.x.insert(d.x.end(), x, x + 4);
    d.y.push_back(teacher.predict(w.data(), x) + noise(rng));
  }
  return d;
}

double variance(const std::vector<float>& y) {
  double m = 0, v = 0;
  for (float t : y) m += t;
  m /= static_cast<double>(y.size());
  for (float t : y) v += (t - m) * (t - m);
  return v / static_cast<double>(y.size());
}

actrain::job_spec tanh_job() {
  actrain::job_spec job;
  job.name = "consumer";
  job.model = actrain::model_spec{"tanh_net", 4, 1, {}};
  job.model.options["width"] = "16";
  job.optim.kind = "adam";
  job.optim.lr = 0.01f;
  // Decayed over the job's 2500 updates per shard (20 epochs of 4000 rows, batch 32): the last
  // iterates settle instead of bouncing at the noise of a constant rate.
  job.optim.schedule = "cosine";
  job.optim.total_steps = 2500;
  job.optim.min_lr = 0.0005f;
  job.workers = 2;
  job.shards = 2;
  job.batch = 32;
  job.epochs = 20;
  return job;
}

void gradient_check() {
  actrain::model_spec spec{"tanh_net", 3, 1, {}};
  spec.options["width"] = "4";
  auto cpu = actrain::make_cpu_backend();
  auto m = actrain::make_model(spec, *cpu, 5);
  auto p = m->init_params(11);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : p) v += 0.3f * u(rng);  // biases off zero too
  std::vector<float> x(15), y(5);
  for (auto& v : x) v = u(rng);
  for (auto& v : y) v = u(rng);
  actrain::batch_view b{5, x.data(), y.data()};
  std::vector<float> g(m->num_params());
  m->forward_backward(p.data(), b, g.data());
  double worst = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const float eps = 1e-2f, keep = p[i];
    p[i] = keep + eps;
    double up = m->evaluate(p.data(), b).loss / 5;
    p[i] = keep - eps;
    double down = m->evaluate(p.data(), b).loss / 5;
    p[i] = keep;
    double numeric = (up - down) / (2 * eps);
    worst = std::max(worst, std::abs(numeric - g[i]) / (1e-3 + std::abs(numeric)));
  }
  check(worst < 1e-2, "tanh_net backward matches finite differences on all " +
                          std::to_string(p.size()) + " parameters (worst relative error " +
                          std::to_string(worst) + ")");
}

void train_model(caf::actor_system& sys) {
  auto data = std::make_shared<actrain::job_data>();
  data->train = teacher_data(4000, 1);
  data->test = teacher_data(1000, 2);
  auto job = tanh_job();
  auto res = actrain::run_job(sys, job, data);
  check(res.ok, "the tanh_net job finished: " + res.error);
  const double var = variance(data->test.y);
  std::printf("tanh_net, 2 workers x 2 shards: test MSE %.5f (variance of y %.5f)\n", res.test.loss,
              var);
  check(res.test.loss < 0.002,
        "test MSE below 0.002 (noise floor 1e-4, variance of y " + std::to_string(var) + ")");
  check(res.samples == 20 * 4000, "every sample trained once per epoch");
}

/// w -= lr * scale * sign(g); its state counts each weight's net moves.
class scaled_sign final : public actrain::slot_optimizer {
 public:
  scaled_sign(std::size_t n, float scale) : slot_optimizer(n, 1), scale_(scale) {}
  void step(actrain::span<float> w, actrain::span<const float> g, float lr) override {
    for (std::size_t i = 0; i < n_; ++i) {
      const float s = g[i] > 0 ? 1.f : (g[i] < 0 ? -1.f : 0.f);
      w[i] -= lr * scale_ * s;
      slots_[0][i] += s;
    }
    ++steps_;
  }

 private:
  float scale_;
};

void own_optimizer(caf::actor_system& sys) {
  actrain::optimizer_registration rule{
      "scaled_sign", [](const actrain::optim_spec& s, std::size_t n) {
        return std::make_unique<scaled_sign>(n, std::stof(s.options.at("scale")));
      }};
  actrain::shard_config sc;
  sc.init = {1.f, 1.f, 1.f, 1.f};
  sc.optim.kind = "scaled_sign";
  sc.optim.lr = 0.5f;
  sc.optim.options["scale"] = "0.25";
  auto shard = actrain::spawn_shard(sys, sc);
  actrain::client kv{sys, {shard}, 4};
  kv.push({3.f, -1.f, 0.f, 2.f}).wait();
  auto after_one = kv.pull().get().values;
  check(after_one == std::vector<float>({0.875f, 1.125f, 1.f, 0.875f}),
        "one push: w -= 0.5 * 0.25 * sign(g), exactly");
  kv.push({1.f, 1.f, -4.f, 0.f}).wait();
  auto after_two = kv.pull().get();
  check(after_two.values == std::vector<float>({0.75f, 1.f, 1.125f, 0.875f}) &&
            after_two.versions == std::vector<std::int64_t>{2},
        "a second push: applied again, version 2");
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}

void own_loop(caf::actor_system& sys) {
  // y = 2 x0 - x1 + 0.5, fitted by our own loop: pull, our gradient, push_pull.
  std::vector<actrain::shard_actor> shards;
  for (int i = 0; i < 2; ++i) {
    actrain::shard_config sc;
    sc.index = i;
    auto r = actrain::param_range(3, 2, i);
    sc.init.assign(static_cast<std::size_t>(r.end - r.begin), 0.f);
    sc.optim.lr = 0.2f;
    shards.push_back(actrain::spawn_shard(sys, sc));
  }
  actrain::client kv{sys, shards, 3};
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto w = kv.pull().get().values;
  for (int step = 0; step < 400; ++step) {
    std::vector<float> g(3, 0.f);
    for (int r = 0; r < 16; ++r) {
      float x0 = u(rng), x1 = u(rng), y = 2 * x0 - x1 + 0.5f;
      float e = w[0] * x0 + w[1] * x1 + w[2] - y;
      g[0] += 2 * e * x0 / 16;
      g[1] += 2 * e * x1 / 16;
      g[2] += 2 * e / 16;
    }
    w = kv.push_pull(g, 16).get().values;
  }
  check(std::abs(w[0] - 2) < 1e-3 && std::abs(w[1] + 1) < 1e-3 && std::abs(w[2] - 0.5f) < 1e-3,
        "own loop reached w = (2, -1, 0.5): got (" + std::to_string(w[0]) + ", " +
            std::to_string(w[1]) + ", " + std::to_string(w[2]) + ")");
  for (auto& s : shards) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

void simulated_cluster() {
  actrain::testing::cluster_config c;
  c.job = tanh_job();
  c.job.eval_every = 0.5;  // the first evaluation says training is under way
  auto data = std::make_shared<actrain::job_data>();
  data->train = teacher_data(4000, 1);
  data->test = teacher_data(1000, 2);
  c.data = data;
  c.ps_nodes = 2;
  c.cluster.token = "consumer-token";
  c.cluster.join_timeout = std::chrono::seconds(10);
  auto started = std::make_shared<std::promise<void>>();
  auto once = std::make_shared<std::once_flag>();
  c.hooks.on_eval = [started, once](const actrain::progress_point&) {
    std::call_once(*once, [&] { started->set_value(); });
  };
  actrain::testing::cluster cluster{c};
  bool running =
      started->get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  check(running, "the simulated cluster started training");
  if (!running) return;
  cluster.kill_worker(1);
  auto res = cluster.wait(std::chrono::seconds(60));
  check(res.ok, "the job survived a killed worker node: " + res.error);
  check(res.workers_lost == 1, "one worker lost, got " + std::to_string(res.workers_lost));
  std::printf("simulated cluster with a killed worker: test MSE %.5f\n", res.test.loss);
  check(res.test.loss < 0.002,
        "test MSE below 0.002 with one worker lost (its rows go to the other)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer gradient|model|optimizer|client|cluster\n");
    return 2;
  }
  const std::string what = argv[1];
  std::printf("actrain %s (headers %d.%d.%d)\n", actrain::version_string(), ACTRAIN_VERSION_MAJOR,
              ACTRAIN_VERSION_MINOR, ACTRAIN_VERSION_PATCH);
  if (what == "gradient") {
    gradient_check();
  } else if (what == "cluster") {
    simulated_cluster();
  } else {
    caf::actor_system_config cfg;
    actrain::prepare_config(cfg);
    caf::actor_system sys{cfg};
    if (what == "model")
      train_model(sys);
    else if (what == "optimizer")
      own_optimizer(sys);
    else if (what == "client")
      own_loop(sys);
    else {
      std::fprintf(stderr, "unknown check '%s'\n", what.c_str());
      return 2;
    }
  }
  return failures == 0 ? 0 : 1;
}
