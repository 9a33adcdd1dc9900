// The CUDA backend: one GPU, one stream, one cuBLAS handle (bound to the stream), device memory
// from cudaMalloc, uploads through a ring of pinned staging slots. Every call first makes this
// backend's device current, since one thread may drive backends on several GPUs in turn.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_backend.hpp"
#include "tensor/cuda/cuda_check.cuh"
#include "tensor/cuda/cuda_kernels.cuh"

namespace actrain {
namespace {

using cuda::check;

// A loss queue_loss queued and take_loss has not read yet.
struct queued_loss {
  bool pending = false;
  bool classifier = false;
  bool empty = false;        // rows == 0: nothing was queued, the sums are zero
  int cols = 0;
  bool from_replay = false;  // queued by a replay: the next replay may replace it unread
};

class cuda_backend final : public backend {
 public:
  cuda_backend(int device, bool allow_tf32)
      : device_(device), name_("cuda:" + std::to_string(device)) {
    try {
      open(allow_tf32);
    } catch (...) {
      release();
      throw;
    }
  }
  ~cuda_backend() override { release(); }

  std::string name() const override { return name_; }
  bool is_host() const override { return false; }

  float* raw_alloc(std::size_t n) override {
    if (n == 0) return nullptr;
    activate();
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, n * sizeof(float));
    if (e != cudaSuccess)
      check(e, ("cudaMalloc(" + std::to_string(n * sizeof(float)) + " bytes)").c_str(), device_);
    return static_cast<float*>(p);
  }

  // Called from buffer's destructor, so it must not throw: a failure here means the context is
  // already broken, and the next checked call will report it.
  void raw_free(float* p) override {
    if (!p) return;
    cudaSetDevice(device_);
    const cudaError_t e = cudaFree(p);
    if (e != cudaSuccess) {
      cudaGetLastError();
      std::fprintf(stderr, "%s: cudaFree: %s (error %d)\n", name_.c_str(), cudaGetErrorString(e),
                   int(e));
    }
  }

