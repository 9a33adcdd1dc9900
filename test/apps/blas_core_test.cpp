// The `actrain` binary runs the OpenBLAS kernels that suit this CPU: where OpenBLAS fell back to
// its generic Prescott kernels while CPUID offers AVX2 or AVX-512, the process runs again with
// OPENBLAS_CORETYPE set (apps/main.cpp). OpenBLAS prints the kernels it loads with
// OPENBLAS_VERBOSE=2, in each image of the process.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include <actrain/backend.hpp>

namespace actrain {
namespace {

/// What `cmd` printed on stdout and stderr.
std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  return out;
}

/// The kernels of the last "Core: X" line.
std::string last_core(const std::string& text) {
  auto at = text.rfind("Core: ");
  if (at == std::string::npos) return "";
  return text.substr(at + 6, text.find('\n', at) - at - 6);
}

TEST(blas_core, the_actrain_binary_runs_the_kernels_that_suit_this_cpu) {
  // This test binary is not re-executed: its kernels are what OpenBLAS chose on its own.
  auto chosen = blas_core();
  auto better = better_blas_core();
  ASSERT_FALSE(chosen.empty());
  if (!better.empty()) {
    EXPECT_EQ(chosen, "Prescott");
  }
  auto out = run("OPENBLAS_VERBOSE=2 " + std::string(ACTRAIN_BINARY) + " bench no-such-bench");
  EXPECT_NE(out.find("unknown benchmark 'no-such-bench'"), std::string::npos) << out;
  EXPECT_EQ(last_core(out), better.empty() ? chosen : better) << out;
  std::cerr << "OpenBLAS chose " << chosen << "; actrain runs " << last_core(out) << "\n";
  // A kernel set the user names is kept as it is.
  auto named = run("OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=Prescott " + std::string(ACTRAIN_BINARY) +
                   " bench no-such-bench");
  EXPECT_EQ(last_core(named), "Prescott") << named;
}

}  // namespace
}  // namespace actrain
