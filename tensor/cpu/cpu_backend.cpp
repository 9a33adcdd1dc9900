// The CPU backend: OpenBLAS for the level-1/3 kernels, plain loops (auto-vectorized) for the rest.
#include <cblas.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <actrain/backend.hpp>
#include "tensor/cpu/sparse_gemm.hpp"

namespace actrain {
namespace {

// 64 bytes: one cache line, and the widest SIMD load (AVX-512) BLAS kernels may issue.
constexpr std::size_t alignment = 64;

/// Validates one class label stored as a float; names the row so bad data can be traced.
int checked_label(float y, int row, int cols) {
  int label = static_cast<int>(y);
  if (!(y >= 0.0f) || static_cast<float>(label) != y || label >= cols)
    throw std::invalid_argument("softmax_xent: label of row " + std::to_string(row) + " is " +
                                std::to_string(y) + ", expected a class index in [0, " +
                                std::to_string(cols) + ")");
  return label;
}

class cpu_backend final : public backend {
 public:
  std::string name() const override { return "cpu"; }
  bool is_host() const override { return true; }

  float* raw_alloc(std::size_t n) override {
    if (n == 0) return nullptr;
    // aligned_alloc requires the size to be a multiple of the alignment.
    std::size_t bytes = (n * sizeof(float) + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<float*>(p);
  }
  void raw_free(float* p) override { std::free(p); }

  void upload(float* dst, const float* src_host, std::size_t n) override { copy(dst, src_host, n); }
  void download(float* dst_host, const float* src, std::size_t n) override {
    copy(dst_host, src, n);
  }
  void copy(float* dst, const float* src, std::size_t n) override {
    if (n && dst != src) std::memmove(dst, src, n * sizeof(float));
  }

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            const float* b, float beta, float* c) override {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {  // op(A) op(B) is the zero matrix; BLAS would reject the leading dimensions.
      if (beta == 0.0f)
        fill(static_cast<std::size_t>(m) * n, 0.0f, c);
      else
        scale(static_cast<std::size_t>(m) * n, beta, c);
      return;
    }
    // Mostly zero A (a batch of sparse inputs, their weight gradient): skip the zeros.
    if (!trans_b && cpu::sparse_path() &&
        (trans_a ? cpu::sparse_gemm_tn(m, n, k, alpha, a, b, beta, c, sparse_)
                 : cpu::sparse_gemm_nn(m, n, k, alpha, a, b, beta, c, sparse_)))
      return;
    int lda = trans_a ? m : k;
    int ldb = trans_b ? k : n;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
  }

  void axpy(std::size_t n, float alpha, const float* x, float* y) override {
    // cblas takes int lengths; split so a > 2^31 element vector still works.
    constexpr std::size_t chunk = std::size_t{1} << 30;
    for (std::size_t off = 0; off < n; off += chunk)
      cblas_saxpy(static_cast<int>(std::min(chunk, n - off)), alpha, x + off, 1, y + off, 1);
  }

  void scale(std::size_t n, float alpha, float* x) override {
    constexpr std::size_t chunk = std::size_t{1} << 30;
    for (std::size_t off = 0; off < n; off += chunk)
      cblas_sscal(static_cast<int>(std::min(chunk, n - off)), alpha, x + off, 1);
  }

  void fill(std::size_t n, float value, float* x) override { std::fill(x, x + n, value); }

  void add_row_vector(int rows, int cols, const float* v, float* x) override {
    for (int r = 0; r < rows; ++r) {
      float* __restrict row = x + static_cast<std::size_t>(r) * cols;
      for (int c = 0; c < cols; ++c) row[c] += v[c];
    }
  }

  void column_sums(int rows, int cols, const float* x, float* out) override {
    std::fill(out, out + cols, 0.0f);
    for (int r = 0; r < rows; ++r) {
      const float* __restrict row = x + static_cast<std::size_t>(r) * cols;
      for (int c = 0; c < cols; ++c) out[c] += row[c];
    }
  }

  void relu(std::size_t n, const float* x, float* y) override {
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  }

