#pragma once
// The CPU backend's zero-skipping GEMM path (internal to tensor/cpu): when most of A's entries
// are zero -- a batch of images on a black background, one-hot or bag-of-words columns fed to a
// dense layer -- C = alpha op(A) B + beta C costs work for the nonzero entries only. Dense BLAS
// does every multiply-add; this path lists, for each pair of C's rows, the rows of B that their
// nonzero entries of A select, and accumulates those rows of B, a block of 64 columns at a time
// in registers (each row of B loaded serves both rows of C). It is taken only where it pays: B
// not transposed, C at least one block wide, A neither tiny nor huge, and A's share of nonzero
// entries low enough; otherwise the functions return false and do nothing, and the caller runs
// dense BLAS.
//
// Results equal dense GEMM's up to the order of the additions (the sums run over the same
// products, zeros left out), with one difference: a zero in A times an infinity or NaN in B adds
// nothing here, where dense BLAS adds NaN.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace actrain::cpu {

/// A sample of A's entries with a larger share nonzero than this goes to dense BLAS at once.
constexpr double max_density = 0.6;
/// The path lists, for each pair of C's rows, the rows of B that either row's A entries select;
/// above this share of all of them dense BLAS is faster (the pair costs as many multiply-adds
/// per listed row as dense BLAS per row of B, plus the lists). Measured by `actrain bench
/// foundation` (section Foundation of docs/benchmarks.md).
constexpr double max_pair_share = 0.75;

/// A's entries above which dense BLAS runs: the lists hold an index and a value per listed entry
/// (at most 1.5x A's bytes), 96 MB at this size.
constexpr std::size_t max_entries = std::size_t{1} << 24;

/// Lists and storage reused between calls (one per backend, so one per thread).
struct sparse_scratch {
  std::vector<std::int32_t> index;  ///< per pair of C's rows, the rows of B its entries select
  std::vector<float> value;         ///< the pair's two values of A for each
  std::vector<std::int32_t> count;  ///< entries per pair
  std::vector<float> pack;          ///< one block of B's columns, contiguous
  std::vector<std::int32_t> cursor; ///< per group, its first entry not yet added
};

/// C (m x n) = alpha A B + beta C with A stored m x k and B k x n, all row-major; false when the
/// path does not apply (C below 64 columns, A below 4096 or above max_entries entries, or too
/// dense).
bool sparse_gemm_nn(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                    float* c, sparse_scratch& s);

/// C (m x n) = alpha A^T B + beta C with A stored k x m and B k x n (the weight gradient X^T dZ);
/// false when the path does not apply.
bool sparse_gemm_tn(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                    float* c, sparse_scratch& s);

/// The share of nonzero entries in n values (0 for none).
double density(const float* a, std::size_t n);

/// Whether the CPU backend tries this path: on by default where it is available. Benchmarks turn
/// it off to time dense BLAS on the same data in the same process; process-wide.
void set_sparse_path(bool on);
bool sparse_path();
/// Whether this machine runs the path fast enough to take it: AVX-512 (the kernel's 8
/// accumulators and 4 loaded rows of 16 floats fit its 32 registers; built for AVX2 the same code
/// measured 20x slower than OpenBLAS). The functions above compute correctly everywhere.
bool sparse_path_available();
/// Tests: build the lists with the portable loop even where AVX-512 would (process-wide).
void set_portable_lists(bool on);

}  // namespace actrain::cpu
