#pragma once
// An independent double-precision forward pass over the same flat layout as model.hpp
// (per layer: W in x out row-major, then b), used as ground truth by the model tests.
#include <algorithm>
#include <cmath>
#include <vector>

#include <actrain/model.hpp>

namespace actrain::testing {

/// Mean loss of `spec` at `params` over `rows` rows of x (rows x input_dim) and targets y.
inline double reference_mean_loss(const model_spec& spec, const std::vector<double>& params,
                                  const std::vector<double>& x, const std::vector<double>& y,
                                  int rows) {
  std::vector<int> w{spec.input_dim};
  w.insert(w.end(), spec.hidden.begin(), spec.hidden.end());
  w.push_back(spec.output_dim);
  double total = 0;
  for (int r = 0; r < rows; ++r) {
    std::vector<double> a(x.begin() + static_cast<long>(r) * w[0],
                          x.begin() + static_cast<long>(r + 1) * w[0]);
    std::size_t off = 0;
    for (std::size_t l = 0; l + 1 < w.size(); ++l) {
      int in = w[l], out = w[l + 1];
      std::vector<double> z(out);
      for (int j = 0; j < out; ++j) {
        double s = params[off + static_cast<std::size_t>(in) * out + j];  // bias
        for (int i = 0; i < in; ++i)
          s += a[i] * params[off + static_cast<std::size_t>(i) * out + j];
        z[j] = s;
      }
      off += static_cast<std::size_t>(in) * out + out;
      if (l + 2 < w.size())
        for (auto& v : z) v = std::max(v, 0.0);
      a = std::move(z);
    }
    if (spec.kind == "linear") {
      double e = a[0] - y[r];
      total += e * e;
    } else {
      double mx = *std::max_element(a.begin(), a.end());
      double s = 0;
      for (double v : a) s += std::exp(v - mx);
      total += mx + std::log(s) - a[static_cast<int>(y[r])];
    }
  }
  return total / rows;
}

}  // namespace actrain::testing
