#pragma once
#include <string>
#include <vector>

namespace actrain {

/// `v` with `digits` digits after the point, as the benchmark tables print numbers.
std::string fmt(double v, int digits);

/// Replaces the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in the markdown file
/// at `path` with `body` (appending the marked section when it is missing; creating the file
/// when it does not exist). Written atomically (temp file + rename) so a crash never leaves a
/// half-written document. Throws std::runtime_error naming the file on an I/O error.
void update_doc_section(const std::string& path, const std::string& name, const std::string& body);

/// docs/benchmarks.md of the source tree (ACTRAIN_SOURCE_DIR, else the current directory).
std::string benchmarks_doc_path();

/// docs/img beside benchmarks_doc_path(): where benchmarks write their plots.
std::string benchmarks_img_dir();

/// "1,2,4" -> {1, 2, 4}; throws std::invalid_argument on an item that is not a number.
std::vector<int> parse_int_list(const std::string& s);

}  // namespace actrain
