#pragma once
#include <cmath>

#include <nlohmann/json.hpp>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// The JSON document GET /status serves and the dashboard page reads:
/// {job, mode, epoch, epochs, step, samples, elapsed_s, eta_s, samples_per_s, train_loss,
///  test_loss, test_accuracy, classes, finished, dropped_late,
///  workers: [{name, node, step, samples, samples_per_s, busy, loss, last_staleness, state,
///             seconds_since_report}],
///  shards: [{name, node, version, pushes, pulls, rejected, dropped_stale, dropped_late,
///            mailbox_depth}],
///  nodes: [{node, bytes_sent, bytes_received, peers: [{peer, bytes_sent, bytes_received}]}],
///  staleness_histogram: [[staleness, count], ...],
///  stalls: ["sync step 12 on shard-0 waits 2.3 s for worker-3", ...],
///  curve: {seconds: [...], samples: [...], train_loss: [...], test_loss: [...],
///          test_accuracy: [...], samples_per_s: [...]}}
/// Non-finite numbers (e.g. NaN for "not evaluated yet") become null. `classes` is the last
/// evaluation's class_report_json (null for regression or before the first evaluation).
nlohmann::json status_json(const run_snapshot& s);

/// A classifier's per-class report as JSON: {precision: [...], recall: [...],
/// average_precision: [...], support: [...], macro_precision, macro_recall,
/// macro_average_precision, auc}, non-finite numbers as null; null when the report is empty.
/// (/status and the .jsonl metrics file; Json: nlohmann::json or nlohmann::ordered_json.)
template <class Json>
Json class_report_json(const class_report& c) {
  if (c.empty()) return nullptr;
  auto n = [](double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); };
  auto list = [&](const std::vector<double>& v) {
    auto a = Json::array();
    for (double x : v) a.push_back(n(x));
    return a;
  };
  Json j;
  j["precision"] = list(c.precision);
  j["recall"] = list(c.recall);
  j["average_precision"] = list(c.average_precision);
  j["support"] = c.support;
  j["macro_precision"] = n(c.macro_precision);
  j["macro_recall"] = n(c.macro_recall);
  j["macro_average_precision"] = n(c.macro_average_precision);
  j["auc"] = n(c.auc);
  return j;
}

}  // namespace actrain::observe
