// read_csv over the input's text. The first byte picks the options (header, delimiter, label
// column, class count) so every combination is reached. Bad input must end as data_error.
#include <sstream>
#include <string>

#include "data/readers.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned bits = data[0];
  actrain::csv_options opt;
  opt.header = bits & 1;
  opt.delimiter = ",;\t "[(bits >> 1) & 3];
  switch ((bits >> 3) & 3) {
    case 0:
      break;  // the last column
    case 1:
      opt.label_index = 0;
      break;
    case 2:
      opt.label_index = 2;
      break;
    case 3:
      opt.label_name = "label";
      break;
  }
  static constexpr int classes[] = {0, 0, 2, 3, 10, 100, -1, 100000000};
  opt.num_classes = classes[(bits >> 5) & 7];
  std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  actrain::dataset d;
  try {
    d = actrain::read_csv(in, "fuzz.csv", opt);
  } catch (const actrain::data_error&) {
    return 0;
  }
  FUZZ_CHECK(d.rows > 0 && d.features > 0);
  FUZZ_CHECK(d.x.size() == static_cast<std::size_t>(d.rows) * static_cast<std::size_t>(d.features));
  FUZZ_CHECK(d.y.size() == static_cast<std::size_t>(d.rows));
  FUZZ_CHECK(d.num_classes == opt.num_classes);
  for (float y : d.y) FUZZ_CHECK(opt.num_classes == 0 || (y >= 0 && y < opt.num_classes));
  return 0;
}
