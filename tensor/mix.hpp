#pragma once
// A 64-bit mixing function (splitmix64's finalizer, Steele et al. 2014): seeded draws that depend
// only on their inputs (an id, a row number), not on the order anything was visited in.
#include <cstdint>

namespace actrain {

inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A uniform double in [0, 1) from the top 53 bits of a mixed word.
inline double unit_double(std::uint64_t z) {
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace actrain
