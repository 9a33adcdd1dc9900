// The CPU backend's zero-skipping GEMM path (tensor/cpu/sparse_gemm.hpp). The inner loops are
// written with GCC's vector types of 16 floats and compiled for AVX-512 and for the x86-64
// baseline, the one the machine runs picked when the program loads. Only AVX-512 holds the
// accumulators in registers: elsewhere the same code runs about 20x slower than dense BLAS (an
// AVX2 build of it measured 7.6 ms against OpenBLAS's 0.39 ms for the MLP's first layer), so the
// backend takes the path only on AVX-512 machines; the baseline build keeps the functions
// correct everywhere for their tests.
#include "tensor/cpu/sparse_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "tensor/vector_clones.hpp"

#if ACTRAIN_GCC_X86
#include <immintrin.h>
#endif

namespace actrain::cpu {
namespace {

#define ACTRAIN_CLONES ACTRAIN_TARGET_CLONES("avx512f", "default")

// Only inlined helpers take or return the vector type: no call passes one (GCC's note on
// the AVX-512 calling convention does not apply).
#pragma GCC diagnostic ignored "-Wpsabi"

/// 16 floats: one AVX-512 register, two AVX2 ones.
typedef float vf __attribute__((vector_size(64)));
constexpr int lanes = 16;
/// Columns of C held in registers while a group's entries stream by.
constexpr int block = 4 * lanes;
/// C's rows that share each load of B.
constexpr int group = 2;

[[gnu::always_inline]] inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

[[gnu::always_inline]] inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

[[gnu::always_inline]] inline vf finish(vf acc, float alpha, float beta, const float* c) {
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * load(c);
}

/// One block of C's columns, [j, j + block), for every group of C's rows: alpha * sum over the
/// group's entries e of value[t * cap + e] * B[index[e], j..] + beta * C for its row t. A
/// group's entries are the rows of B where any of its rows of A is nonzero: each row of B loaded
/// serves all of them (4 x group multiply-adds per four loads; one row at a time would wait on
/// its loads). `packed` holds those columns of B, row after row (block floats apart):
/// contiguous, they stay in the cache where B's own rows, a power of two apart, would evict each
/// other.
ACTRAIN_CLONES
void groups_block(int rows, std::size_t cap, const std::int32_t* count, const std::int32_t* index,
                  const float* value, const float* packed, std::int32_t* cursor,
                  std::int32_t chunk_end, bool first, float alpha, float beta, float* c,
                  std::size_t ldc) {
  for (int i = 0; i < rows; i += group) {
    const std::size_t g = static_cast<std::size_t>(i / group);
    vf acc[group][4] = {};
    const std::int32_t* ix = index + g * cap;
    const float* vx = value + group * g * cap;
    const std::int32_t n = count[g];
    std::int32_t e = cursor[g];
    for (; e < n && ix[e] < chunk_end; ++e) {
      const float* r = packed + static_cast<std::size_t>(ix[e]) * block;
      const vf r0 = load(r), r1 = load(r + lanes), r2 = load(r + 2 * lanes),
               r3 = load(r + 3 * lanes);
      for (int t = 0; t < group; ++t) {
        const float x = vx[t * cap + static_cast<std::size_t>(e)];
        acc[t][0] += x * r0;
        acc[t][1] += x * r1;
        acc[t][2] += x * r2;
        acc[t][3] += x * r3;
      }
    }
    if (!first && e == cursor[g]) continue;  // nothing in this chunk: C already holds the sum
    cursor[g] = e;
    for (int t = 0; t < group && i + t < rows; ++t) {
      float* out = c + static_cast<std::size_t>(i + t) * ldc;
      for (int q = 0; q < 4; ++q) {
        float* o = out + q * lanes;
        store(o, first ? finish(acc[t][q], alpha, beta, o) : load(o) + alpha * acc[t][q]);
      }
    }
  }
}

/// Copies a block of B's columns (`inner` rows, ldb floats apart) to `packed`, row after row.
ACTRAIN_CLONES
void pack_block(int inner, const float* b, std::size_t ldb, float* packed) {
  for (int r = 0; r < inner; ++r) {
    const float* from = b + static_cast<std::size_t>(r) * ldb;
    float* to = packed + static_cast<std::size_t>(r) * block;
    for (int q = 0; q < block; q += lanes) store(to + q, load(from + q));
  }
}

/// The columns [j0, j1) past the last whole block, one at a time, straight from B.
void groups_tail(int rows, std::size_t cap, const std::int32_t* count, const std::int32_t* index,
                 const float* value, const float* b, std::size_t ldb, int j0, int j1, float alpha,
                 float beta, float* c, std::size_t ldc) {
  for (int i = 0; i < rows; ++i) {
    const std::size_t g = static_cast<std::size_t>(i / group);
    const int t = i % group;
    for (int j = j0; j < j1; ++j) {
      float s = 0.0f;
      const std::int32_t* ix = index + g * cap;
      const float* vx = value + (group * g + static_cast<std::size_t>(t)) * cap;
      for (std::int32_t e = 0; e < count[g]; ++e)
        s += vx[e] * b[static_cast<std::size_t>(ix[e]) * ldb + j];
      float& out = c[static_cast<std::size_t>(i) * ldc + j];
      out = beta == 0.0f ? alpha * s : alpha * s + beta * out;
    }
  }
}

/// Where A's value for C's row i and B's row e is: A stored row-major m x k (ld = k), or k x m
/// (`columns`, ld = m: C's row i takes A's column i).
template <bool columns>
const float* entry(const float* a, std::size_t ld, int i, int e) {
  const auto row = static_cast<std::size_t>(columns ? e : i);
  const auto col = static_cast<std::size_t>(columns ? i : e);
  return a + row * ld + col;
}

/// Sizes the lists for `rows` of C (in groups) and `inner` rows of B; returns the groups.
std::size_t prepare_lists(int rows, int inner, sparse_scratch& s) {
  const auto groups = static_cast<std::size_t>((rows + group - 1) / group);
  const auto cap = static_cast<std::size_t>(inner);
  s.index.resize(groups * cap);
  s.value.resize(group * groups * cap);
  s.count.resize(groups);
  return groups;
}

/// Lists B's rows [e, inner) for the group of C's rows from i (`here` of them; at(i, e) is A's
/// value for C's row i and B's row e), after the n entries already listed; returns the count.
/// Without a branch per entry: every entry is written, and the count moves past it only when any
/// of its values is nonzero.
template <class At>
std::int32_t list_rest(const At& at, int i, int here, int e, int inner, std::size_t cap,
                       std::int32_t* ix, float* vx, std::int32_t n) {
  for (; e < inner; ++e) {
    bool any = false;
    for (int t = 0; t < group; ++t) {
      const float x = t < here ? at(i + t, e) : 0.0f;
      vx[t * cap + static_cast<std::size_t>(n)] = x;
      any |= x != 0.0f;
    }
    ix[n] = e;
    n += any;
  }
  return n;
}

/// Lists each group of C's rows' entries, one entry at a time. Returns the entries listed in all.
template <class At>
std::size_t list_groups(int rows, int inner, sparse_scratch& s, At at) {
  const auto groups = prepare_lists(rows, inner, s);
  const auto cap = static_cast<std::size_t>(inner);
  std::size_t total = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const int i = static_cast<int>(group * g);
    auto n = list_rest(at, i, std::min(group, rows - i), 0, inner, cap, s.index.data() + g * cap,
                       s.value.data() + group * g * cap, 0);
    s.count[g] = n;
    total += static_cast<std::size_t>(n);
  }
  return total;
}

#if ACTRAIN_GCC_X86
/// list_groups with AVX-512, sixteen entries at a time: each row of the group is loaded (A
/// row-major: C's row i is A's row i) or gathered (A stored k x m: C's row i is A's column i),
/// and the entries that any of the group's rows holds nonzero are compressed to the front of a
/// register and stored whole (a compressing store to memory is microcoded on some processors:
/// 0.95x dense BLAS instead of 1.4x on Zen 4). The lanes past the entries kept are overwritten
/// by the next store, and fit, since the count never passes the entry.
template <bool columns>
__attribute__((target("avx512f"))) std::size_t list_avx512(int rows, int inner,
                                                            sparse_scratch& s, const float* a) {
  const auto groups = prepare_lists(rows, inner, s);
  const auto cap = static_cast<std::size_t>(inner);
  const auto ld = static_cast<std::size_t>(columns ? rows : inner);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i offsets = _mm512_mullo_epi32(iota, _mm512_set1_epi32(rows));  // < max_entries
  const __m512 zero = _mm512_setzero_ps();
  auto at = [a, ld](int i, int e) { return *entry<columns>(a, ld, i, e); };
  std::size_t total = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const int i = static_cast<int>(group * g);
    const int here = std::min(group, rows - i);
    std::int32_t* ix = s.index.data() + g * cap;
    float* vx = s.value.data() + group * g * cap;
    std::int32_t n = 0;
    int e = 0;
    for (; e + 16 <= inner; e += 16) {
      __m512 x[group];
      __mmask16 any = 0;
      for (int t = 0; t < group; ++t) {
        if (t >= here)
          x[t] = zero;
        else if (columns)
          x[t] = _mm512_mask_i32gather_ps(zero, 0xFFFF, offsets, entry<true>(a, ld, i + t, e), 4);
        else
          x[t] = _mm512_loadu_ps(entry<false>(a, ld, i + t, e));
        any |= _mm512_cmp_ps_mask(x[t], zero, _CMP_NEQ_UQ);
      }
      const __m512i e16 = _mm512_add_epi32(iota, _mm512_set1_epi32(e));
      _mm512_storeu_si512(ix + n, _mm512_maskz_compress_epi32(any, e16));
      for (int t = 0; t < group; ++t)
        _mm512_storeu_ps(vx + t * cap + static_cast<std::size_t>(n),
                         _mm512_maskz_compress_ps(any, x[t]));
      n += __builtin_popcount(any);
    }
    n = list_rest(at, i, here, e, inner, cap, ix, vx, n);  // the last inner % 16
    s.count[g] = n;
    total += static_cast<std::size_t>(n);
  }
  return total;
}
#endif

