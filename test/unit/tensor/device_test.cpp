// Device selection: names, errors, and "auto" on whatever machine runs the test.
#include "tensor/device.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tensor/cuda/cuda_backend.hpp"

namespace actrain {
namespace {

TEST(device, cpu_by_name) {
  std::string note;
  auto b = make_backend("cpu", &note);
  EXPECT_EQ(b->name(), "cpu");
  EXPECT_FALSE(note.empty());
  EXPECT_EQ(make_backend("cpu")->name(), "cpu");  // note is optional
}

TEST(device, probe_is_consistent) {
  auto r = probe_devices();
  EXPECT_EQ(r.cuda_built, cuda_built());
  EXPECT_GE(r.cuda_devices, 0);
  EXPECT_EQ(r.why_no_cuda.empty(), r.cuda_devices > 0);
  if (!r.cuda_built) {
    EXPECT_EQ(r.cuda_devices, 0);
  }
}

TEST(device, auto_picks_gpu_or_explains_cpu) {
  std::string note;
  auto b = make_backend("auto", &note);
  auto r = probe_devices();
  if (r.cuda_devices > 0) {
    EXPECT_EQ(b->name(), "cuda:0");
    EXPECT_NE(note.find("cuda:0"), std::string::npos) << note;
  } else {  // the usual case on the CPU-only build machine
    EXPECT_EQ(b->name(), "cpu");
    EXPECT_NE(note.find("cpu"), std::string::npos) << note;
    EXPECT_NE(note.find(r.why_no_cuda), std::string::npos) << note;
  }
  EXPECT_EQ(note.find('\n'), std::string::npos) << "one line";
}

TEST(device, malformed_names_are_invalid_arguments) {
  for (std::string bad :
       {"gpu", "cuda:x", "cuda:-1", "cuda:", "cuda", "CPU", "", "cuda:0x", "cuda:1.5"}) {
    try {
      make_backend(bad);
      FAIL() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("\"" + bad + "\""), std::string::npos) << e.what();
    }
  }
}

TEST(device, missing_gpu_is_a_runtime_error_naming_it) {
  int count = probe_devices().cuda_devices;
  std::string dev = "cuda:" + std::to_string(count);  // one past the last GPU
  try {
    make_backend(dev);
    FAIL() << "accepted " << dev;
  } catch (const std::invalid_argument& e) {
    FAIL() << "wrong exception type: " << e.what();
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(dev), std::string::npos) << what;
    EXPECT_NE(what.find(": "), std::string::npos) << "reason missing: " << what;
  }
}

}  // namespace
}  // namespace actrain
