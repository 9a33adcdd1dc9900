// Numeric CSV: one label column, every other column a feature. No quoting (numeric data needs
// none); blank lines are skipped; CRLF line ends and a UTF-8 byte-order mark are accepted.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <string_view>

#include "data/readers.hpp"

namespace actrain {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

void split(std::string_view line, char delim, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = line.find(delim, start);
    out.push_back(trim(line.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) return;
    start = end + 1;
  }
}

/// Everything read_csv knows about where it is, to name it in errors.
struct csv_context {
  const std::string& path;
  std::int64_t line = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw data_error(path + ":" + std::to_string(line) + ": " + what);
  }
};

/// The whole field must be a finite float (std::from_chars: no locale, no partial parses).
float parse_number(std::string_view s, const csv_context& at, std::size_t field) {
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  float v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  const std::string where = "field " + std::to_string(field + 1) + " '" + std::string(s) + "'";
  if (s.empty()) at.fail("field " + std::to_string(field + 1) + " is empty, expected a number");
  if (r.ec == std::errc::result_out_of_range) at.fail(where + " is out of float range");
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size())
    at.fail(where + " is not a number");
  if (!std::isfinite(v)) at.fail(where + " is not a finite number");
  return v;
}

/// Whether a header field would parse as a number (then the "header" is probably data).
bool looks_numeric(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  float v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

dataset read_csv(const std::string& path, const csv_options& opt) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw data_error(path + ": cannot open");
  return read_csv(in, path, opt);
}

dataset read_csv(std::istream& in, const std::string& path, const csv_options& opt) {
  if (opt.num_classes < 0)
    throw data_error(path + ": csv_options.num_classes must be >= 0, got " +
                     std::to_string(opt.num_classes));
  if (!opt.label_name.empty() && !opt.header)
    throw data_error(path + ": label column '" + opt.label_name +
                     "' is chosen by name, but the options say there is no header");

  dataset d;
  d.num_classes = opt.num_classes;
  csv_context at{path};
  std::string line;
  std::vector<std::string_view> fields;
  std::size_t columns = 0;  // 0 until the header or first row fixes it
  std::size_t label = 0;
  auto fix_columns = [&](std::size_t n) {
    columns = n;
    if (columns < 2)
      at.fail("line has " + std::to_string(n) +
              " field, expected a label and at least one feature");
    if (!opt.label_name.empty()) {
      for (label = 0; label < n && fields[label] != opt.label_name; ++label) {
      }
      if (label == n) {
        std::string names;
        for (auto f : fields) names += (names.empty() ? "" : ", ") + std::string(f);
        at.fail("unknown label column '" + opt.label_name + "' (header has: " + names + ")");
      }
    } else if (opt.label_index == -1) {
      label = n - 1;
    } else if (opt.label_index < 0 || std::size_t(opt.label_index) >= n) {
      at.fail("label column index " + std::to_string(opt.label_index) + " is out of range (" +
              std::to_string(n) + " columns)");
    } else {
      label = static_cast<std::size_t>(opt.label_index);
    }
    d.features = static_cast<int>(n - 1);
  };

  bool header_pending = opt.header;
  while (std::getline(in, line)) {
    ++at.line;
    std::string_view text = line;
    if (at.line == 1 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    if (trim(text).empty()) continue;
    split(text, opt.delimiter, fields);
    if (header_pending) {
      header_pending = false;
      if (std::all_of(fields.begin(), fields.end(), looks_numeric))
        at.fail(
            "the first line is all numbers, so it reads as data, not a header: set [data] "
            "header=false for a file without one (or name the columns)");
      fix_columns(fields.size());
      continue;
    }
    if (columns == 0) fix_columns(fields.size());
    if (fields.size() != columns)
      at.fail("line " + std::to_string(at.line) + " has " + std::to_string(fields.size()) +
              " fields, expected " + std::to_string(columns));
    for (std::size_t c = 0; c < columns; ++c) {
      const float v = parse_number(fields[c], at, c);
      if (c != label) {
        d.x.push_back(v);
        continue;
      }
      if (opt.num_classes > 0) {
        if (v != std::floor(v))
          at.fail("class label " + std::string(fields[c]) + " is not an integer");
        if (v < 0 || v >= opt.num_classes)
          at.fail("class label " + std::string(fields[c]) + " is out of range [0, " +
                  std::to_string(opt.num_classes) + ")");
      }
      d.y.push_back(v);
    }
    ++d.rows;
  }
  if (in.bad()) throw data_error(path + ": read error");
  if (columns == 0) throw data_error(path + ": empty file");
  if (d.rows == 0) throw data_error(path + ": no data rows after the header");
  return d;
}

}  // namespace actrain
