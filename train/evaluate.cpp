// evaluate(): mean loss and accuracy of a parameter vector on a data set, in batches.
#include <algorithm>
#include <stdexcept>

#include <actrain/job.hpp>

namespace actrain {

eval_result evaluate(const model_spec& spec, const std::vector<float>& params, const dataset& d,
                     backend& b, int batch_rows) {
  if (batch_rows < 1)
    throw std::invalid_argument("evaluate: batch_rows must be >= 1, got " +
                                std::to_string(batch_rows));
  if (params.size() != num_params(spec))
    throw std::invalid_argument("evaluate: " + describe(spec) + " has " +
                                std::to_string(num_params(spec)) + " parameters, got " +
                                std::to_string(params.size()));
  eval_result r;
  if (d.rows == 0) return r;
  if (d.features != spec.input_dim)
    throw std::invalid_argument("evaluate: " + describe(spec) + " takes " +
                                std::to_string(spec.input_dim) + " features, the data has " +
                                std::to_string(d.features));

  const int max_rows = static_cast<int>(std::min<std::int64_t>(batch_rows, d.rows));
  std::unique_ptr<model> m = make_model(spec, b, max_rows);
  const std::size_t f = static_cast<std::size_t>(d.features);

  // Host backends read the data set and the params where they are; others get one upload of
  // the params and one of each chunk.
  const bool host = b.is_host();
  buffer p_dev, x_dev, y_dev;
  const float* p = params.data();
  if (!host) {
    p_dev = b.allocate(params.size());
    b.upload(p_dev.data(), params.data(), params.size());
    p = p_dev.data();
    x_dev = b.allocate(static_cast<std::size_t>(max_rows) * f);
    y_dev = b.allocate(static_cast<std::size_t>(max_rows));
  }

  double loss = 0;
  std::int64_t correct = 0;
  // Classifiers: every row's outputs, for the per-class report (rows x classes floats, as
  // large as the labels times the classes; nothing when the model does not provide them).
  const bool classify = m->is_classifier() && spec.output_dim >= 2;
  const auto classes = static_cast<std::size_t>(spec.output_dim);
  std::vector<float> logits;
  bool have_outputs = classify;
  if (classify) logits.resize(static_cast<std::size_t>(d.rows) * classes);
  for (std::int64_t begin = 0; begin < d.rows; begin += max_rows) {
    const int rows = static_cast<int>(std::min<std::int64_t>(max_rows, d.rows - begin));
    const float* x = d.x.data() + static_cast<std::size_t>(begin) * f;
    const float* y = d.y.data() + static_cast<std::size_t>(begin);
    if (!host) {
      b.upload(x_dev.data(), x, static_cast<std::size_t>(rows) * f);
      b.upload(y_dev.data(), y, static_cast<std::size_t>(rows));
      x = x_dev.data();
      y = y_dev.data();
    }
    const loss_sum s = m->evaluate(p, batch_view{rows, x, y});
    loss += s.loss;
    correct += s.correct;
    if (have_outputs)
      have_outputs = m->outputs(p, batch_view{rows, x, y},
                                logits.data() + static_cast<std::size_t>(begin) * classes);
  }
  b.synchronize();
  r.rows = d.rows;
  r.loss = loss / static_cast<double>(d.rows);
  r.accuracy = m->is_classifier() ? static_cast<double>(correct) / static_cast<double>(d.rows) : 0;
  // A diverged model's NaN outputs rank nothing: its loss says so, and no report is made.
  if (have_outputs && std::none_of(logits.begin(), logits.end(), [](float v) { return v != v; }))
    r.classes = classification_report(logits, d.y, spec.output_dim);
  return r;
}

}  // namespace actrain
