// read_idx over an image file and a label file (plain or gzipped), both cut from the input: its
// first two bytes (little-endian) are the image file's length, the rest after it is the label
// file. read_idx takes paths, so both are written to scratch files. Bad input must end as
// data_error.
#include <algorithm>
#include <cmath>
#include <string>

#include "data/readers.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::size_t images = std::min<std::size_t>(data[0] | std::size_t{data[1]} << 8, size - 2);
  static const std::string images_path = actrain::fuzz::scratch_path("images.idx");
  static const std::string labels_path = actrain::fuzz::scratch_path("labels.idx");
  actrain::fuzz::write_file(images_path, data + 2, images);
  actrain::fuzz::write_file(labels_path, data + 2 + images, size - 2 - images);
  actrain::dataset d;
  try {
    d = actrain::read_idx(images_path, labels_path);
  } catch (const actrain::data_error&) {
    return 0;
  }
  FUZZ_CHECK(d.features > 0 && d.num_classes == 10);
  FUZZ_CHECK(d.x.size() == static_cast<std::size_t>(d.rows) * static_cast<std::size_t>(d.features));
  FUZZ_CHECK(d.y.size() == static_cast<std::size_t>(d.rows));
  for (float x : d.x) FUZZ_CHECK(x >= 0 && x <= 1);
  for (float y : d.y) FUZZ_CHECK(y >= 0 && y < 10 && y == std::floor(y));
  return 0;
}
