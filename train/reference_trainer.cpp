// reference_train(): the single-threaded ground truth. Everything a step touches is allocated
// before the loop, so the loop is forward_backward + clip + optimizer step and nothing else.
#include <actrain/reference_trainer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace actrain {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

}  // namespace

train_result reference_train(const job_spec& job, const job_data& data,
                             const std::function<void(const progress_point&)>& on_progress,
                             std::int64_t max_steps) {
  validate(job);
  const dataset& train = data.train;
  if (train.rows == 0) throw std::invalid_argument("reference_train: the training set is empty");
  if (job.model.input_dim != train.features)
    throw std::invalid_argument("reference_train: job.model.input_dim is " +
                                std::to_string(job.model.input_dim) + " but the data has " +
                                std::to_string(train.features) +
                                " features (call fit_model_to_data first)");

  std::unique_ptr<backend> b = make_cpu_backend();
  std::unique_ptr<model> m = make_model(job.model, *b, job.batch);
  const std::size_t n = m->num_params();
  const std::size_t f = static_cast<std::size_t>(train.features);

  // The CPU backend's memory is host memory: the optimizer updates the uploaded parameters in
  // place, and the batch is handed to the model straight from the iterator's vectors.
  buffer params = b->allocate(n);
  buffer grad = b->allocate(n);
  {
    const std::vector<float> init = m->init_params(job.seed);
    b->upload(params.data(), init.data(), n);
  }
  std::unique_ptr<optimizer> opt = make_optimizer(job.optim, n);
  const span<float> w(params.data(), n);
  const span<float> g(grad.data(), n);

  batch_iterator it(train, job.batch, job.seed);
  std::vector<float> xb, yb;
  xb.reserve(static_cast<std::size_t>(job.batch) * f);
  yb.reserve(static_cast<std::size_t>(job.batch));

  // eval_every may be fractional: evaluate every round(eval_every * batches_per_epoch) steps.
  const std::int64_t per_epoch = it.batches_per_epoch();
  const std::int64_t eval_interval =
      std::max<std::int64_t>(1, std::llround(job.eval_every * static_cast<double>(per_epoch)));

  train_result r;
  std::int64_t step = 0;
  std::int64_t last_eval_step = -1;
  double loss_since_eval = 0;
  std::int64_t rows_since_eval = 0;
  bool stop = false;

  std::vector<float> host_params(n);
  auto run_eval = [&](int epoch) {
    b->download(host_params.data(), params.data(), n);
    progress_point p;
    p.epoch = epoch;
    p.step = step;
    p.samples = r.samples;
    p.seconds = r.seconds;
    p.train_loss = rows_since_eval ? loss_since_eval / static_cast<double>(rows_since_eval) : 0;
    const eval_result e = evaluate(job.model, host_params, data.test, *b);
    p.test_loss = e.loss;
    p.test_accuracy = e.accuracy;
    p.classes = e.classes;
    r.test = e;
    r.history.push_back(p);
    if (on_progress) on_progress(p);
    loss_since_eval = 0;
    rows_since_eval = 0;
    last_eval_step = step;
    if (job.target_accuracy > 0 && m->is_classifier() && data.test.rows > 0 &&
        e.accuracy >= job.target_accuracy)
      stop = true;
  };

  // Training time only: the clock pauses around each evaluation.
  auto segment = clock_type::now();
  int epoch = 0;
  while (epoch < job.epochs && !stop) {
    ++epoch;
    int rows;
    while (!stop && (rows = it.next(xb, yb)) > 0) {
      const loss_sum s =
          m->forward_backward(params.data(), batch_view{rows, xb.data(), yb.data()}, grad.data());
      if (job.clip_norm > 0) clip_by_norm(g, job.clip_norm);
      opt->step(w, g, scheduled_lr(job.optim, step));
      ++step;
      r.samples += rows;
      loss_since_eval += s.loss;
      rows_since_eval += rows;
      if (max_steps > 0 && step >= max_steps) stop = true;
      if (step % eval_interval == 0 && !stop) {
        r.seconds += seconds_since(segment);
        run_eval(epoch);
        segment = clock_type::now();
      }
    }
  }
  r.seconds += seconds_since(segment);
  if (last_eval_step != step) run_eval(epoch);

  r.params.resize(n);
  b->download(r.params.data(), params.data(), n);
  r.samples_per_s = r.seconds > 0 ? static_cast<double>(r.samples) / r.seconds : 0;
  return r;
}

}  // namespace actrain
