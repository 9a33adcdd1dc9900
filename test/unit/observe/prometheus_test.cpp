// Prometheus text exposition 0.0.4, checked by a small parser written here (independent of the
// code under test): every line is blank, a # HELP / # TYPE comment, or `name{labels} value`.
#include "observe/prometheus.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "synthetic_run.hpp"

namespace actrain::observe {
namespace {

struct sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct exposition {
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helps;
  std::vector<sample> samples;

  std::vector<sample> find(const std::string& name) const {
    std::vector<sample> out;
    for (const auto& s : samples)
      if (s.name == name) out.push_back(s);
    return out;
  }
  double value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    throw std::runtime_error("no sample " + name);
  }
};

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool name_char(char c) {
  return name_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

double parse_value(const std::string& v) {
  if (v == "NaN") return NAN;
  if (v == "+Inf") return INFINITY;
  if (v == "-Inf") return -INFINITY;
  std::size_t used = 0;
  const double d = std::stod(v, &used);
  if (used != v.size()) throw std::runtime_error("bad value '" + v + "'");
  return d;
}

/// Throws with the offending line on any deviation from the format.
exposition parse(const std::string& text) {
  exposition e;
  std::istringstream in(text);
  std::string line;
  std::string current_family;
  if (!text.empty() && text.back() != '\n') throw std::runtime_error("no final newline");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream ls(line.substr(1));
      std::string kind, name, rest;
      ls >> kind >> name;
      std::getline(ls, rest);
      if (kind == "TYPE") {
        const std::string type = rest.substr(rest.find_first_not_of(' '));
        static const std::set<std::string> ok{"counter", "gauge", "histogram", "summary",
                                              "untyped"};
        if (!ok.count(type)) throw std::runtime_error("bad type: " + line);
        if (e.types.count(name)) throw std::runtime_error("TYPE twice: " + line);
        e.types[name] = type;
        current_family = name;
      } else if (kind == "HELP") {
        e.helps.insert(name);
      }
      continue;
    }
    sample s;
    std::size_t i = 0;
    if (!name_start(line[0])) throw std::runtime_error("bad name: " + line);
    while (i < line.size() && name_char(line[i])) ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t ln = i;
        while (i < line.size() && name_char(line[i])) ++i;
        const std::string lname = line.substr(ln, i - ln);
        if (lname.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          throw std::runtime_error("bad label: " + line);
        i += 2;
        std::string value;
        for (; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] == '\\') {
            ++i;
            if (i >= line.size()) throw std::runtime_error("bad escape: " + line);
            if (line[i] == 'n')
              value += '\n';
            else if (line[i] == '\\' || line[i] == '"')
              value += line[i];
            else
              throw std::runtime_error("bad escape: " + line);
          } else {
            value += line[i];
          }
        }
        if (i >= line.size()) throw std::runtime_error("unterminated label: " + line);
        ++i;  // closing quote
        s.labels[lname] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) throw std::runtime_error("unterminated labels: " + line);
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') throw std::runtime_error("no value: " + line);
    s.value = parse_value(line.substr(i + 1));
    // The sample must belong to the family whose TYPE came last.
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string suf = suffix;
      if (e.types.count(current_family) && e.types[current_family] == "histogram" &&
          family == current_family + suf)
        family = current_family;
    }
    if (family != current_family) throw std::runtime_error("sample outside its family: " + line);
    e.samples.push_back(s);
  }
  return e;
}

TEST(prometheus, every_line_parses_and_every_family_has_help_and_type) {
  const auto text = prometheus_text(testing::synthetic_snapshot());
  exposition e;
  ASSERT_NO_THROW(e = parse(text)) << text;
  for (const auto& [name, type] : e.types) {
    EXPECT_EQ(name.rfind("actrain_", 0), 0u) << name;
    EXPECT_TRUE(e.helps.count(name)) << name;
  }
  for (const auto& s : e.samples) EXPECT_EQ(s.name.rfind("actrain_", 0), 0u) << s.name;
}

