#include "tensor/codec.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace actrain {

static_assert(sizeof(_Float16) == sizeof(std::uint16_t), "half is 16 bits");

namespace {

// The compiler's conversion (software on x86-64 without F16C: a library call per value, about
// 4 ms per MLP step), and the processor's F16C instructions, 8 values at a time, where the CPU has
// them (checked at run time, so the binary still runs on any x86-64). Both round to nearest even.
void encode_portable(const float* x, std::size_t n, std::uint16_t* out) {
  for (std::size_t i = 0; i < n; ++i) {
    auto h = static_cast<_Float16>(x[i]);
    std::memcpy(&out[i], &h, sizeof h);
  }
}

void decode_portable(const std::uint16_t* h, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    _Float16 v;
    std::memcpy(&v, &h[i], sizeof v);
    out[i] = static_cast<float>(v);
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ACTRAIN_HAVE_F16C_PATH 1
__attribute__((target("avx,f16c"))) void encode_f16c(const float* x, std::size_t n,
                                                     std::uint16_t* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  encode_portable(x + i, n - i, out + i);
}

__attribute__((target("avx,f16c"))) void decode_f16c(const std::uint16_t* h, std::size_t n,
                                                     float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(v));
  }
  decode_portable(h + i, n - i, out + i);
}

bool cpu_has_f16c() {
  // CPUID leaf 1, ECX: bit 28 AVX, bit 29 F16C (clang's __builtin_cpu_supports has no "f16c").
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    return (c & (1u << 28)) != 0 && (c & (1u << 29)) != 0;
  }();
  return yes;
}
#endif

}  // namespace

void encode_half(const float* x, std::size_t n, std::uint16_t* out) {
#ifdef ACTRAIN_HAVE_F16C_PATH
  if (cpu_has_f16c()) return encode_f16c(x, n, out);
#endif
  encode_portable(x, n, out);
}

void decode_half(const std::uint16_t* h, std::size_t n, float* out) {
#ifdef ACTRAIN_HAVE_F16C_PATH
  if (cpu_has_f16c()) return decode_f16c(h, n, out);
#endif
  decode_portable(h, n, out);
}

std::vector<std::uint32_t> top_k(const std::vector<float>& scores, std::size_t k) {
  const std::size_t n = scores.size();
  k = std::min(k, n);
  std::vector<std::uint32_t> cand;  // indices that may be among the k, in index order
  if (k == 0) return cand;
  if (n > 8192 && k * 8 < n) {
    // A small k of many scores (top-k compression sends 1%): a strided sample gives a bound
    // that, most likely, at least k scores reach; only those are candidates. Where the sample
    // misjudges, every index is.
    const std::size_t m = 2048;
    std::vector<float> sample(m);
    for (std::size_t i = 0; i < m; ++i) sample[i] = scores[i * n / m];
    // Twice the expected rank of the k-th largest in the sample, plus a margin.
    auto r = std::min(m - 1, static_cast<std::size_t>(2.0 * static_cast<double>(k) * m / n) + 16);
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(r), sample.end(),
                     std::greater<float>());
    const float bound = sample[r];
    cand.reserve(4 * k + 64);
    for (std::size_t i = 0; i < n; ++i)
      if (scores[i] >= bound) cand.push_back(static_cast<std::uint32_t>(i));
    if (cand.size() < k) cand.clear();
  }
  if (cand.empty()) {
    cand.resize(n);
    std::iota(cand.begin(), cand.end(), 0u);
  }
  // The k-th largest candidate score t (nth_element on contiguous floats), then the candidates
  // in index order: every score above t, and as many equal to it as fit, lower indices first.
  std::vector<float> vals(cand.size());
  for (std::size_t j = 0; j < cand.size(); ++j) vals[j] = scores[cand[j]];
  auto kth = vals.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(vals.begin(), kth, vals.end(), std::greater<float>());
  const float t = *kth;
  std::size_t above = 0;
  for (auto i : cand) above += scores[i] > t;
  std::size_t ties = k - above;
  std::vector<std::uint32_t> idx;
  idx.reserve(k);
  for (auto i : cand) {
    if (scores[i] > t) {
      idx.push_back(i);
    } else if (scores[i] == t && ties > 0) {
      idx.push_back(i);
      --ties;
    }
  }
  return idx;
}

}  // namespace actrain
