#include "observe/prometheus.hpp"

#include <charconv>
#include <cmath>
#include <vector>

namespace actrain::observe {
namespace {

/// One label pair; the value is escaped on output.
struct label {
  const char* name;
  std::string value;
};

/// Appends families in order; a family's HELP/TYPE header is written once before its samples.
class writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;  // our help strings are constants with no backslash or newline
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(const std::string& name, const std::vector<label>& labels, double v) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i) out_ += ',';
        out_ += labels[i].name;
        out_ += "=\"";
        out_ += prometheus_escape_label(labels[i].value);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += prometheus_number(v);
    out_ += '\n';
  }
  void gauge(const char* name, const char* help, double v) {
    family(name, "gauge", help);
    sample(name, {}, v);
  }
  void counter(const char* name, const char* help, double v) {
    family(name, "counter", help);
    sample(name, {}, v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

double d(std::int64_t v) {
  return static_cast<double>(v);
}

}  // namespace

std::string prometheus_escape_label(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

const std::vector<long long>& staleness_buckets() {
  static const std::vector<long long> b{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128};
  return b;
}

std::string prometheus_text(const run_snapshot& s) {
  writer w;
  w.family("actrain_info", "gauge", "Constant 1; labels name the job and its training mode.");
  w.sample("actrain_info", {{"job_name", s.job}, {"mode", s.mode}}, 1);
  w.gauge("actrain_epoch", "Current epoch (0-based count of completed passes).", d(s.epoch));
  w.gauge("actrain_epochs", "Epochs the job will run.", d(s.epochs));
  w.gauge("actrain_step", "Mini-batches computed by all workers together.", d(s.step));
  w.counter("actrain_samples_total", "Training rows processed by all workers.", d(s.samples));
  w.gauge("actrain_samples_per_second", "Recent training throughput, rows per second.",
          s.samples_per_s);
  w.gauge("actrain_elapsed_seconds", "Seconds since the job started.", s.elapsed_s);
  w.gauge("actrain_eta_seconds", "Estimated seconds until the job finishes.", s.eta_s);
  w.gauge("actrain_train_loss", "Recent mean training loss.", s.train_loss);
  w.gauge("actrain_test_loss", "Loss on the held-out set at the last evaluation.", s.test_loss);
  w.gauge("actrain_test_accuracy", "Accuracy on the held-out set at the last evaluation.",
          s.test_accuracy);
  if (!s.classes.empty()) {
    const auto& c = s.classes;
    auto per_class = [&](const char* name, const char* help, const std::vector<double>& v) {
      w.family(name, "gauge", help);
      for (std::size_t k = 0; k < v.size(); ++k)
        w.sample(name, {{"class", std::to_string(k)}}, v[k]);
    };
    per_class("actrain_test_precision", "Precision of each class at the last evaluation.",
              c.precision);
    per_class("actrain_test_recall", "Recall of each class at the last evaluation.", c.recall);
    per_class("actrain_test_average_precision",
              "Average precision of each class's probability at the last evaluation.",
              c.average_precision);
    w.gauge("actrain_test_macro_precision", "Precision averaged over the classes.",
            c.macro_precision);
    w.gauge("actrain_test_macro_recall", "Recall averaged over the classes.", c.macro_recall);
    w.gauge("actrain_test_macro_average_precision", "Average precision averaged over the classes.",
            c.macro_average_precision);
    if (c.precision.size() == 2)
      w.gauge("actrain_test_auc", "ROC AUC of class 1 at the last evaluation (two classes).",
              c.auc);
  }
  w.gauge("actrain_finished", "1 once the job has finished.", s.finished ? 1 : 0);
  w.counter("actrain_dropped_late_gradients_total",
            "Late gradient slices dropped by sync barriers.", d(s.dropped_late));
  w.gauge("actrain_stalls", "Number of waits currently longer than the stall threshold.",
          d(static_cast<std::int64_t>(s.stalls.size())));

  auto per_worker = [&](const char* name, const char* type, const char* help, auto get) {
    if (s.workers.empty()) return;
    w.family(name, type, help);
    for (const auto& x : s.workers) w.sample(name, {{"worker", x.name}, {"node", x.node}}, get(x));
  };
  per_worker("actrain_worker_step", "gauge", "Mini-batches computed by the worker.",
             [](const worker_status& x) { return d(x.step); });
  per_worker("actrain_worker_samples_total", "counter", "Rows processed by the worker.",
             [](const worker_status& x) { return d(x.samples); });
  per_worker("actrain_worker_samples_per_second", "gauge", "Worker throughput, rows per second.",
             [](const worker_status& x) { return x.samples_per_s; });
  per_worker("actrain_worker_busy_ratio", "gauge",
             "Fraction of recent wall time the worker spent computing (the rest: waiting for "
             "its shards).",
             [](const worker_status& x) { return x.busy; });
  per_worker("actrain_worker_loss", "gauge", "Loss of the worker's last mini-batch.",
             [](const worker_status& x) { return x.loss; });
  per_worker("actrain_worker_last_staleness", "gauge", "Staleness of the worker's last push.",
             [](const worker_status& x) { return d(x.last_staleness); });
  per_worker("actrain_worker_seconds_since_report", "gauge",
             "Seconds since the worker last reported progress.",
             [](const worker_status& x) { return x.seconds_since_report; });

  auto per_shard = [&](const char* name, const char* type, const char* help, auto get) {
    if (s.shards.empty()) return;
    w.family(name, type, help);
    for (const auto& x : s.shards) w.sample(name, {{"shard", x.name}, {"node", x.node}}, get(x));
  };
  per_shard("actrain_shard_version", "gauge", "Updates applied by the shard.",
            [](const shard_status& x) { return d(x.version); });
  per_shard("actrain_shard_pushes_total", "counter", "Gradient pushes received by the shard.",
            [](const shard_status& x) { return d(x.pushes); });
  per_shard("actrain_shard_pulls_total", "counter", "Weight pulls answered by the shard.",
            [](const shard_status& x) { return d(x.pulls); });
  per_shard("actrain_shard_rejected_total", "counter", "Pushes refused by validation.",
            [](const shard_status& x) { return d(x.rejected); });
  per_shard("actrain_shard_dropped_stale_total", "counter",
            "Pushes dropped by the staleness policy.",
            [](const shard_status& x) { return d(x.dropped_stale); });
  per_shard("actrain_shard_mean_staleness", "gauge",
            "Running mean staleness of the pushes the shard applied.",
            [](const shard_status& x) { return x.mean_staleness; });
  per_shard("actrain_shard_momentum", "gauge",
            "Momentum coefficient the shard's rule uses after the staleness correction.",
            [](const shard_status& x) { return x.momentum; });
  per_shard("actrain_shard_uncompensated_total", "counter",
            "Stale pushes applied without delay compensation (their weights were no longer kept).",
            [](const shard_status& x) { return d(x.uncompensated); });
  per_shard("actrain_shard_dropped_late_total", "counter",
            "Late slices dropped by the barrier in front of the shard.",
            [](const shard_status& x) { return d(x.dropped_late); });
  per_shard("actrain_mailbox_depth", "gauge", "Messages waiting in the shard's mailbox.",
            [](const shard_status& x) { return d(x.mailbox_depth); });

  auto per_table = [&](const char* name, const char* type, const char* help, auto get) {
    if (s.tables.empty()) return;
    w.family(name, type, help);
    for (const auto& x : s.tables) w.sample(name, {{"table", x.name}, {"node", x.node}}, get(x));
  };
  per_table("actrain_table_rows", "gauge",
            "Embedding rows the sparse shard holds (touched, not evicted).",
            [](const table_status& x) { return d(x.rows_held); });
  per_table("actrain_table_evicted_total", "counter", "Rows evicted as least recently used.",
            [](const table_status& x) { return d(x.evicted); });
  per_table("actrain_table_memory_bytes", "gauge", "Bytes of rows, optimizer state and id map.",
            [](const table_status& x) { return d(x.memory_bytes); });
  per_table("actrain_table_rows_pulled_total", "counter", "Rows sent to workers.",
            [](const table_status& x) { return d(x.rows_pulled); });
  per_table("actrain_table_rows_pushed_total", "counter", "Row gradients applied.",
            [](const table_status& x) { return d(x.rows_pushed); });
  per_table("actrain_table_pushes_total", "counter", "Row pushes applied.",
            [](const table_status& x) { return d(x.pushes); });
  per_table("actrain_table_rejected_total", "counter", "Row messages refused by validation.",
            [](const table_status& x) { return d(x.rejected); });
  per_table("actrain_table_bytes_received_total", "counter",
            "Payload bytes of row ids pulled and row gradients pushed to the shard.",
            [](const table_status& x) { return d(x.bytes_in); });
  per_table("actrain_table_bytes_sent_total", "counter", "Payload bytes of rows the shard sent.",
            [](const table_status& x) { return d(x.bytes_out); });
  per_table("actrain_table_mean_row_staleness", "gauge",
            "Mean staleness of pushed rows (row version minus the version pulled).",
            [](const table_status& x) { return x.mean_staleness; });
  if (!s.tables.empty()) {
    w.gauge("actrain_rows_per_step", "Distinct embedding rows a worker step touches.",
            s.rows_per_step);
    w.gauge("actrain_bytes_per_push", "Gradient payload bytes per worker step.", s.bytes_per_push);
    w.family("actrain_table_hot_row_traffic", "gauge",
             "Pulls + pushes of the shard's hottest rows (label id: the row id).");
    for (const auto& x : s.tables)
      for (std::size_t i = 0; i < x.hot_ids.size() && i < x.hot_counts.size(); ++i)
        w.sample("actrain_table_hot_row_traffic",
                 {{"table", x.name}, {"id", std::to_string(x.hot_ids[i])}}, d(x.hot_counts[i]));
  }

  if (!s.nodes.empty()) {
    w.family("actrain_node_bytes_sent_total", "counter",
             "Bytes the node sent on its TCP connections (acknowledged, as the kernel counts).");
    for (const auto& n : s.nodes)
      w.sample("actrain_node_bytes_sent_total", {{"node", n.node}}, d(n.bytes_sent));
    w.family("actrain_node_bytes_received_total", "counter",
             "Bytes the node received on its TCP connections (as the kernel counts).");
    for (const auto& n : s.nodes)
      w.sample("actrain_node_bytes_received_total", {{"node", n.node}}, d(n.bytes_received));
    w.family("actrain_peer_bytes_sent_total", "counter",
             "Bytes the node sent to one peer (a node, or other).");
    for (const auto& n : s.nodes)
      for (const auto& p : n.peers)
        w.sample("actrain_peer_bytes_sent_total", {{"node", n.node}, {"peer", p.peer}},
                 d(p.bytes_sent));
    w.family("actrain_peer_bytes_received_total", "counter",
             "Bytes the node received from one peer (a node, or other).");
    for (const auto& n : s.nodes)
      for (const auto& p : n.peers)
        w.sample("actrain_peer_bytes_received_total", {{"node", n.node}, {"peer", p.peer}},
                 d(p.bytes_received));
  }

  // Staleness: the hub keeps exact counts per value; Prometheus wants cumulative buckets.
  w.family("actrain_staleness", "histogram",
           "Staleness (shard version minus base version) "
           "of applied gradient pushes.");
  std::int64_t count = 0;
  double sum = 0;
  for (const auto& [value, n] : s.staleness_histogram) {
    count += n;
    sum += static_cast<double>(value) * static_cast<double>(n);
  }
  for (long long le : staleness_buckets()) {
    std::int64_t below = 0;
    for (const auto& [value, n] : s.staleness_histogram)
      if (value <= le) below += n;
    w.sample("actrain_staleness_bucket", {{"le", std::to_string(le)}}, d(below));
  }
  w.sample("actrain_staleness_bucket", {{"le", "+Inf"}}, d(count));
  w.sample("actrain_staleness_sum", {}, sum);
  w.sample("actrain_staleness_count", {}, d(count));
  return w.take();
}

}  // namespace actrain::observe
