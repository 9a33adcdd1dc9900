#include "bench/doc_section.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace actrain {

std::string fmt(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

void update_doc_section(const std::string& path, const std::string& name, const std::string& body) {
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
  }
  auto begin = "<!-- " + name + ":begin -->";
  auto end = "<!-- " + name + ":end -->";
  auto section = begin + "\n" + body + (body.empty() || body.back() == '\n' ? "" : "\n") + end;
  auto b = text.find(begin);
  auto e = b == std::string::npos ? std::string::npos : text.find(end, b);
  if (b != std::string::npos && e != std::string::npos) {
    text.replace(b, e + end.size() - b, section);
  } else {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "\n" + section + "\n";
  }
  auto tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(path + ": cannot replace");
}

std::string benchmarks_doc_path() {
  const char* src = std::getenv("ACTRAIN_SOURCE_DIR");
  return std::string(src ? src : ".") + "/docs/benchmarks.md";
}

std::string benchmarks_img_dir() {
  auto doc = benchmarks_doc_path();
  auto slash = doc.find_last_of('/');
  return (slash == std::string::npos ? std::string(".") : doc.substr(0, slash)) + "/img";
}

std::vector<int> parse_int_list(const std::string& s) {
  std::vector<int> out;
  std::istringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

}  // namespace actrain
