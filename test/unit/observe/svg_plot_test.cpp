#include "observe/svg_plot.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "synthetic_run.hpp"
#include "test/support/temp_dir.hpp"

namespace actrain::observe {
namespace {

namespace fs = std::filesystem;

using svg_plot_files = actrain::test::temp_dir_test;

/// Checks tags nest properly (enough XML to catch a broken writer); returns the root tag name.
std::string check_well_formed(const std::string& x) {
  std::vector<std::string> stack;
  std::string root;
  for (std::size_t i = x.find('<'); i != std::string::npos; i = x.find('<', i + 1)) {
    const std::size_t end = x.find('>', i);
    if (end == std::string::npos) throw std::runtime_error("unclosed tag");
    const std::string tag = x.substr(i + 1, end - i - 1);
    if (tag.empty()) throw std::runtime_error("empty tag");
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1))
        throw std::runtime_error("bad close " + tag);
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (root.empty()) root = name;
    if (tag.back() != '/') stack.push_back(name);
  }
  if (!stack.empty()) throw std::runtime_error("unclosed " + stack.back());
  // Text between tags must not hold raw '<' or '&' that is not an entity.
  if (std::regex_search(x, std::regex("&(?!(amp|lt|gt|quot|apos);)")))
    throw std::runtime_error("raw &");
  return root;
}

/// Number of "x,y" pairs in the polyline for `series`.
int polyline_points(const std::string& svg, const std::string& series) {
  const std::string key = "data-series=\"" + series + "\"";
  const auto at = svg.find(key);
  if (at == std::string::npos) return -1;
  const auto p = svg.find("points=\"", at) + 8;
  const std::string pts = svg.substr(p, svg.find('"', p) - p);
  std::istringstream in(pts);
  std::string pair;
  int n = 0;
  while (in >> pair) {
    double x, y;
    char comma;
    std::istringstream ps(pair);
    if (!(ps >> x >> comma >> y) || comma != ',') return -2;
    ++n;
  }
  return n;
}

TEST_F(svg_plot_files, writes_a_well_formed_plot_with_every_series_and_point) {
  plot_spec spec;
  spec.title = "loss <by> time & more";
  spec.x_label = "seconds";
  spec.y_label = "loss";
  plot_series a{"train", {}, {}, ""}, b{"test", {}, {}, "#ff0000"};
  for (int i = 0; i < 37; ++i) {
    a.xs.push_back(i);
    a.ys.push_back(std::exp(-0.1 * i));
  }
  for (int i = 0; i < 10; ++i) {
    b.xs.push_back(4 * i);
    b.ys.push_back(1.1 * std::exp(-0.1 * 4 * i));
  }
  spec.series = {a, b};
  const auto path = dir_ / "plot.svg";
  write_svg_plot(path.string(), spec);
  ASSERT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  const auto svg = read(path);
  EXPECT_EQ(check_well_formed(svg), "svg");
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("loss &lt;by&gt; time &amp; more"), std::string::npos);
  EXPECT_NE(svg.find(">train</text>"), std::string::npos);
  EXPECT_NE(svg.find(">test</text>"), std::string::npos);
  EXPECT_NE(svg.find(">seconds</text>"), std::string::npos);
  EXPECT_EQ(polyline_points(svg, "train"), 37);
  EXPECT_EQ(polyline_points(svg, "test"), 10);
  // Ticks: "nice" labels 0..40 on x for data 0..36.
  EXPECT_NE(svg.find(">40</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0</text>"), std::string::npos);
}

TEST_F(svg_plot_files, skips_non_finite_points_and_rejects_ragged_series) {
  plot_spec spec;
  spec.series = {{"s", {0, 1, 2, 3}, {1, NAN, 3, INFINITY}, ""}};
  EXPECT_EQ(polyline_points(svg_plot(spec), "s"), 2);
  spec.series = {{"ragged", {0, 1}, {1}, ""}};
  try {
    svg_plot(spec);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ragged"), std::string::npos);
  }
  // An empty plot is still a valid picture.
  EXPECT_EQ(check_well_formed(svg_plot(plot_spec{})), "svg");
}

TEST_F(svg_plot_files, unwritable_path_names_the_file) {
  const auto path = (dir_ / "no-such-dir" / "plot.svg").string();
  try {
    write_svg_plot(path, plot_spec{});
    FAIL() << "expected runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos);
  }
}

TEST_F(svg_plot_files, curve_plots_next_to_the_metrics_file) {
  const auto run = testing::synthetic_snapshot(40);
  const auto paths = write_curve_plots((dir_ / "run").string(), run.curve);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], (dir_ / "run-loss.svg").string());
  const auto loss = read(paths[0]);
  EXPECT_EQ(check_well_formed(loss), "svg");
  EXPECT_EQ(polyline_points(loss, "train"), 40);
  EXPECT_EQ(polyline_points(loss, "test"), 10);  // evaluated every 4th point
  EXPECT_EQ(polyline_points(read(paths[1]), "test"), 10);
  EXPECT_EQ(polyline_points(read(paths[2]), "samples/s"), 40);
}

}  // namespace
}  // namespace actrain::observe
