// The CUDA backend's kernels. Elementwise kernels use grid-stride loops over size_t indices so
// any n works with a capped grid; reductions write one partial per block and fold them in a
// second single-block kernel, so results do not depend on scheduling (no float atomics).
#include <algorithm>
#include <cmath>

#include "tensor/cuda/cuda_kernels.cuh"

namespace actrain::cuda {
namespace {

constexpr int kThreads = 256;  // threads per block for 1-D kernels
constexpr int kWarps = kThreads / 32;
constexpr std::size_t kMaxGrid = 8192;  // enough blocks to fill any current GPU

int grid_for(std::size_t n, std::size_t cap = kMaxGrid) {
  std::size_t blocks = (n + kThreads - 1) / kThreads;
  return int(std::max<std::size_t>(1, std::min(blocks, cap)));
}

__device__ std::size_t global_index() {
  return std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t grid_stride() {
  return std::size_t(gridDim.x) * blockDim.x;
}

template <class T>
__device__ T warp_sum(T v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

/// Sum over a kThreads block; the result is valid in thread 0 only.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T warp_totals[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // warp_totals may still be read by a previous block_sum call
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  v = lane < kWarps ? warp_totals[lane] : T(0);
  if (warp == 0) v = warp_sum(v);
  return v;
}

__global__ void fill_kernel(std::size_t n, float value, float* x) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) x[i] = value;
}

__global__ void scale_kernel(std::size_t n, float alpha, float* x) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) x[i] *= alpha;
}

__global__ void axpy_kernel(std::size_t n, float alpha, const float* x, float* y) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) y[i] += alpha * x[i];
}

// Index type I: 32-bit whenever rows x cols fits, so the per-element modulo is a 32-bit one.
template <class I>
__global__ void add_row_vector_kernel(I n, I cols, const float* v, float* x) {
  const I stride = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] += v[i % cols];
}

// Block (32, kSumLanes): 32 adjacent columns (coalesced reads of each row), kSumLanes row lanes
// whose partial sums are folded through shared memory in a fixed order. Narrow matrices (the
// 10-class layer) get one block, so it has many row lanes: each lane reads rows / 32 rows.
constexpr int kSumLanes = 32;
__global__ void column_sums_kernel(int rows, int cols, const float* x, float* out) {
  __shared__ float part[kSumLanes][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float s = 0;
  if (c < cols) {
    int r = threadIdx.y;
#pragma unroll 4
    for (; r < rows; r += kSumLanes) s += x[std::size_t(r) * cols + c];
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float t = 0;
    for (int j = 0; j < kSumLanes; ++j) t += part[j][threadIdx.x];
    out[c] = t;
  }
}

__global__ void relu_kernel(std::size_t n, const float* x, float* y) {
  for (std::size_t i = global_index(); i < n; i += grid_stride())
    y[i] = x[i] > 0.f ? x[i] : 0.f;  // as the CPU twin: NaN and -0 give +0
}

__global__ void relu_backward_kernel(std::size_t n, const float* y, const float* dy, float* dx) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

// One warp per row (rows strided over the grid). Per row: max and first argmax, then the
// log-sum-exp, the loss and optionally the gradient. Lane 0 of each warp keeps the warp's
// running loss and correct count; the block folds its warps into one partial.
__global__ void softmax_xent_kernel(int rows, int cols, const float* logits, const float* labels,
                                    float grad_scale, float* dlogits, reduce_scratch* scratch) {
  __shared__ double warp_loss[kWarps];
  __shared__ long long warp_correct[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double loss_acc = 0;
  long long correct_acc = 0;
  for (int row = blockIdx.x * kWarps + warp; row < rows; row += gridDim.x * kWarps) {
    const float* l = logits + std::size_t(row) * cols;
    float best = -INFINITY;  // empty lanes keep best_i == cols and lose every tie
    int best_i = cols;
    for (int c = lane; c < cols; c += 32)
      if (l[c] > best || best_i == cols) best = l[c], best_i = c;
    for (int off = 16; off > 0; off >>= 1) {
      float ov = __shfl_down_sync(0xffffffffu, best, off);
      int oi = __shfl_down_sync(0xffffffffu, best_i, off);
      if (ov > best || (ov == best && oi < best_i)) best = ov, best_i = oi;
    }
    best = __shfl_sync(0xffffffffu, best, 0);
    best_i = __shfl_sync(0xffffffffu, best_i, 0);

    float sum = 0;
    for (int c = lane; c < cols; c += 32) sum += expf(l[c] - best);
    sum = __shfl_sync(0xffffffffu, warp_sum(sum), 0);

    const float label = labels[row];
    const int y = int(label);
    const bool ok = label >= 0.f && label < float(cols) && float(y) == label;
    if (!ok) {
      if (lane == 0) atomicMin(&scratch->result.bad_row, row);
      continue;
    }
    const float target_logit = l[y];
    __syncwarp();  // every lane has read l[y] before any lane overwrites it (dlogits may alias)
    if (lane == 0) {
      loss_acc += double(best) + log(double(sum)) - double(target_logit);  // as the CPU twin
      correct_acc += best_i == y;
    }
    if (dlogits) {
      float* d = dlogits + std::size_t(row) * cols;
      const float inv = grad_scale / sum;  // same rounding steps as the CPU twin
      for (int c = lane; c < cols; c += 32) {
        const float p = expf(l[c] - best) * inv;
        d[c] = c == y ? p - grad_scale : p;
      }
    }
    __syncwarp();
  }
  if (lane == 0) warp_loss[warp] = loss_acc, warp_correct[warp] = correct_acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = 0;
    long long k = 0;
    for (int w = 0; w < kWarps; ++w) s += warp_loss[w], k += warp_correct[w];
    scratch->partial_sum[blockIdx.x] = s;
    scratch->partial_count[blockIdx.x] = k;
  }
}

__global__ void squared_error_kernel(int rows, const float* pred, const float* target,
                                     float grad_scale, float* dpred, reduce_scratch* scratch) {
  double acc = 0;
  for (std::size_t i = global_index(); i < std::size_t(rows); i += grid_stride()) {
    const float diff = pred[i] - target[i];
    acc += double(diff) * diff;
    if (dpred) dpred[i] = 2.f * diff * grad_scale;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    scratch->partial_sum[blockIdx.x] = acc;
    scratch->partial_count[blockIdx.x] = 0;
  }
}

__global__ void sum_squares_kernel(std::size_t n, const float* x, reduce_scratch* scratch) {
  double acc = 0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) acc += double(x[i]) * x[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) {
    scratch->partial_sum[blockIdx.x] = acc;
    scratch->partial_count[blockIdx.x] = 0;
  }
}

