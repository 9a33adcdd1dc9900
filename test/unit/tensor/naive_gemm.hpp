#pragma once
// C = alpha op(A) op(B) + beta C, in double, straight from the definition: what the CPU backend's
// GEMM paths are checked against (cpu_backend_test.cpp, sparse_gemm_test.cpp).
#include <cstddef>
#include <vector>

namespace actrain::testing_gemm {

inline std::vector<double> naive_gemm(bool ta, bool tb, int m, int n, int k, double alpha,
                                      const std::vector<float>& a, const std::vector<float>& b,
                                      double beta, const std::vector<float>& c) {
  std::vector<double> out(static_cast<std::size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        double av = ta ? a[static_cast<std::size_t>(p) * m + i] : a[static_cast<std::size_t>(i) * k + p];
        double bv = tb ? b[static_cast<std::size_t>(j) * k + p] : b[static_cast<std::size_t>(p) * n + j];
        s += av * bv;
      }
      out[static_cast<std::size_t>(i) * n + j] = alpha * s + beta * c[static_cast<std::size_t>(i) * n + j];
    }
  return out;
}

}  // namespace actrain::testing_gemm
