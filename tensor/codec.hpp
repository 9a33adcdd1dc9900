#pragma once
// Gradient codecs for what crosses a link: IEEE half precision (the compiler's _Float16
// conversion, round to nearest even) and top-k selection for error-feedback sparsification.
#include <cstdint>
#include <vector>

namespace actrain {

/// n floats as half-precision bit patterns (values beyond 65504 become infinity, which the
/// receiver refuses as non-finite).
void encode_half(const float* x, std::size_t n, std::uint16_t* out);
void decode_half(const std::uint16_t* h, std::size_t n, float* out);

/// Indices of the k largest scores (ties: the lower index first), in increasing index order.
std::vector<std::uint32_t> top_k(const std::vector<float>& scores, std::size_t k);

}  // namespace actrain