TEST(prometheus, expected_names_types_and_values) {
  const auto e = parse(prometheus_text(testing::synthetic_snapshot()));
  const std::map<std::string, std::string> expected{
      {"actrain_samples_per_second", "gauge"},
      {"actrain_train_loss", "gauge"},
      {"actrain_test_loss", "gauge"},
      {"actrain_test_accuracy", "gauge"},
      {"actrain_epoch", "gauge"},
      {"actrain_samples_total", "counter"},
      {"actrain_shard_pushes_total", "counter"},
      {"actrain_shard_pulls_total", "counter"},
      {"actrain_shard_rejected_total", "counter"},
      {"actrain_dropped_late_gradients_total", "counter"},
      {"actrain_mailbox_depth", "gauge"},
      {"actrain_node_bytes_sent_total", "counter"},
      {"actrain_node_bytes_received_total", "counter"},
      {"actrain_worker_step", "gauge"},
      {"actrain_worker_samples_per_second", "gauge"},
      {"actrain_worker_busy_ratio", "gauge"},
      {"actrain_staleness", "histogram"}};
  for (const auto& [name, type] : expected) {
    ASSERT_TRUE(e.types.count(name)) << name;
    EXPECT_EQ(e.types.at(name), type) << name;
  }
  EXPECT_EQ(e.value("actrain_samples_per_second"), 1280);
  EXPECT_EQ(e.value("actrain_train_loss"), 0.61);
  EXPECT_EQ(e.value("actrain_test_accuracy"), 0.78);
  EXPECT_EQ(e.value("actrain_epoch"), 1);
  EXPECT_EQ(e.value("actrain_samples_total"), 16000);
  EXPECT_EQ(e.value("actrain_dropped_late_gradients_total"), 4);
  EXPECT_EQ(e.value("actrain_shard_pushes_total", {{"shard", "shard-0"}, {"node", "local"}}), 250);
  EXPECT_EQ(e.value("actrain_shard_pulls_total", {{"shard", "shard-1"}, {"node", "local"}}), 258);
  EXPECT_EQ(e.value("actrain_shard_rejected_total", {{"shard", "shard-0"}, {"node", "local"}}), 1);
  EXPECT_EQ(e.value("actrain_mailbox_depth", {{"shard", "shard-0"}, {"node", "local"}}), 4);
  EXPECT_EQ(e.value("actrain_worker_step", {{"worker", "worker-1"}, {"node", "local"}}), 88);
  EXPECT_EQ(
      e.value("actrain_worker_samples_per_second", {{"worker", "worker-0"}, {"node", "local"}}),
      460.5);
  EXPECT_EQ(e.value("actrain_worker_busy_ratio", {{"worker", "worker-0"}, {"node", "local"}}),
            0.95);
  // The quote in the node name survives escaping and parsing.
  EXPECT_EQ(e.value("actrain_node_bytes_sent_total", {{"node", "node \"b\""}}), 30);
  EXPECT_EQ(e.value("actrain_node_bytes_received_total", {{"node", "local"}}), 2000);
  EXPECT_EQ(e.find("actrain_worker_step").size(), 3u);
}

TEST(prometheus, staleness_histogram_is_cumulative_and_inf_equals_count) {
  const auto e = parse(prometheus_text(testing::synthetic_snapshot()));
  const auto buckets = e.find("actrain_staleness_bucket");
  ASSERT_EQ(buckets.size(), staleness_buckets().size() + 1);
  double prev = 0, prev_le = -1;
  for (const auto& b : buckets) {
    const double le = parse_value(b.labels.at("le"));
    EXPECT_GT(le, prev_le);
    EXPECT_GE(b.value, prev);
    prev = b.value;
    prev_le = le;
  }
  EXPECT_TRUE(std::isinf(prev_le));
  // Histogram {0:10, 1:5, 3:2, 200:1}.
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "0"}}), 10);
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "1"}}), 15);
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "2"}}), 15);
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "3"}}), 17);
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "128"}}), 17);
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "+Inf"}}), 18);
  EXPECT_EQ(e.value("actrain_staleness_count"), 18);
  EXPECT_EQ(e.value("actrain_staleness_sum"), 0 * 10 + 1 * 5 + 3 * 2 + 200 * 1);
}

TEST(prometheus, empty_snapshot_still_parses) {
  const auto e = parse(prometheus_text(run_snapshot{}));
  EXPECT_EQ(e.value("actrain_staleness_count"), 0);
  EXPECT_EQ(e.value("actrain_staleness_bucket", {{"le", "+Inf"}}), 0);
  EXPECT_TRUE(e.find("actrain_worker_step").empty());
}

TEST(prometheus, label_values_are_escaped) {
  EXPECT_EQ(prometheus_escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  run_snapshot s;
  s.job = "evil\"} 1\nactrain_fake 2";
  const auto text = prometheus_text(s);
  const auto e = parse(text);
  EXPECT_TRUE(e.find("actrain_fake").empty());
  EXPECT_EQ(e.find("actrain_info").at(0).labels.at("job_name"), s.job);
}

TEST(prometheus, numbers_round_trip_and_special_values) {
  EXPECT_EQ(prometheus_number(0.1), "0.1");
  EXPECT_EQ(prometheus_number(1e-300), "1e-300");
  EXPECT_EQ(prometheus_number(NAN), "NaN");
  EXPECT_EQ(prometheus_number(INFINITY), "+Inf");
  EXPECT_EQ(prometheus_number(-INFINITY), "-Inf");
  EXPECT_EQ(std::stod(prometheus_number(2.0 / 3.0)), 2.0 / 3.0);
  run_snapshot s;
  s.test_loss = NAN;
  EXPECT_TRUE(std::isnan(parse(prometheus_text(s)).value("actrain_test_loss")));
}

TEST(prometheus, a_classifier_reports_per_class_and_macro_figures) {
  run_snapshot s;
  EXPECT_TRUE(parse(prometheus_text(s)).find("actrain_test_precision").empty());  // none yet
  s.classes = testing::two_class_report();
  const auto e = parse(prometheus_text(s));
  const auto p = e.find("actrain_test_precision");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.at(1).labels.at("class"), "1");
  EXPECT_EQ(p.at(1).value, 0.75);
  EXPECT_EQ(e.find("actrain_test_recall").at(0).value, 1.0);
  EXPECT_TRUE(std::isnan(e.find("actrain_test_average_precision").at(1).value));
  EXPECT_EQ(e.value("actrain_test_macro_precision"), 0.625);
  EXPECT_EQ(e.value("actrain_test_macro_average_precision"), 0.9);
  EXPECT_EQ(e.value("actrain_test_auc"), 0.8);
}

}  // namespace
}  // namespace actrain::observe
