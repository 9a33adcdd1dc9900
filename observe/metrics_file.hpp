#pragma once
#include <fstream>
#include <string>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// Appends a run's curve points to a metrics file, one row per point, flushed per row so a
/// crash loses at most the row being written. The format follows the extension:
///   .csv   header "seconds,samples,train_loss,test_loss,test_accuracy,samples_per_s,
///          macro_precision,macro_recall,macro_average_precision,auc" (written when the file is
///          new or empty); a non-finite value, or a figure not measured, is an empty field;
///   .jsonl one JSON object per line with the same keys but the macro ones, and "classes":
///          the per-class report (class_report_json) on classifiers' evaluation points only;
///          a non-finite value is null.
/// Not thread-safe: one writer per file, called from one thread.
class metrics_file_writer {
 public:
  /// Throws std::invalid_argument naming the path when the extension is neither .csv nor
  /// .jsonl, std::runtime_error naming the path when it cannot be opened for appending.
  explicit metrics_file_writer(const std::string& path);
  /// Throws std::runtime_error naming the path when the write fails.
  void append(const curve_point& p);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool csv_;
  std::ofstream out_;
};

}  // namespace actrain::observe
