#include "observe/status_json.hpp"

#include <cmath>

namespace actrain::observe {
namespace {

/// JSON has no NaN/Inf; null says "no value" to the page.
nlohmann::json num(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

}  // namespace

nlohmann::json status_json(const run_snapshot& s) {
  using nlohmann::json;
  json j;
  j["job"] = s.job;
  j["mode"] = s.mode;
  j["epoch"] = s.epoch;
  j["epochs"] = s.epochs;
  j["step"] = s.step;
  j["samples"] = s.samples;
  j["elapsed_s"] = num(s.elapsed_s);
  j["eta_s"] = num(s.eta_s);
  j["samples_per_s"] = num(s.samples_per_s);
  j["train_loss"] = num(s.train_loss);
  j["test_loss"] = num(s.test_loss);
  j["test_accuracy"] = num(s.test_accuracy);
  j["classes"] = class_report_json<nlohmann::json>(s.classes);
  j["finished"] = s.finished;
  j["dropped_late"] = s.dropped_late;

  json workers = json::array();
  for (const auto& w : s.workers)
    workers.push_back({{"name", w.name},
                       {"node", w.node},
                       {"step", w.step},
                       {"samples", w.samples},
                       {"samples_per_s", num(w.samples_per_s)},
                       {"busy", num(w.busy)},
                       {"loss", num(w.loss)},
                       {"last_staleness", w.last_staleness},
                       {"state", w.state},
                       {"seconds_since_report", num(w.seconds_since_report)}});
  j["workers"] = std::move(workers);

  json shards = json::array();
  for (const auto& x : s.shards)
    shards.push_back({{"name", x.name},
                      {"node", x.node},
                      {"version", x.version},
                      {"pushes", x.pushes},
                      {"pulls", x.pulls},
                      {"rejected", x.rejected},
                      {"dropped_stale", x.dropped_stale},
                      {"dropped_late", x.dropped_late},
                      {"mailbox_depth", x.mailbox_depth},
                      {"mean_staleness", x.mean_staleness},
                      {"momentum", x.momentum},
                      {"uncompensated", x.uncompensated}});
  j["shards"] = std::move(shards);

  if (!s.tables.empty()) {
    json tables = json::array();
    for (const auto& x : s.tables)
      tables.push_back({{"name", x.name},
                        {"node", x.node},
                        {"rows", x.rows_held},
                        {"evicted", x.evicted},
                        {"memory_bytes", x.memory_bytes},
                        {"pulls", x.pulls},
                        {"pushes", x.pushes},
                        {"rows_pulled", x.rows_pulled},
                        {"rows_pushed", x.rows_pushed},
                        {"rejected", x.rejected},
                        {"bytes_in", x.bytes_in},
                        {"bytes_out", x.bytes_out},
                        {"mean_staleness", num(x.mean_staleness)},
                        {"hot_ids", x.hot_ids},
                        {"hot_counts", x.hot_counts}});
    j["tables"] = std::move(tables);
    j["rows_per_step"] = num(s.rows_per_step);
    j["bytes_per_push"] = num(s.bytes_per_push);
  }

  json nodes = json::array();
  for (const auto& n : s.nodes) {
    json peers = json::array();
    for (const auto& p : n.peers)
      peers.push_back(
          {{"peer", p.peer}, {"bytes_sent", p.bytes_sent}, {"bytes_received", p.bytes_received}});
    nodes.push_back({{"node", n.node},
                     {"bytes_sent", n.bytes_sent},
                     {"bytes_received", n.bytes_received},
                     {"peers", std::move(peers)}});
  }
  j["nodes"] = std::move(nodes);

  json hist = json::array();
  for (const auto& [value, count] : s.staleness_histogram) hist.push_back({value, count});
  j["staleness_histogram"] = std::move(hist);

  j["stalls"] = s.stalls;

  // Column layout keeps the document small and is what the page's plots consume directly.
  json seconds = json::array(), samples = json::array(), train = json::array(),
       test = json::array(), acc = json::array(), rate = json::array();
  for (const auto& p : s.curve) {
    seconds.push_back(num(p.seconds));
    samples.push_back(p.samples);
    train.push_back(num(p.train_loss));
    test.push_back(num(p.test_loss));
    acc.push_back(num(p.test_accuracy));
    rate.push_back(num(p.samples_per_s));
  }
  j["curve"] = {{"seconds", std::move(seconds)},   {"samples", std::move(samples)},
                {"train_loss", std::move(train)},  {"test_loss", std::move(test)},
                {"test_accuracy", std::move(acc)}, {"samples_per_s", std::move(rate)}};
  return j;
}

}  // namespace actrain::observe
