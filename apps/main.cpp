// The `actrain` command. Everything is in actrain_app (run_actrain), so a test binary can run
// the same commands with models or optimizers of its own registered.
#include <unistd.h>

#include <cstdlib>

#include <actrain/backend.hpp>
#include "apps/commands.hpp"

int main(int argc, char** argv) {
  // OpenBLAS fell back to its generic kernels on a CPU it does not know by model number, while
  // CPUID offers AVX2 or AVX-512 (actrain/backend.hpp): it reads OPENBLAS_CORETYPE only when it
  // loads, so this process runs again once with it set (the variable stops a second time). If
  // the exec fails, the job runs on the kernels OpenBLAS chose.
  auto core = actrain::better_blas_core();
  if (!core.empty() && ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0)
    ::execv("/proc/self/exe", argv);
  return actrain::run_actrain(argc, argv);
}
