#include "observe/console.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace actrain::observe {
namespace {

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Rates span 10 to 10^7 rows/s: integers with thousands separators read best.
std::string grouped(double v) {
  if (!std::isfinite(v)) return "-";
  std::string digits = std::to_string(static_cast<long long>(std::llround(std::abs(v))));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

/// Fraction of the current epoch done, in [0, 1].
double epoch_fraction(const run_snapshot& s) {
  double f = 0;
  if (s.samples_per_epoch > 0) {
    f = static_cast<double>(s.samples - s.epoch * s.samples_per_epoch) /
        static_cast<double>(s.samples_per_epoch);
  } else if (s.epochs > 0 && s.elapsed_s > 0 && s.eta_s >= 0 && std::isfinite(s.eta_s)) {
    f = s.elapsed_s / (s.elapsed_s + s.eta_s) * static_cast<double>(s.epochs) -
        static_cast<double>(s.epoch);
  }
  return std::clamp(f, 0.0, 1.0);
}

std::string accuracy_part(const run_snapshot& s) {
  return std::isfinite(s.test_accuracy) && s.test_accuracy > 0
             ? "  acc " + fixed(s.test_accuracy, 4)
             : "";
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const long long t = std::llround(seconds);
  char buf[64];
  if (t < 60) {
    std::snprintf(buf, sizeof buf, "%llds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, (t / 60) % 60, t % 60);
  }
  return buf;
}

progress_reporter::progress_reporter(std::ostream& out, bool terminal, double min_interval_s)
    : out_(out), terminal_(terminal), min_interval_s_(min_interval_s) {}

bool progress_reporter::stdout_is_terminal() {
  return ::isatty(STDOUT_FILENO) == 1;
}

std::string progress_reporter::bar_line(const run_snapshot& s) const {
  constexpr int width = 24;
  const double f = epoch_fraction(s);
  const int filled = static_cast<int>(f * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '-');
  return "epoch " + std::to_string(s.epoch + 1) + "/" + std::to_string(s.epochs) + " [" + bar +
         "] " + fixed(100 * f, 0) + "%  step " + std::to_string(s.step) + "  loss " +
         fixed(s.train_loss, 4) + accuracy_part(s) + "  " + grouped(s.samples_per_s) +
         " samples/s  ETA " + format_duration(s.eta_s);
}

std::string progress_reporter::plain_line(const run_snapshot& s) const {
  return "[" + format_duration(s.elapsed_s) + "] epoch " + std::to_string(s.epoch + 1) + "/" +
         std::to_string(s.epochs) + "  step " + std::to_string(s.step) + "  samples " +
         std::to_string(s.samples) + "  loss " + fixed(s.train_loss, 4) + accuracy_part(s) + "  " +
         grouped(s.samples_per_s) + " samples/s  ETA " + format_duration(s.eta_s);
}

void progress_reporter::report_stalls(const run_snapshot& s) {
  if (s.stalls.empty()) {
    last_stall_count_ = 0;
    return;
  }
  const bool fresh = s.stalls.size() != last_stall_count_;
  if (!fresh && s.elapsed_s - last_stall_print_s_ < min_interval_s_) return;
  if (terminal_ && bar_width_ > 0) {
    out_ << '\r' << std::string(bar_width_, ' ') << '\r';  // the bar is redrawn after
    bar_width_ = 0;
    last_bar_.clear();
  }
  for (const auto& line : s.stalls) out_ << "stall: " << line << '\n';
  last_stall_count_ = s.stalls.size();
  last_stall_print_s_ = s.elapsed_s;
}

void progress_reporter::report(const run_snapshot& s) {
  if (finished_) return;
  report_stalls(s);
  if (terminal_) {
    if (printed_ && s.epoch != last_epoch_ && bar_width_ > 0) {
      out_ << '\n';
      bar_width_ = 0;
      last_bar_.clear();
    }
    std::string line = bar_line(s);
    if (line != last_bar_) {
      const std::size_t len = line.size();
      if (len < bar_width_) line.append(bar_width_ - len, ' ');  // blank a longer old bar
      out_ << '\r' << line;
      bar_width_ = len;
      last_bar_ = line.substr(0, len);
    }
  } else {
    const bool due =
        !printed_ || s.epoch != last_epoch_ || s.elapsed_s - last_print_s_ >= min_interval_s_;
    if (!due) return;
    out_ << plain_line(s) << '\n';
    last_print_s_ = s.elapsed_s;
  }
  out_.flush();
  printed_ = true;
  last_epoch_ = s.epoch;
}

void progress_reporter::finish(const run_snapshot& s) {
  if (finished_) return;
  if (terminal_) {
    report(s);
    if (bar_width_ > 0) out_ << '\n';
  } else {
    out_ << plain_line(s) << '\n';
  }
  out_.flush();
  finished_ = true;
}

std::string summary_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::size_t wn = 0, wv = 0;
  for (const auto& [n, v] : rows) {
    wn = std::max(wn, n.size());
    wv = std::max(wv, v.size());
  }
  std::string out;
  for (const auto& [n, v] : rows)
    out += n + std::string(wn - n.size() + 2, ' ') + std::string(wv - v.size(), ' ') + v + '\n';
  return out;
}

std::string summary_table(const std::vector<std::string>& header,
                          const std::vector<std::vector<std::string>>& rows) {
  const std::size_t cols = header.size();
  std::vector<std::size_t> w(cols, 0);
  for (std::size_t c = 0; c < cols; ++c) w[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < cols && c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (std::size_t c = 0; c < cols; ++c) {
      const std::string cell = c < r.size() ? r[c] : "";
      const std::string pad(w[c] - cell.size(), ' ');
      if (c) out += "  ";
      out += c == 0 ? cell + pad : pad + cell;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + '\n';
  };
  std::string out = line(header);
  std::size_t total = 0;
  for (std::size_t c = 0; c < cols; ++c) total += w[c] + (c ? 2 : 0);
  out += std::string(total, '-') + '\n';
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string run_summary(const run_snapshot& s) {
  std::string out =
      summary_table({{"job", s.job},
                     {"mode", s.mode},
                     {"epochs", std::to_string(s.finished ? s.epoch + 1 : s.epoch) + "/" +
                                    std::to_string(s.epochs)},
                     {"steps", std::to_string(s.step)},
                     {"samples", std::to_string(s.samples)},
                     {"time", format_duration(s.elapsed_s)},
                     {"samples/s", grouped(s.samples_per_s)},
                     {"train loss", fixed(s.train_loss, 4)},
                     {"test loss", fixed(s.test_loss, 4)},
                     {"test accuracy", fixed(s.test_accuracy, 4)},
                     {"macro precision / recall / AP",
                      s.classes.empty() ? "-"
                                        : fixed(s.classes.macro_precision, 4) + " / " +
                                              fixed(s.classes.macro_recall, 4) + " / " +
                                              fixed(s.classes.macro_average_precision, 4)},
                     {"dropped late", std::to_string(s.dropped_late)}});
  if (!s.workers.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : s.workers)
      rows.push_back({w.name, w.node, std::to_string(w.step), std::to_string(w.samples),
                      grouped(w.samples_per_s), std::to_string(std::lround(100 * w.busy)) + "%",
                      fixed(w.loss, 4), w.state});
    out += '\n' +
           summary_table(
               {"worker", "node", "steps", "samples", "samples/s", "busy", "loss", "state"}, rows);
  }
  if (!s.shards.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& x : s.shards)
      rows.push_back({x.name, x.node, std::to_string(x.version), std::to_string(x.pushes),
                      std::to_string(x.pulls), std::to_string(x.rejected),
                      std::to_string(x.dropped_stale + x.dropped_late), fixed(x.mean_staleness, 2),
                      fixed(x.momentum, 3)});
    out += '\n' + summary_table({"shard", "node", "version", "pushes", "pulls", "rejected",
                                 "dropped", "staleness", "momentum"},
                                rows);
  }
  if (!s.classes.empty()) {
    std::vector<std::vector<std::string>> rows;
    const auto& c = s.classes;
    for (std::size_t k = 0; k < c.precision.size(); ++k)
      rows.push_back({std::to_string(k), fixed(c.precision[k], 4), fixed(c.recall[k], 4),
                      fixed(c.average_precision[k], 4), std::to_string(c.support[k])});
    rows.push_back({"macro", fixed(c.macro_precision, 4), fixed(c.macro_recall, 4),
                    fixed(c.macro_average_precision, 4), ""});
    out += '\n' + summary_table({"class", "precision", "recall", "AP", "rows"}, rows);
  }
  return out;
}

std::string class_summary(const class_report& c) {
  if (c.empty()) return "";
  std::string out = "  macro P " + fixed(c.macro_precision, 4) + "  R " + fixed(c.macro_recall, 4) +
                    "  AP " + fixed(c.macro_average_precision, 4);
  if (c.precision.size() == 2) out += "  AUC " + fixed(c.auc, 4);
  return out;
}

}  // namespace actrain::observe

namespace actrain::observe {

std::string traffic_summary(const std::vector<node_traffic>& nodes) {
  if (nodes.empty()) return {};
  std::vector<std::vector<std::string>> rows;
  for (const auto& n : nodes) {
    rows.push_back({n.node, std::to_string(n.bytes_sent), std::to_string(n.bytes_received)});
    for (const auto& p : n.peers)
      rows.push_back(
          {"  with " + p.peer, std::to_string(p.bytes_sent), std::to_string(p.bytes_received)});
  }
  return "traffic by node (TCP bytes as the kernel counts them):\n" +
         summary_table({"node", "bytes sent", "bytes received"}, rows);
}

}  // namespace actrain::observe
