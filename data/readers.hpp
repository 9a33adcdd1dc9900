#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <actrain/data.hpp>

namespace actrain {

/// Reads an IDX image file and its label file (gzipped or not, found by the gzip magic), as
/// Debian's dataset-fashion-mnist installs them. Pixels are scaled to [0, 1]; labels become
/// class indices (num_classes = 10). Throws data_error naming the file on a wrong magic number,
/// a truncated or corrupt file, or image and label counts that disagree.
dataset read_idx(const std::string& images_path, const std::string& labels_path);

struct train_test {
  dataset train;
  dataset test;
};
/// Where Debian puts Fashion-MNIST: /usr/share/datasets/fashion-mnist (or $ACTRAIN_FASHION_MNIST).
std::string default_fashion_mnist_dir();
/// Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from dir.
train_test load_fashion_mnist(const std::string& dir);

/// CSV options: the label column by name (needs a header) or by index; every other column is a
/// feature. Classification when num_classes > 0 (labels must be integers in [0, num_classes)).
struct csv_options {
  std::string label_name;  ///< used when not empty
  int label_index = -1;    ///< used when label_name is empty; -1 = last column
  bool header = true;
  char delimiter = ',';
  int num_classes = 0;
};
/// Throws data_error naming the file and line for a ragged row, a value that is not a number,
/// an unknown label column, an empty file, or (with `header`) a first line whose every field is
/// a number: a file without a header would silently lose its first row.
dataset read_csv(const std::string& path, const csv_options& opt);
/// read_csv of what `in` holds, named `path` in its errors (tests and the fuzz target of fuzz/).
dataset read_csv(std::istream& in, const std::string& path, const csv_options& opt);

/// y = X w + b + noise with X ~ N(0, 1), w ~ N(0, 1), noise ~ N(0, noise_std^2), from a seed.
/// The true w and b are returned through the optional pointers.
dataset make_linear_regression(std::int64_t rows, int features, float noise_std, std::uint64_t seed,
                               std::vector<float>* true_w = nullptr, float* true_b = nullptr);

/// Closed-form least squares with intercept (normal equations in double, Cholesky); returns
/// the minimal mean squared error on d and writes the solution (w then b) to `solution`.
double least_squares_mse(const dataset& d, std::vector<double>* solution = nullptr);

}  // namespace actrain
