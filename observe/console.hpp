#pragma once
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// Console progress for a run. On a terminal: one progress bar line per epoch (rate, loss,
/// accuracy, ETA) redrawn in place with '\r', a newline when the epoch changes. Not on a
/// terminal (CI, files): a plain line at most every `min_interval_s` seconds of run time, plus
/// one whenever the epoch changes. Stall lines are printed as soon as a stall appears and then
/// at most every `min_interval_s`. Time comes from run_snapshot::elapsed_s, so output is a pure
/// function of the snapshots fed in. Not thread-safe: call from one thread.
class progress_reporter {
 public:
  /// `out` must outlive the reporter.
  progress_reporter(std::ostream& out, bool terminal, double min_interval_s = 10);
  /// Whether standard output is a terminal (isatty).
  static bool stdout_is_terminal();

  /// Shows `s` if it is time to; call as often as convenient (e.g. on each progress report).
  void report(const run_snapshot& s);
  /// Shows the final state and ends the bar line. Further report() calls are ignored.
  void finish(const run_snapshot& s);

 private:
  std::string bar_line(const run_snapshot& s) const;
  std::string plain_line(const run_snapshot& s) const;
  void report_stalls(const run_snapshot& s);

  std::ostream& out_;
  bool terminal_;
  double min_interval_s_;
  bool printed_ = false;
  bool finished_ = false;
  std::int64_t last_epoch_ = -1;
  double last_print_s_ = 0;
  std::size_t last_stall_count_ = 0;
  double last_stall_print_s_ = 0;
  std::size_t bar_width_ = 0;  // length of the bar currently on screen, to blank leftovers
  std::string last_bar_;
};

/// "42s", "3:07", "1:02:03"; "-" for a negative or non-finite value.
std::string format_duration(double seconds);

/// A two-column name/value table, names left-aligned and values right-aligned.
std::string summary_table(const std::vector<std::pair<std::string, std::string>>& rows);

/// A table with a header row and a rule; the first column left-aligned, the rest right-aligned.
/// Rows shorter than the header are padded with empty cells.
std::string summary_table(const std::vector<std::string>& header,
                          const std::vector<std::vector<std::string>>& rows);

/// The final report of a run: job totals, then one row per worker and one per shard (and, for
/// a classifier, one per class: precision, recall, average precision, rows).
std::string run_summary(const run_snapshot& s);

/// An evaluation line's classifier figures: "  macro P 0.8512  R 0.8523  AP 0.9123" (and
/// "  AUC 0.9311" for two classes); "" when the report is empty.
std::string class_summary(const class_report& c);

/// Per-node traffic across a cluster: one row per node (bytes sent and received on its TCP
/// connections) and one per peer under it; "" when there are no nodes (one process).
std::string traffic_summary(const std::vector<node_traffic>& nodes);

}  // namespace actrain::observe
