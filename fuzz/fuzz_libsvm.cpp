// read_libsvm over the input's text (written to a scratch file: the reader takes a path). The
// first byte picks the options: bits 0-1 the hash buckets (none, 1, 7, 2^20), bits 2-3 the entry
// limit (0, 1, 16, 1000), so hashing, merging and the limit are all reached. Bad input must end
// as data_error. An accepted set must be well formed and read back the same after write_libsvm.
#include <cmath>
#include <string>

#include <actrain/data.hpp>
#include <actrain/sparse_data.hpp>
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned bits = data[0];
  static constexpr std::uint64_t buckets[] = {0, 1, 7, std::uint64_t{1} << 20};
  static constexpr std::int64_t limits[] = {0, 1, 16, 1000};
  actrain::libsvm_options opts;
  opts.hash_buckets = buckets[bits & 3];
  opts.max_entries = limits[(bits >> 2) & 3];
  static const std::string path = actrain::fuzz::scratch_path("data.svm");
  static const std::string again = actrain::fuzz::scratch_path("again.svm");
  actrain::fuzz::write_file(path, data + 1, size - 1);
  actrain::sparse_dataset d;
  try {
    d = actrain::read_libsvm(path, opts);
  } catch (const actrain::data_error&) {
    return 0;
  }
  const auto rows = static_cast<std::size_t>(d.rows);
  FUZZ_CHECK(d.rows > 0);
  FUZZ_CHECK(d.offsets.size() == rows + 1 && d.offsets[0] == 0 && d.y.size() == rows);
  FUZZ_CHECK(d.nnz() <= opts.max_entries);
  FUZZ_CHECK(static_cast<std::size_t>(d.nnz()) == d.ids.size());
  FUZZ_CHECK(d.values.empty() || d.values.size() == d.ids.size());
  FUZZ_CHECK(opts.hash_buckets == 0 || d.id_space == opts.hash_buckets);
  bool all_ones = true;
  for (std::size_t r = 0; r < rows; ++r) {
    FUZZ_CHECK(d.y[r] == 0 || d.y[r] == 1);
    FUZZ_CHECK(d.offsets[r] <= d.offsets[r + 1]);
    for (auto e = d.offsets[r]; e < d.offsets[r + 1]; ++e) {
      FUZZ_CHECK(d.ids[e] < d.id_space);
      for (auto other = d.offsets[r]; other < e; ++other) FUZZ_CHECK(d.ids[other] != d.ids[e]);
      if (!d.values.empty()) {
        FUZZ_CHECK(std::isfinite(d.values[e]));
        all_ones = all_ones && d.values[e] == 1.f;
      }
    }
  }
  FUZZ_CHECK(d.values.empty() || !all_ones);  // values are left empty when all are 1

  // Written and read again with the same options: the ids are distinct and already below the
  // buckets, so nothing is hashed or merged twice.
  actrain::write_libsvm(d, again);
  const actrain::sparse_dataset back = actrain::read_libsvm(again, opts);
  FUZZ_CHECK(back.rows == d.rows && back.offsets == d.offsets && back.ids == d.ids);
  FUZZ_CHECK(back.values == d.values && back.y == d.y && back.id_space == d.id_space);
  return 0;
}