/// C (rows x n) = alpha * (the listed entries) * B + beta * C; B has `inner` rows of n floats.
/// A block of B's columns at a time, and of those, `chunk` rows at a time: 16 KB that stay in
/// the first-level cache while every group of C's rows takes its entries from them.
void multiply(int rows, int n, int inner, sparse_scratch& s, const float* b, float alpha,
              float beta, float* c) {
  constexpr int chunk = 64;
  const int whole = n / block * block;
  const auto ld = static_cast<std::size_t>(n);
  const auto cap = static_cast<std::size_t>(inner);
  s.pack.resize(cap * block);
  s.cursor.resize(s.count.size());
  for (int j = 0; j < whole; j += block) {
    pack_block(inner, b + j, ld, s.pack.data());
    std::fill(s.cursor.begin(), s.cursor.end(), 0);
    for (int r = 0; r < inner; r += chunk)
      groups_block(rows, cap, s.count.data(), s.index.data(), s.value.data(), s.pack.data(),
                   s.cursor.data(), std::min(inner, r + chunk), r == 0, alpha, beta, c + j, ld);
  }
  groups_tail(rows, cap, s.count.data(), s.index.data(), s.value.data(), b, ld, whole, n, alpha,
              beta, c, ld);
}

/// Whether the path can pay for an m x k A feeding an n-column C: enough columns for a block,
/// enough entries to amortize the lists, not so many that the lists (1.5x A's size) would be a
/// large allocation of their own, and a sample of A's entries sparse enough.
bool worth_trying(int m, int n, int k, const float* a) {
  const auto total = static_cast<std::size_t>(m) * static_cast<std::size_t>(k);
  if (n < block || total < 4096 || total > max_entries) return false;
  // 1024 entries spread over A (an odd stride, so that a column pattern does not alias).
  std::size_t step = std::max<std::size_t>(1, total / 1024) | 1, seen = 0, nonzero = 0;
  for (std::size_t at = 0; at < total; at += step, ++seen) nonzero += a[at] != 0.0f;
  return static_cast<double>(nonzero) <= max_density * static_cast<double>(seen);
}

