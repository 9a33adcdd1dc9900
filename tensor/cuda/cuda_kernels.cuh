#pragma once
// Launchers for the CUDA backend's kernels (tensor/cuda/cuda_kernels.cu). Each one queues its
// kernel on `s` and returns; the caller checks the launch (check_launch). Pointers are device
// pointers on the stream's device; sizes as in tensor/backend.hpp. Each kernel has a CPU twin
// in tensor/cpu/ and a tolerance test in test/unit/cuda/.
#include <cuda_runtime.h>

#include <cstddef>

namespace actrain::cuda {

/// Blocks used by the reductions; `reduce_scratch::partial_*` hold one slot per block.
constexpr int kMaxReduceBlocks = 1024;

/// Device-side scratch for reductions. One per backend; a reduction writes the partials,
/// then finalize_reduction folds them into `result` in a fixed order (deterministic sums).
struct reduce_result {
  double sum;
  long long count;
  int bad_row;  ///< softmax_xent: smallest row with a label out of range, else kNoBadRow
  int pad;
};
constexpr int kNoBadRow = 0x7f7f7f7f;  // what cudaMemsetAsync(..., 0x7f, ...) writes

struct reduce_scratch {
  double partial_sum[kMaxReduceBlocks];
  long long partial_count[kMaxReduceBlocks];
  reduce_result result;
};

void launch_fill(cudaStream_t s, std::size_t n, float value, float* x);
void launch_scale(cudaStream_t s, std::size_t n, float alpha, float* x);
void launch_axpy(cudaStream_t s, std::size_t n, float alpha, const float* x, float* y);
void launch_add_row_vector(cudaStream_t s, int rows, int cols, const float* v, float* x);
void launch_column_sums(cudaStream_t s, int rows, int cols, const float* x, float* out);
void launch_relu(cudaStream_t s, std::size_t n, const float* x, float* y);
void launch_relu_backward(cudaStream_t s, std::size_t n, const float* y, const float* dy,
                          float* dx);

/// The reductions below write partials into `scratch` and return how many blocks they used;
/// pass that to launch_finalize_reduction, which writes scratch->result.sum/.count.
/// softmax_xent also records scratch->result.bad_row (reset it to kNoBadRow beforehand).
int launch_softmax_xent(cudaStream_t s, int rows, int cols, const float* logits,
                        const float* labels, float grad_scale, float* dlogits,
                        reduce_scratch* scratch);
int launch_squared_error(cudaStream_t s, int rows, const float* pred, const float* target,
                         float grad_scale, float* dpred, reduce_scratch* scratch);
int launch_sum_squares(cudaStream_t s, std::size_t n, const float* x, reduce_scratch* scratch);
void launch_finalize_reduction(cudaStream_t s, int blocks, reduce_scratch* scratch);

}  // namespace actrain::cuda