  void relu_backward(std::size_t n, const float* y, const float* dy, float* dx) override {
    // dy[i] is read whatever y[i] is: a load only under the condition kept GCC from turning the
    // select into a vector blend (the scalar loop's branch on the sign of y mispredicted; it was
    // 4% of an MLP step). Same results: the kept value is dy[i] itself, never a product.
    for (std::size_t i = 0; i < n; ++i) {
      const float g = dy[i];
      dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
  }

  loss_sum softmax_xent(int rows, int cols, const float* logits, const float* labels,
                        float grad_scale, float* dlogits) override {
    loss_sum out;
    for (int r = 0; r < rows; ++r) {
      const float* z = logits + static_cast<std::size_t>(r) * cols;
      int label = checked_label(labels[r], r, cols);
      // Subtracting the max keeps exp() in range for any logits (log-sum-exp).
      int arg = 0;
      float mx = z[0];
      for (int c = 1; c < cols; ++c)
        if (z[c] > mx) mx = z[c], arg = c;
      float z_label = z[label];
      // exp() once per logit: into dlogits when wanted (safe if it aliases logits, each
      // element is read before it is written), else into scratch.
      float* e = dlogits ? dlogits + static_cast<std::size_t>(r) * cols : scratch_row(cols);
      float sum = 0.0f;
      for (int c = 0; c < cols; ++c) {
        e[c] = std::exp(z[c] - mx);
        sum += e[c];
      }
      out.loss += static_cast<double>(mx) + std::log(static_cast<double>(sum)) - z_label;
      out.correct += arg == label;
      if (dlogits) {
        float inv = grad_scale / sum;
        for (int c = 0; c < cols; ++c) e[c] *= inv;
        e[label] -= grad_scale;
      }
    }
    return out;
  }

  loss_sum squared_error(int rows, const float* pred, const float* target, float grad_scale,
                         float* dpred) override {
    loss_sum out;
    double sum = 0;
    for (int r = 0; r < rows; ++r) {
      float e = pred[r] - target[r];
      sum += static_cast<double>(e) * e;
      if (dpred) dpred[r] = 2.0f * e * grad_scale;
    }
    out.loss = sum;
    return out;
  }

  double sum_squares(std::size_t n, const float* x) override {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
    return s;
  }

 private:
  float* scratch_row(int cols) {
    if (scratch_.size() < static_cast<std::size_t>(cols)) scratch_.resize(cols);
    return scratch_.data();
  }

  std::vector<float> scratch_;  // one row of exp() values when no gradient is requested
  cpu::sparse_scratch sparse_;  // the zero-skipping GEMM's index of A
};

}  // namespace

std::unique_ptr<backend> make_cpu_backend() {
  return std::make_unique<cpu_backend>();
}

namespace {
/// Set once the application chose a BLAS thread count (set_blas_threads).
std::atomic<bool> host_chose_blas_threads{false};
}  // namespace

void set_blas_threads(int n) {
  host_chose_blas_threads = true;
  openblas_set_num_threads(std::max(1, n));
}

int blas_threads() {
  return openblas_get_num_threads();
}

bool default_blas_threads(int n) {
  if (host_chose_blas_threads || std::getenv("OPENBLAS_NUM_THREADS") ||
      std::getenv("OMP_NUM_THREADS"))
    return false;
  openblas_set_num_threads(std::max(1, n));
  return true;
}

std::string blas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string better_blas_core() {
  if (std::getenv("OPENBLAS_CORETYPE")) return "";
  auto core = blas_core();
  if (core != "Prescott" && core != "prescott") return "";
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return "";
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!osxsave || !avx) return "";
  // XCR0: the OS saves SSE and AVX state (bits 1, 2) and AVX-512's (bits 5, 6, 7).
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool os_avx = (lo & 0x6u) == 0x6u, os_avx512 = (lo & 0xe6u) == 0xe6u;
  if (!os_avx || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return "";
  const bool avx2 = b & (1u << 5);
  const bool avx512 = (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 30)) && (b & (1u << 31));
  if (avx512 && os_avx512 && avx2 && fma) return "SkylakeX";
  if (avx2 && fma) return "Haswell";
#endif
  return "";
}

}  // namespace actrain
