#pragma once
// actrain's version. The CMake project reads its version from these three lines, so the
// package version file (find_package(actrain 0.2)) and this header cannot disagree.
#define ACTRAIN_VERSION_MAJOR 0
#define ACTRAIN_VERSION_MINOR 2
#define ACTRAIN_VERSION_PATCH 0

/// MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons.
#define ACTRAIN_VERSION \
  (ACTRAIN_VERSION_MAJOR * 10000 + ACTRAIN_VERSION_MINOR * 100 + ACTRAIN_VERSION_PATCH)

namespace actrain {
/// The version of the library linked, "MAJOR.MINOR.PATCH" (may differ from the headers').
const char* version_string();
}  // namespace actrain
