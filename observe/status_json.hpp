#pragma once
#include <nlohmann/json.hpp>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// The JSON document GET /status serves and the dashboard page reads:
/// {job, mode, epoch, epochs, step, samples, elapsed_s, eta_s, samples_per_s, train_loss,
///  test_loss, test_accuracy, finished, dropped_late,
///  workers: [{name, node, step, samples, samples_per_s, busy, loss, last_staleness, state,
///             seconds_since_report}],
///  shards: [{name, node, version, pushes, pulls, rejected, dropped_stale, dropped_late,
///            mailbox_depth}],
///  nodes: [{node, bytes_sent, bytes_received}],
///  staleness_histogram: [[staleness, count], ...],
///  stalls: ["sync step 12 on shard-0 waits 2.3 s for worker-3", ...],
///  curve: {seconds: [...], samples: [...], train_loss: [...], test_loss: [...],
///          test_accuracy: [...], samples_per_s: [...]}}
/// Non-finite numbers (e.g. NaN for "not evaluated yet") become null.
nlohmann::json status_json(const run_snapshot& s);

}  // namespace actrain::observe