  // Copies into the next pinned staging slot, then queues an async copy: the caller may reuse
  // src_host as soon as this returns. A slot is reused only after the copy out of it has
  // completed (its event), so the parameter vector, x and y of one step take three slots and no
  // upload waits on the one before it.
  void upload(float* dst, const float* src_host, std::size_t n) override {
    refuse_while_recording("upload");
    if (n == 0) return;
    activate();
    staging_slot& s = staging_[next_slot_];
    next_slot_ = (next_slot_ + 1) % kStagingSlots;
    check(cudaEventSynchronize(s.free), "cudaEventSynchronize(staging)", device_);
    if (n > s.n) {
      if (s.host) check(cudaFreeHost(s.host), "cudaFreeHost", device_);
      s.host = nullptr;
      s.n = 0;
      void* p = nullptr;
      check(cudaMallocHost(&p, n * sizeof(float)), "cudaMallocHost(staging)", device_);
      s.host = static_cast<float*>(p);
      s.n = n;
    }
    std::memcpy(s.host, src_host, n * sizeof(float));
    check(cudaMemcpyAsync(dst, s.host, n * sizeof(float), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync(host to device)", device_);
    check(cudaEventRecord(s.free, stream_), "cudaEventRecord(staging)", device_);
  }

  void download(float* dst_host, const float* src, std::size_t n) override {
    refuse_while_recording("download");
    if (n == 0) return;
    activate();
    check(cudaMemcpyAsync(dst_host, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync(device to host)", device_);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(download)", device_);
  }

  void copy(float* dst, const float* src, std::size_t n) override {
    if (n == 0 || dst == src) return;
    activate();
    check(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync(device to device)", device_);
  }

  void synchronize() override {
    refuse_while_recording("synchronize");
    activate();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", device_);
  }

  // Row-major C (m x n) is column-major C^T (n x m), and C^T = op(B)^T op(A)^T: so cuBLAS gets
  // B first, with the row-major leading dimensions, and computes C^T in place.
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            const float* b, float beta, float* c) override {
    if (m < 0 || n < 0 || k < 0)
      throw std::invalid_argument(name_ + ": gemm: negative size m=" + std::to_string(m) +
                                  " n=" + std::to_string(n) + " k=" + std::to_string(k));
    if (m == 0 || n == 0) return;
    if (k == 0) {  // op(A) op(B) is empty: C = beta C, as the CPU twin does
      if (beta == 0.0f)
        fill(std::size_t(m) * n, 0.0f, c);
      else
        scale(std::size_t(m) * n, beta, c);
      return;
    }
    activate();
    const int lda = trans_a ? m : k;
    const int ldb = trans_b ? k : n;
    check(
        cublasSgemm(blas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                    n, m, k, &alpha, b, ldb, a, lda, &beta, c, n),
        "cublasSgemm", device_);
  }

  void axpy(std::size_t n, float alpha, const float* x, float* y) override {
    activate();
    cuda::launch_axpy(stream_, n, alpha, x, y);
    cuda::check_launch("axpy_kernel", device_);
  }
  void scale(std::size_t n, float alpha, float* x) override {
    activate();
    cuda::launch_scale(stream_, n, alpha, x);
    cuda::check_launch("scale_kernel", device_);
  }
  void fill(std::size_t n, float value, float* x) override {
    activate();
    cuda::launch_fill(stream_, n, value, x);
    cuda::check_launch("fill_kernel", device_);
  }
  void add_row_vector(int rows, int cols, const float* v, float* x) override {
    check_shape("add_row_vector", rows, cols);
    activate();
    cuda::launch_add_row_vector(stream_, rows, cols, v, x);
    cuda::check_launch("add_row_vector_kernel", device_);
  }
  void column_sums(int rows, int cols, const float* x, float* out) override {
    check_shape("column_sums", rows, cols);
    activate();
    cuda::launch_column_sums(stream_, rows, cols, x, out);
    cuda::check_launch("column_sums_kernel", device_);
  }
  void relu(std::size_t n, const float* x, float* y) override {
    activate();
    cuda::launch_relu(stream_, n, x, y);
    cuda::check_launch("relu_kernel", device_);
  }
  void relu_backward(std::size_t n, const float* y, const float* dy, float* dx) override {
    activate();
    cuda::launch_relu_backward(stream_, n, y, dy, dx);
    cuda::check_launch("relu_backward_kernel", device_);
  }

  loss_sum softmax_xent(int rows, int cols, const float* logits, const float* labels,
                        float grad_scale, float* dlogits) override {
    queue_loss(true, rows, cols, logits, labels, grad_scale, dlogits);
    return take_loss();
  }

  loss_sum squared_error(int rows, const float* pred, const float* target, float grad_scale,
                         float* dpred) override {
    queue_loss(false, rows, 1, pred, target, grad_scale, dpred);
    return take_loss();
  }

  // Queues the loss kernel, the fold of its partials and the copy of the result to pinned host
  // memory; take_loss waits for that copy. Nothing here waits on the GPU.
  void queue_loss(bool classifier, int rows, int cols, const float* out, const float* labels,
                  float grad_scale, float* dout) override {
    const char* op = classifier ? "softmax_xent" : "squared_error";
    refuse_unread_loss(op);
    check_shape(op, rows, classifier ? cols : 1);
    if (classifier && rows > 0 && cols == 0)
      throw std::invalid_argument(name_ + ": softmax_xent: cols must be > 0");
    if (rows == 0) {
      queued_ = {true, classifier, true, cols};
      return;
    }
    activate();
    int blocks = 0;
    if (classifier) {
      check(cudaMemsetAsync(&scratch_->result.bad_row, 0x7f, sizeof(int), stream_),
            "cudaMemsetAsync(bad_row)", device_);
      blocks = cuda::launch_softmax_xent(stream_, rows, cols, out, labels, grad_scale, dout,
                                         scratch_);
      cuda::check_launch("softmax_xent_kernel", device_);
    } else {
      blocks = cuda::launch_squared_error(stream_, rows, out, labels, grad_scale, dout, scratch_);
      cuda::check_launch("squared_error_kernel", device_);
    }
    queue_reduction_result(blocks);
    queued_ = {true, classifier, false, cols};
  }

  loss_sum take_loss() override {
    if (recording_) {  // the loss is read after each replay (record)
      recorded_loss_ = queued_;
      queued_ = {};
      return {};
    }
    const queued_loss q = queued_;
    queued_ = {};
    if (!q.pending || q.empty) return {};
    const cuda::reduce_result r = wait_reduction_result();
    if (!q.classifier) return {r.sum, 0};
    if (r.bad_row != cuda::kNoBadRow)
      throw std::invalid_argument(name_ + ": softmax_xent: label of row " +
                                  std::to_string(r.bad_row) + " is not a class index in [0, " +
                                  std::to_string(q.cols) + ")");
    return {r.sum, r.count};
  }

  double sum_squares(std::size_t n, const float* x) override {
    refuse_while_recording("sum_squares");
    refuse_unread_loss("sum_squares");
    queued_ = {};  // a replay's unread loss: its result is about to be overwritten
    if (n == 0) return 0;
    activate();
    const int blocks = cuda::launch_sum_squares(stream_, n, x, scratch_);
    cuda::check_launch("sum_squares_kernel", device_);
    queue_reduction_result(blocks);
    return wait_reduction_result().sum;
  }

  // Stream capture: the work is recorded into a CUDA graph, not run. A failure inside ends the
  // capture, so the stream is usable again, and is rethrown.
  std::unique_ptr<recorded_work> record(const std::function<void()>& work) override;

  // Called by cuda_graph_work: one launch queues the whole recorded work; its loss, if it
  // queued one, is then read by take_loss (a replay's unread loss is replaced by the next's).
  void replay(cudaGraphExec_t exec, const queued_loss& loss) {
    refuse_unread_loss("replay");
    activate();
    check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch", device_);
    queued_ = loss;
    queued_.from_replay = loss.pending;
  }

 private:
  // A loss queued by queue_loss and not read yet would be overwritten; a replay's may be.
  void refuse_unread_loss(const char* op) const {
    if (queued_.pending && !queued_.from_replay)
      throw std::logic_error(name_ + ": " + op + ": a loss is queued (take_loss first)");
  }

  void refuse_while_recording(const char* op) const {
    if (recording_)
      throw std::logic_error(name_ + ": " + op +
                             " while recording: only queued device work can be recorded");
  }

  void open(bool allow_tf32) {
    activate();
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate", device_);
    check(cublasCreate(&blas_), "cublasCreate", device_);
    check(cublasSetStream(blas_, stream_), "cublasSetStream", device_);
    // An explicit workspace, so cuBLAS never allocates while a stream is being captured
    // (record); 32 MiB is cuBLAS's recommendation for Hopper.
    check(cudaMalloc(&blas_workspace_, kBlasWorkspace), "cudaMalloc(cuBLAS workspace)", device_);
    check(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspace), "cublasSetWorkspace",
          device_);
    // Default math keeps sgemm in full fp32; TF32 tensor cores only when the job opts in.
    check(cublasSetMathMode(blas_, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
          "cublasSetMathMode", device_);
    for (auto& slot : staging_)
      check(cudaEventCreateWithFlags(&slot.free, cudaEventDisableTiming), "cudaEventCreate",
            device_);
    void* p = nullptr;
    check(cudaMalloc(&p, sizeof(cuda::reduce_scratch)), "cudaMalloc(reduce scratch)", device_);
    scratch_ = static_cast<cuda::reduce_scratch*>(p);
    check(cudaMallocHost(&p, sizeof(cuda::reduce_result)), "cudaMallocHost(result)", device_);
    host_result_ = static_cast<cuda::reduce_result*>(p);
  }

  // Best effort: a destructor cannot report, and every resource is released either way.
  void release() noexcept {
    if (cudaSetDevice(device_) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    if (stream_) cudaStreamSynchronize(stream_);
    if (blas_) cublasDestroy(blas_);
    for (auto& slot : staging_) {
      if (slot.free) cudaEventDestroy(slot.free);
      if (slot.host) cudaFreeHost(slot.host);
      slot = staging_slot{};
    }
    if (host_result_) cudaFreeHost(host_result_);
    if (scratch_) cudaFree(scratch_);
    if (blas_workspace_) cudaFree(blas_workspace_);
    blas_workspace_ = nullptr;
    if (stream_) cudaStreamDestroy(stream_);
    blas_ = nullptr, host_result_ = nullptr;
    scratch_ = nullptr, stream_ = nullptr;
    cudaGetLastError();
  }

  // cudaGetDevice reads the thread's current device; cudaSetDevice only when it differs.
  void activate() const {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == device_) return;
    check(cudaSetDevice(device_), "cudaSetDevice", device_);
  }

  void check_shape(const char* op, int rows, int cols) const {
    if (rows < 0 || cols < 0)
      throw std::invalid_argument(name_ + ": " + op + ": negative shape " + std::to_string(rows) +
                                  " x " + std::to_string(cols));
  }

  // Folds the partials, then queues the copy of the result to the host (pinned, so the copy
  // is a true async copy).
  void queue_reduction_result(int blocks) {
    cuda::launch_finalize_reduction(stream_, blocks, scratch_);
    cuda::check_launch("finalize_kernel", device_);
    check(cudaMemcpyAsync(host_result_, &scratch_->result, sizeof(cuda::reduce_result),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync(reduction result)", device_);
  }
  cuda::reduce_result wait_reduction_result() {
    activate();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(reduction)", device_);
    return *host_result_;
  }

  int device_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  struct staging_slot {
    float* host = nullptr;        // pinned host memory, n floats
    std::size_t n = 0;
    cudaEvent_t free = nullptr;   // recorded after the last copy out of host
  };
  static constexpr int kStagingSlots = 4;
  staging_slot staging_[kStagingSlots];
  int next_slot_ = 0;
  cuda::reduce_scratch* scratch_ = nullptr;     // device
  cuda::reduce_result* host_result_ = nullptr;  // pinned host
  queued_loss queued_;
  bool recording_ = false;
  queued_loss recorded_loss_;  // what the work being recorded queued and "took"
  void* blas_workspace_ = nullptr;
  static constexpr std::size_t kBlasWorkspace = std::size_t(32) << 20;
};

class cuda_graph_work final : public recorded_work {
 public:
  cuda_graph_work(cuda_backend* owner, cudaGraphExec_t exec, queued_loss loss)
      : owner_(owner), exec_(exec), loss_(loss) {}
  ~cuda_graph_work() override { cudaGraphExecDestroy(exec_); }
  void replay() override { owner_->replay(exec_, loss_); }

 private:
  cuda_backend* owner_;
  cudaGraphExec_t exec_;
  queued_loss loss_;
};

std::unique_ptr<recorded_work> cuda_backend::record(const std::function<void()>& work) {
  refuse_while_recording("record");
  refuse_unread_loss("record");
  activate();
  queued_ = {};
  recorded_loss_ = {};
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture", device_);
  recording_ = true;
  cudaGraph_t graph = nullptr;
  try {
    work();
  } catch (...) {
    recording_ = false;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    queued_ = {};
    recorded_loss_ = {};
    throw;
  }
  recording_ = false;
  const queued_loss loss = queued_.pending ? queued_ : recorded_loss_;
  queued_ = {};
  recorded_loss_ = {};
  check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture", device_);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(e, "cudaGraphInstantiate", device_);
  return std::make_unique<cuda_graph_work>(this, exec, loss);
}

}  // namespace

bool cuda_built() {
  return true;
}

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why)
      *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e) + " (error " +
             std::to_string(int(e)) + ")";
    return 0;
  }
  if (why) *why = n > 0 ? "" : "cudaGetDeviceCount: 0 devices";
  return n;
}

std::unique_ptr<backend> make_cuda_backend(int device, bool allow_tf32) {
  std::string why;
  const int n = cuda_device_count(&why);
  if (device < 0 || device >= n)
    throw std::runtime_error("cuda:" + std::to_string(device) + " requested, but " +
                             (n > 0 ? std::to_string(n) + " GPU(s) are visible (cuda:0..cuda:" +
                                          std::to_string(n - 1) + ")"
                                    : "no GPU is usable: " + why));
  return std::make_unique<cuda_backend>(device, allow_tf32);
}

}  // namespace actrain
