// The `actrain` command. Everything is in actrain_app (run_actrain), so a test binary can run
// the same commands with models or optimizers of its own registered.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <actrain/backend.hpp>
#include "apps/commands.hpp"

namespace {

bool started_by_explicit_loader() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* slash = std::strrchr(buf, '/');
  return std::strncmp(slash ? slash + 1 : buf, "ld-", 3) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS fell back to its generic kernels on a CPU it does not know by model number, while
  // CPUID offers AVX2 or AVX-512 (actrain/backend.hpp): it reads OPENBLAS_CORETYPE only when it
  // loads, so this process runs again once with it set (the variable stops a second time). If
  // the exec fails, the job runs on the kernels OpenBLAS chose. A process started through an
  // explicit loader (ld-linux-x86-64.so.2 --library-path ... actrain, as scripts/gpu/check.sh
  // does) has the loader as /proc/self/exe: it cannot re-run itself, so it keeps those kernels.
  auto core = actrain::better_blas_core();
  if (!core.empty() && !started_by_explicit_loader() &&
      ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0)
    ::execv("/proc/self/exe", argv);
  return actrain::run_actrain(argc, argv);
}