__global__ void finalize_kernel(int blocks, reduce_scratch* scratch) {
  double s = 0;
  long long k = 0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x)
    s += scratch->partial_sum[i], k += scratch->partial_count[i];
  s = block_sum(s);
  k = block_sum(k);
  if (threadIdx.x == 0) scratch->result.sum = s, scratch->result.count = k;
}

}  // namespace

void launch_fill(cudaStream_t s, std::size_t n, float value, float* x) {
  if (n) fill_kernel<<<grid_for(n), kThreads, 0, s>>>(n, value, x);
}
void launch_scale(cudaStream_t s, std::size_t n, float alpha, float* x) {
  if (n) scale_kernel<<<grid_for(n), kThreads, 0, s>>>(n, alpha, x);
}
void launch_axpy(cudaStream_t s, std::size_t n, float alpha, const float* x, float* y) {
  if (n) axpy_kernel<<<grid_for(n), kThreads, 0, s>>>(n, alpha, x, y);
}
void launch_add_row_vector(cudaStream_t s, int rows, int cols, const float* v, float* x) {
  const std::size_t n = std::size_t(rows) * cols;
  if (n == 0) return;
  if (n <= 0xffffffffu)
    add_row_vector_kernel<unsigned><<<grid_for(n), kThreads, 0, s>>>(unsigned(n), unsigned(cols),
                                                                     v, x);
  else
    add_row_vector_kernel<std::size_t><<<grid_for(n), kThreads, 0, s>>>(n, std::size_t(cols), v, x);
}
void launch_column_sums(cudaStream_t s, int rows, int cols, const float* x, float* out) {
  if (cols > 0) column_sums_kernel<<<(cols + 31) / 32, dim3(32, kSumLanes), 0, s>>>(rows, cols, x, out);
}
void launch_relu(cudaStream_t s, std::size_t n, const float* x, float* y) {
  if (n) relu_kernel<<<grid_for(n), kThreads, 0, s>>>(n, x, y);
}
void launch_relu_backward(cudaStream_t s, std::size_t n, const float* y, const float* dy,
                          float* dx) {
  if (n) relu_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(n, y, dy, dx);
}

int launch_softmax_xent(cudaStream_t s, int rows, int cols, const float* logits,
                        const float* labels, float grad_scale, float* dlogits,
                        reduce_scratch* scratch) {
  const int blocks = int(std::max(1, std::min((rows + kWarps - 1) / kWarps, kMaxReduceBlocks)));
  softmax_xent_kernel<<<blocks, kThreads, 0, s>>>(rows, cols, logits, labels, grad_scale, dlogits,
                                                  scratch);
  return blocks;
}
int launch_squared_error(cudaStream_t s, int rows, const float* pred, const float* target,
                         float grad_scale, float* dpred, reduce_scratch* scratch) {
  const int blocks = grid_for(std::size_t(std::max(rows, 0)), kMaxReduceBlocks);
  squared_error_kernel<<<blocks, kThreads, 0, s>>>(rows, pred, target, grad_scale, dpred, scratch);
  return blocks;
}
int launch_sum_squares(cudaStream_t s, std::size_t n, const float* x, reduce_scratch* scratch) {
  const int blocks = grid_for(n, kMaxReduceBlocks);
  sum_squares_kernel<<<blocks, kThreads, 0, s>>>(n, x, scratch);
  return blocks;
}
void launch_finalize_reduction(cudaStream_t s, int blocks, reduce_scratch* scratch) {
  finalize_kernel<<<1, kThreads, 0, s>>>(blocks, scratch);
}

}  // namespace actrain::cuda
