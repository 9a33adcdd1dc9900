#pragma once
// A small Prometheus text-format (0.0.4) reader for the job tests, independent of the code under
// test: every line is blank, `# HELP name text`, `# TYPE name type`, or
// `name{label="value",...} value`. Throws std::runtime_error naming the offending line.
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace actrain::job_testing {

struct prom_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct prom_text {
  std::map<std::string, std::string> types;  ///< family -> counter/gauge/histogram/...
  std::set<std::string> helps;
  std::vector<prom_sample> samples;

  std::vector<prom_sample> all(const std::string& name) const {
    std::vector<prom_sample> out;
    for (const auto& s : samples)
      if (s.name == name) out.push_back(s);
    return out;
  }
  /// The single unlabelled sample `name`; throws when absent.
  double value(const std::string& name) const {
    for (const auto& s : samples)
      if (s.name == name && s.labels.empty()) return s.value;
    throw std::runtime_error("no unlabelled sample " + name);
  }
  /// Sum over every sample named `name` (all label sets).
  double sum(const std::string& name) const {
    double t = 0;
    for (const auto& s : samples)
      if (s.name == name) t += s.value;
    return t;
  }
};

inline bool prom_name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

inline double prom_value(const std::string& v, const std::string& line) {
  if (v == "NaN") return NAN;
  if (v == "+Inf") return INFINITY;
  if (v == "-Inf") return -INFINITY;
  std::size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw std::runtime_error("bad value: " + line);
  return d;
}

inline prom_text parse_prom_text(const std::string& text) {
  if (!text.empty() && text.back() != '\n') throw std::runtime_error("no final newline");
  static const std::set<std::string> kinds{"counter", "gauge", "histogram", "summary", "untyped"};
  prom_text out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream ls(line.substr(1));
      std::string kind, name, type;
      ls >> kind >> name;
      if (kind == "TYPE") {
        ls >> type;
        if (!kinds.count(type) || out.types.count(name))
          throw std::runtime_error("bad or repeated TYPE: " + line);
        out.types[name] = type;
      } else if (kind == "HELP") {
        out.helps.insert(name);
      }
      continue;
    }
    prom_sample s;
    std::size_t i = 0;
    while (i < line.size() && prom_name_char(line[i], i == 0)) ++i;
    if (i == 0) throw std::runtime_error("bad metric name: " + line);
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto start = i;
        while (i < line.size() && prom_name_char(line[i], i == start)) ++i;
        const auto label = line.substr(start, i - start);
        if (label.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          throw std::runtime_error("bad label: " + line);
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            if (++i >= line.size()) throw std::runtime_error("bad escape: " + line);
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        if (i >= line.size()) throw std::runtime_error("unterminated label value: " + line);
        ++i;
        s.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) throw std::runtime_error("unterminated labels: " + line);
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') throw std::runtime_error("no value: " + line);
    auto rest = line.substr(i + 1);
    if (auto sp = rest.find(' '); sp != std::string::npos) rest = rest.substr(0, sp);  // timestamp
    s.value = prom_value(rest, line);
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace actrain::job_testing
