// load_job_data and fit_model_to_data: from a data_spec to the train and test sets a job uses.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <actrain/job.hpp>
#include "data/readers.hpp"

namespace actrain {
namespace {

// splitmix64: the data generator gets its own stream, so changing how a model is initialized
// from job.seed never changes the data and vice versa.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
constexpr std::uint64_t synthetic_stream = 1;

// A CSV read as regression for a classifier whose class count is not configured: the labels
// must be integers >= 0, the class count is the largest label + 1, and every class must have a
// row. One stray label (100000000 in a file of 10 classes, or 10 in a 3-class file) would
// otherwise make a model with that many outputs, silently (and 1e8 classes take gigabytes).
void infer_classes(dataset& d, const std::string& path) {
  float max_label = -1;
  std::int64_t max_row = 0;
  for (std::int64_t i = 0; i < d.rows; ++i) {
    const float v = d.y[static_cast<std::size_t>(i)];
    if (!(v >= 0) || v != std::floor(v))
      throw data_error(path + ": row " + std::to_string(i + 1) + ": label " + std::to_string(v) +
                       " is not a class index (an integer >= 0)");
    if (v > max_label) {
      max_label = v;
      max_row = i + 1;
    }
  }
  const auto label_text = [&] { return std::to_string(static_cast<long long>(max_label)); };
  // A class per row at most: checked before anything is sized by the label.
  if (static_cast<double>(max_label) + 1 > static_cast<double>(d.rows))
    throw data_error(path + ": row " + std::to_string(max_row) + ": label " + label_text() +
                     " means " + label_text() + " + 1 classes, more than the file's " +
                     std::to_string(d.rows) +
                     " rows (set [model] output-dim to train classes the data does not show)");
  const auto classes = static_cast<std::size_t>(max_label) + 1;
  std::vector<bool> seen(classes, false);
  for (float v : d.y) seen[static_cast<std::size_t>(v)] = true;
  std::string missing;
  std::size_t count = 0;
  for (std::size_t c = 0; c < classes; ++c)
    if (!seen[c] && ++count <= 5) missing += (missing.empty() ? "" : ", ") + std::to_string(c);
  if (count > 0)
    throw data_error(path + ": labels go up to " + label_text() + " (row " +
                     std::to_string(max_row) + "), but " + std::to_string(count) +
                     " classes below it have no row (" + missing + (count > 5 ? ", ..." : "") +
                     "): a stray label? (set [model] output-dim to train classes the data "
                     "does not show)");
  d.num_classes = static_cast<int>(classes);
}

job_data load_csv(const job_spec& job) {
  const data_spec& s = job.data;
  csv_options opt;
  opt.label_name = s.label;
  opt.header = s.header;
  opt.delimiter = csv_delimiter(s.delimiter);
  // A classifier with output_dim set reads labels as classes in [0, output_dim); otherwise the
  // class count is inferred from the training file below.
  const bool classify = is_classifier_kind(job.model.kind);
  const bool classes_known = classify && job.model.output_dim > 1;
  opt.num_classes = classes_known ? job.model.output_dim : 0;

  job_data out;
  out.train = read_csv(s.path, opt);
  if (classify && !classes_known) {
    infer_classes(out.train, s.path);
    opt.num_classes = out.train.num_classes;
  }
  if (!s.test_path.empty()) {
    out.test = read_csv(s.test_path, opt);
    if (classify) out.test.num_classes = out.train.num_classes;
  } else {
    // The last test_fraction of the rows is held out, at least one row and leaving one.
    const std::int64_t n = out.train.rows;
    if (n < 2)
      throw data_error(s.path + ": needs at least 2 rows to hold out a test set, has " +
                       std::to_string(n));
    std::int64_t held = static_cast<std::int64_t>(std::llround(s.test_fraction * n));
    held = std::min(std::max<std::int64_t>(held, 1), n - 1);
    dataset all = std::move(out.train);
    out.train = slice_rows(all, 0, n - held);
    out.test = slice_rows(all, n - held, n);
  }
  if (s.standardize) {
    // Fitted on the training rows only: the test rows are scaled by what training saw.
    out.scaling = fit_standardization(out.train, !classify);
    apply(out.scaling, out.train);
    apply(out.scaling, out.test);
  }
  return out;
}

}  // namespace

char csv_delimiter(const std::string& text) {
  if (text == "tab" || text == "\t") return '\t';
  if (text.size() != 1 || text == "\"" || text == "\n" || text == "\r")
    throw std::invalid_argument("data.delimiter must be one character (or \"tab\"), got '" + text +
                                "'");
  return text[0];
}

job_data load_job_data(const job_spec& job) {
  const data_spec& s = job.data;
  job_data out;
  if (s.kind == "fashion_mnist") {
    train_test tt = load_fashion_mnist(s.path.empty() ? default_fashion_mnist_dir() : s.path);
    out.train = std::move(tt.train);
    out.test = std::move(tt.test);
  } else if (s.kind == "synthetic_linear") {
    // One call for train and test rows, so both are drawn with the same true w and b.
    dataset all = make_linear_regression(s.rows + s.test_rows, s.features, s.noise,
                                         derive_seed(job.seed, synthetic_stream));
    out.train = slice_rows(all, 0, s.rows);
    out.test = slice_rows(all, s.rows, s.rows + s.test_rows);
  } else if (s.kind == "csv") {
    out = load_csv(job);
  } else {
    throw std::invalid_argument(
        "job.data.kind must be one of fashion_mnist, synthetic_linear, "
        "csv, got '" +
        s.kind + "'");
  }
  if (s.train_subset > 0 && s.train_subset < out.train.rows)
    out.train = slice_rows(out.train, 0, s.train_subset);
  if (s.test_subset > 0 && s.test_subset < out.test.rows)
    out.test = slice_rows(out.test, 0, s.test_subset);
  return out;
}

std::int64_t train_rows(const job_data& data) {
  return data.train_source ? data.train_source->rows() : data.train.rows;
}

void fit_model_to_data(job_spec& job, const job_data& data) {
  model_spec& m = job.model;
  // A streamed training set is described by its source; its rows are never here.
  dataset d;
  if (data.train_source) {
    d.rows = data.train_source->rows();
    d.features = data.train_source->features();
    d.num_classes = data.train_source->num_classes();
  }
  const dataset& train = data.train_source ? d : data.train;
  if (m.input_dim == 0) m.input_dim = train.features;
  if (m.input_dim != train.features)
    throw std::invalid_argument("job.model.input_dim is " + std::to_string(m.input_dim) +
                                " but the data has " + std::to_string(train.features) +
                                " features");
  if (is_classifier_kind(m.kind)) {
    if (train.num_classes <= 0)
      throw std::invalid_argument("job.model.kind " + m.kind +
                                  " needs class labels, but the data is a regression set");
    // output_dim defaults to 1, which no classifier can use: treat it as unset too.
    if (m.output_dim <= 1) m.output_dim = train.num_classes;
    if (m.output_dim < train.num_classes)
      throw std::invalid_argument("job.model.output_dim is " + std::to_string(m.output_dim) +
                                  " but the data has " + std::to_string(train.num_classes) +
                                  " classes");
  } else {
    if (m.output_dim == 0) m.output_dim = 1;
    if (m.output_dim != 1)
      throw std::invalid_argument("job.model.output_dim must be 1 for " + m.kind +
                                  " (a regression kind), got " + std::to_string(m.output_dim));
  }
  if (job.workers > train.rows)
    throw std::invalid_argument("job.workers is " + std::to_string(job.workers) +
                                " but the data has " + std::to_string(train.rows) +
                                " training rows: each worker trains on rows of its own");
  if (data.test.rows > 0 && data.test.features != train.features)
    throw std::invalid_argument("the test set has " + std::to_string(data.test.features) +
                                " features but the training set has " +
                                std::to_string(train.features));
}

std::string data_warning(const job_spec& job, const job_data& data) {
  const auto rows = train_rows(data);
  const auto per_worker = rows / std::max(1, job.workers);
  if (per_worker >= job.batch) return {};
  return "job.workers x job.batch = " + std::to_string(job.workers) + " x " +
         std::to_string(job.batch) + " exceeds the " + std::to_string(rows) +
         " training rows: each worker has about " + std::to_string(per_worker) +
         " rows, one short batch per epoch (fewer workers or a smaller batch train as set)";
}

}  // namespace actrain
