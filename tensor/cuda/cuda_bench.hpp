#pragma once
// Micro-benchmarks of the CUDA backend's building blocks, for `actrain bench gpu`.
// In a build without CUDA these throw std::runtime_error("... built without CUDA").

namespace actrain {

/// One timed cublasSgemm shape: C (m x n) = A (m x k) * B (k x n), row-major, fp32 data.
struct sgemm_timing {
  int m = 0, n = 0, k = 0;
  bool tf32 = false;
  int iterations = 0;           ///< timed calls (after warm-up)
  double seconds_per_call = 0;  ///< from CUDA events around all timed calls
  double tflops = 0;            ///< 2*m*n*k / seconds_per_call / 1e12
};

/// Times cublasSgemm on GPU `device` with CUDA events: warm-up calls, then enough calls to
/// fill about `min_seconds`. Allocates and frees its own device matrices (filled with small
/// non-zero values). REQUIRES: m, n, k > 0. Throws std::runtime_error naming the device and the
/// failing call (or the missing GPU).
sgemm_timing cuda_sgemm_bench(int m, int n, int k, bool tf32, int device = 0,
                              double min_seconds = 0.2);

/// Shorthand: cuda_sgemm_bench(m, n, k, tf32, device).tflops.
double cuda_sgemm_tflops(int m, int n, int k, bool tf32, int device = 0);

}  // namespace actrain
