#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace actrain {

class backend;

/// Work a backend recorded once (record) and can queue again as one unit.
class recorded_work {
 public:
  virtual ~recorded_work() = default;
  /// Queues everything that was recorded, on the same buffers, with their contents now.
  virtual void replay() = 0;
};

/// Summed loss over a batch and how many rows the model got right (classification only).
struct loss_sum {
  double loss = 0;
  std::int64_t correct = 0;
};

/// Owns `n` floats in one backend's memory (host memory for the CPU backend, device memory for
/// CUDA). Move-only; frees through its backend, which must outlive it.
class buffer {
 public:
  buffer() = default;
  buffer(backend* owner, float* p, std::size_t n) : owner_(owner), p_(p), n_(n) {}
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer();

  float* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  void swap(buffer& o) noexcept {
    std::swap(owner_, o.owner_);
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  backend* owner_ = nullptr;
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

/// The seam between the math and the hardware. Every pointer argument points into this
/// backend's memory (see `is_host`) unless its name says `host`. Matrices are row-major and
/// tightly packed. Models are written once against this interface; the CPU backend runs on BLAS
/// and plain loops, the CUDA backend on cuBLAS and kernels (tensor/cuda/).
/// Thread-safety: one backend object belongs to one thread (one worker) at a time.
class backend {
 public:
  virtual ~backend() = default;

  /// "cpu", or "cuda:N".
  virtual std::string name() const = 0;
  /// True when backend memory is ordinary host memory.
  virtual bool is_host() const = 0;

  buffer allocate(std::size_t n) { return buffer(this, raw_alloc(n), n); }
  virtual float* raw_alloc(std::size_t n) = 0;
  virtual void raw_free(float* p) = 0;

  /// Host -> backend copy of n floats.
  virtual void upload(float* dst, const float* src_host, std::size_t n) = 0;
  /// Backend -> host copy; returns once the values are in `dst_host`.
  virtual void download(float* dst_host, const float* src, std::size_t n) = 0;
  /// Backend -> backend copy.
  virtual void copy(float* dst, const float* src, std::size_t n) = 0;
  /// Waits for all queued work (no-op on the CPU).
  virtual void synchronize() {}

  /// C = alpha * op(A) * op(B) + beta * C, with op(A) m x k and op(B) k x n.
  /// A is stored m x k (k x m when trans_a); B is k x n (n x k when trans_b); C is m x n.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    const float* b, float beta, float* c) = 0;
  /// y += alpha * x.
  virtual void axpy(std::size_t n, float alpha, const float* x, float* y) = 0;
  /// x *= alpha.
  virtual void scale(std::size_t n, float alpha, float* x) = 0;
  /// x[i] = value.
  virtual void fill(std::size_t n, float value, float* x) = 0;
  /// x[r, c] += v[c] for a rows x cols matrix x.
  virtual void add_row_vector(int rows, int cols, const float* v, float* x) = 0;
  /// out[c] = sum over r of x[r, c].
  virtual void column_sums(int rows, int cols, const float* x, float* out) = 0;
  /// y = max(x, 0); x and y may alias.
  virtual void relu(std::size_t n, const float* x, float* y) = 0;
  /// dx = dy where y > 0, else 0; y is the ReLU's output. dy and dx may alias.
  virtual void relu_backward(std::size_t n, const float* y, const float* dy, float* dx) = 0;
  /// Softmax cross-entropy over `rows` rows of `cols` logits; labels are class indices stored
  /// as floats (exact below 2^24). Returns the summed loss and the count of rows whose argmax
  /// equals the label. When dlogits is not null, writes (softmax - onehot) * grad_scale there
  /// (dlogits may alias logits).
  virtual loss_sum softmax_xent(int rows, int cols, const float* logits, const float* labels,
                                float grad_scale, float* dlogits) = 0;
  /// Squared error per row, (pred - target)^2, summed. When dpred is not null writes
  /// 2 * (pred - target) * grad_scale there. `correct` is 0.
  virtual loss_sum squared_error(int rows, const float* pred, const float* target, float grad_scale,
                                 float* dpred) = 0;
  /// Sum of x[i]^2, accumulated in double.
  virtual double sum_squares(std::size_t n, const float* x) = 0;

  /// softmax_xent or squared_error (`classifier` picks; `cols` is 1 for squared_error) queued
  /// without waiting for its sums: take_loss() returns them, or throws what the direct call
  /// would have thrown (a bad label). A model queues its backward pass in between, so a GPU
  /// is not drained in the middle of a step. At most one loss is queued at a time; other work
  /// may be queued before take_loss, but no other loss or sum_squares. The default computes at
  /// once and keeps the sums: right for backends that compute in place (the CPU's).
  virtual void queue_loss(bool classifier, int rows, int cols, const float* out,
                          const float* labels, float grad_scale, float* dout) {
    queued_ = classifier ? softmax_xent(rows, cols, out, labels, grad_scale, dout)
                         : squared_error(rows, out, labels, grad_scale, dout);
  }
  /// The sums of the loss queue_loss queued (waits for them where they are computed later).
  virtual loss_sum take_loss() {
    loss_sum r = queued_;
    queued_ = {};
    return r;
  }

  /// Calls `work` once to record what it queues, without running any of it, and returns that
  /// as one unit that replay() queues (on a GPU a CUDA graph: a training step then costs one
  /// launch instead of one per kernel). Only queued device work may happen inside: upload,
  /// download, synchronize and sum_squares throw std::logic_error; a take_loss inside returns
  /// zero sums, and after each replay take_loss reads that replay's loss. Buffers `work` used
  /// must live as long as the recording; the backend must outlive it. Returns null, having
  /// called nothing, where the backend does not record (the CPU's, the default): the caller
  /// then runs `work` itself each time.
  virtual std::unique_ptr<recorded_work> record(const std::function<void()>& work) {
    (void)work;
    return nullptr;
  }

 private:
  loss_sum queued_;
};

inline buffer::~buffer() {
  if (owner_ && p_) owner_->raw_free(p_);
}

/// The CPU backend: OpenBLAS (cblas) for gemm/axpy/scal, plain loops for the rest.
/// BLAS threading is left as the process configured it (actrain sets 1 thread per worker).
std::unique_ptr<backend> make_cpu_backend();

/// Sets OpenBLAS's thread count for the whole process (OpenBLAS has one global pool): the
/// application's choice, which actrain then never overrides.
void set_blas_threads(int n);
/// OpenBLAS's thread count now.
int blas_threads();
/// What actrain calls before it runs workers: sets `n` threads unless the application chose
/// (set_blas_threads, or OPENBLAS_NUM_THREADS / OMP_NUM_THREADS in the environment). Returns
/// whether it set them. The engine's default is 1 per process: each worker computes on its own
/// thread, and BLAS threads on top of them oversubscribe the cores.
bool default_blas_threads(int n);

/// The kernel set OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...).
std::string blas_core();
/// The OPENBLAS_CORETYPE that suits this CPU when OpenBLAS fell back to its generic kernels,
/// else "". OpenBLAS 0.3.21 picks kernels by the CPU's model number; on one it does not know (a
/// VM reporting a generic "Intel(R) Xeon(R) Processor") it runs Prescott's SSE3 kernels even
/// where CPUID offers AVX-512, about 3x slower on the MLP. Returns "SkylakeX" when the CPU and
/// the OS enable AVX-512 F/DQ/BW/VL, "Haswell" for AVX2 + FMA; "" when OpenBLAS chose other
/// kernels, when OPENBLAS_CORETYPE is set already, or on other CPUs. OpenBLAS reads that
/// variable when it loads, before main: the `actrain` binary re-executes itself once with it set.
std::string better_blas_core();

}  // namespace actrain