/// Whether the listed entries are few enough for the path to beat dense BLAS.
bool few_enough(std::size_t listed, int rows, int inner) {
  const double dense =
      static_cast<double>((rows + group - 1) / group) * static_cast<double>(inner);
  return static_cast<double>(listed) <= max_pair_share * dense;
}

std::atomic<bool> enabled{true};
std::atomic<bool> portable{false};

/// Whether the lists are built with AVX-512 (the machine has it, and no test asked for the
/// portable loop).
[[maybe_unused]] bool vector_lists() {
  return sparse_path_available() && !portable.load(std::memory_order_relaxed);
}

}  // namespace

void set_portable_lists(bool on) { portable.store(on, std::memory_order_relaxed); }

void set_sparse_path(bool on) { enabled.store(on, std::memory_order_relaxed); }
bool sparse_path() { return enabled.load(std::memory_order_relaxed) && sparse_path_available(); }

bool sparse_path_available() {
#if ACTRAIN_GCC_X86
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

double density(const float* a, std::size_t n) {
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < n; ++i) nonzero += a[i] != 0.0f;
  return n ? static_cast<double>(nonzero) / static_cast<double>(n) : 0.0;
}

namespace {

/// C = alpha op(A) B + beta C through the lists, or false (C untouched) where the path does not
/// pay; op(A) is A^T when `trans` (A stored k x m: C's row i takes A's column i).
template <bool trans>
bool sparse_gemm(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                 float* c, sparse_scratch& s) {
  if (m <= 0 || k <= 0 || !worth_trying(m, n, k, a)) return false;
  const auto ld = static_cast<std::size_t>(trans ? m : k);
  std::size_t listed = 0;
#if ACTRAIN_GCC_X86
  if (vector_lists())
    listed = list_avx512<trans>(m, k, s, a);
  else
#endif
    listed = list_groups(m, k, s, [a, ld](int i, int e) { return *entry<trans>(a, ld, i, e); });
  if (!few_enough(listed, m, k)) return false;
  multiply(m, n, k, s, b, alpha, beta, c);
  return true;
}

}  // namespace

bool sparse_gemm_nn(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                    float* c, sparse_scratch& s) {
  return sparse_gemm<false>(m, n, k, alpha, a, b, beta, c, s);
}

bool sparse_gemm_tn(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
                    float* c, sparse_scratch& s) {
  return sparse_gemm<true>(m, n, k, alpha, a, b, beta, c, s);
}

}  // namespace actrain::cpu
