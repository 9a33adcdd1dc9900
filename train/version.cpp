#include <actrain/version.hpp>

namespace actrain {

#define ACTRAIN_STR2(x) #x
#define ACTRAIN_STR(x) ACTRAIN_STR2(x)
const char* version_string() {
  return ACTRAIN_STR(ACTRAIN_VERSION_MAJOR) "." ACTRAIN_STR(ACTRAIN_VERSION_MINOR) "." ACTRAIN_STR(
      ACTRAIN_VERSION_PATCH);
}

}  // namespace actrain
