#pragma once
// Function multiversioning (GCC's target_clones): a function built for a wider instruction set
// and for baseline x86-64, the loader picking one for the CPU it runs on. The library itself is
// built for baseline x86-64 (SSE2). ACTRAIN_GCC_X86 says whether this compiler does it (GCC on
// x86-64; clang's fuzz build and other architectures build baseline only). Internal to actrain.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ACTRAIN_GCC_X86 1
#define ACTRAIN_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define ACTRAIN_GCC_X86 0
#define ACTRAIN_TARGET_CLONES(...)
#endif

/// For the element-wise passes over whole slices that every step runs (the NaN check of each
/// tensor that arrives, the optimizer's step, the weight average). No FMA: both versions round
/// alike.
#define ACTRAIN_AVX2_CLONES ACTRAIN_TARGET_CLONES("avx2", "default")
