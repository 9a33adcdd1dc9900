#include "observe/metrics_file.hpp"

#include "observe/status_json.hpp"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace actrain::observe {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Shortest text that reads back as the same double; "" for NaN/Inf (CSV "missing").
std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

nlohmann::json json_number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

metrics_file_writer::metrics_file_writer(const std::string& path) : path_(path) {
  if (ends_with(path, ".csv")) {
    csv_ = true;
  } else if (ends_with(path, ".jsonl")) {
    csv_ = false;
  } else {
    throw std::invalid_argument("metrics file '" + path + "': extension must be .csv or .jsonl");
  }
  out_.open(path, std::ios::binary | std::ios::app);
  if (!out_) throw std::runtime_error("metrics file '" + path + "': cannot open for appending");
  out_.seekp(0, std::ios::end);
  if (csv_ && out_.tellp() == std::streampos(0)) {
    out_ << "seconds,samples,train_loss,test_loss,test_accuracy,samples_per_s,macro_precision,"
            "macro_recall,macro_average_precision,auc\n";
    out_.flush();
  }
}

void metrics_file_writer::append(const curve_point& p) {
  if (csv_) {
    out_ << csv_number(p.seconds) << ',' << p.samples << ',' << csv_number(p.train_loss) << ','
         << csv_number(p.test_loss) << ',' << csv_number(p.test_accuracy) << ','
         << csv_number(p.samples_per_s);
    // Classifiers' macro figures; empty fields where no report was made.
    const double none = std::nan("");
    const auto& c = p.classes;
    out_ << ',' << csv_number(c.empty() ? none : c.macro_precision) << ','
         << csv_number(c.empty() ? none : c.macro_recall) << ','
         << csv_number(c.empty() ? none : c.macro_average_precision) << ','
         << csv_number(c.empty() ? none : c.auc) << '\n';
  } else {
    nlohmann::ordered_json j;
    j["seconds"] = json_number(p.seconds);
    j["samples"] = p.samples;
    j["train_loss"] = json_number(p.train_loss);
    j["test_loss"] = json_number(p.test_loss);
    j["test_accuracy"] = json_number(p.test_accuracy);
    j["samples_per_s"] = json_number(p.samples_per_s);
    if (!p.classes.empty()) j["classes"] = class_report_json<nlohmann::ordered_json>(p.classes);
    out_ << j.dump() << '\n';
  }
  out_.flush();
  if (!out_) throw std::runtime_error("metrics file '" + path_ + "': write failed");
}

}  // namespace actrain::observe
