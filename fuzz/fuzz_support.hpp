#pragma once
// What the fuzz targets share: an invariant check that aborts (the fuzzer and the replay program
// both see a crash), and scratch files for readers that take a path.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

/// A property every accepted input must have; a violation is a bug, reported as a crash.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

namespace actrain::fuzz {

/// A path named `name` in this process's own scratch folder (made once under $TMPDIR or /tmp,
/// left behind at exit like libFuzzer's own files: a fuzz process is usually ended by a signal).
inline std::string scratch_path(const std::string& name) {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/actrain-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return pattern;
  }();
  return dir + "/" + name;
}

/// Writes `size` bytes at `data` to `path`, replacing it.
inline void write_file(const std::string& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  FUZZ_CHECK(out.good());
}

}  // namespace actrain::fuzz

/// Every fuzz target defines it; libFuzzer calls it (clang builds), or replay_main.cpp does.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
