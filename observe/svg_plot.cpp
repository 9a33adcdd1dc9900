#include "observe/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace actrain::observe {
namespace {

const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                               "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(double v, const char* f = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Evenly spaced round tick values (steps of 1, 2 or 5 times a power of ten) covering [lo, hi].
struct axis {
  double lo, hi, step;
};
axis nice_axis(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

}  // namespace

std::string svg_plot(const plot_spec& spec) {
  const double inf = std::numeric_limits<double>::infinity();
  double x0 = inf, x1 = -inf, y0 = inf, y1 = -inf;
  for (const auto& s : spec.series) {
    if (s.xs.size() != s.ys.size())
      throw std::invalid_argument("svg_plot '" + spec.title + "': series '" + s.name + "' has " +
                                  std::to_string(s.xs.size()) + " xs but " +
                                  std::to_string(s.ys.size()) + " ys");
    for (std::size_t i = 0; i < s.xs.size(); ++i) {
      if (!std::isfinite(s.xs[i]) || !std::isfinite(s.ys[i])) continue;
      x0 = std::min(x0, s.xs[i]);
      x1 = std::max(x1, s.xs[i]);
      y0 = std::min(y0, s.ys[i]);
      y1 = std::max(y1, s.ys[i]);
    }
  }
  if (x0 == inf) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  const axis ax = nice_axis(x0, x1), ay = nice_axis(y0, y1);

  const double w = spec.width, h = spec.height;
  const double left = 70, right = w - 20, top = 40, bottom = h - 50;
  auto sx = [&](double x) { return left + (x - ax.lo) / (ax.hi - ax.lo) * (right - left); };
  auto sy = [&](double y) { return bottom - (y - ay.lo) / (ay.hi - ay.lo) * (bottom - top); };

  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(w) + "\" height=\"" + fmt(h) +
       "\" viewBox=\"0 0 " + fmt(w) + " " + fmt(h) + "\" font-family=\"sans-serif\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + fmt(w / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">" +
       xml_escape(spec.title) + "</text>\n";
  // Grid, ticks and tick labels. Tick count is bounded: nice_axis yields about 5 to 10 steps.
  o += "<g class=\"axes\" font-size=\"11\" fill=\"#444\">\n";
  for (double t = ax.lo; t <= ax.hi + ax.step * 1e-9; t += ax.step) {
    const double x = sx(t);
    const double v = std::abs(t) < ax.step * 1e-9 ? 0 : t;
    o += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(top) + "\" x2=\"" + fmt(x) + "\" y2=\"" +
         fmt(bottom + 5) + "\" stroke=\"#e5e5e5\"/>\n";
    o += "<text x=\"" + fmt(x) + "\" y=\"" + fmt(bottom + 18) + "\" text-anchor=\"middle\">" +
         fmt(v) + "</text>\n";
  }
  for (double t = ay.lo; t <= ay.hi + ay.step * 1e-9; t += ay.step) {
    const double y = sy(t);
    const double v = std::abs(t) < ay.step * 1e-9 ? 0 : t;
    o += "<line x1=\"" + fmt(left - 5) + "\" y1=\"" + fmt(y) + "\" x2=\"" + fmt(right) +
         "\" y2=\"" + fmt(y) + "\" stroke=\"#e5e5e5\"/>\n";
    o += "<text x=\"" + fmt(left - 8) + "\" y=\"" + fmt(y + 4) + "\" text-anchor=\"end\">" +
         fmt(v) + "</text>\n";
  }
  o += "<line x1=\"" + fmt(left) + "\" y1=\"" + fmt(bottom) + "\" x2=\"" + fmt(right) + "\" y2=\"" +
       fmt(bottom) + "\" stroke=\"black\"/>\n";
  o += "<line x1=\"" + fmt(left) + "\" y1=\"" + fmt(top) + "\" x2=\"" + fmt(left) + "\" y2=\"" +
       fmt(bottom) + "\" stroke=\"black\"/>\n";
  o += "</g>\n";
  o += "<text x=\"" + fmt((left + right) / 2) + "\" y=\"" + fmt(h - 12) +
       "\" text-anchor=\"middle\" font-size=\"13\">" + xml_escape(spec.x_label) + "</text>\n";
  o += "<text x=\"16\" y=\"" + fmt((top + bottom) / 2) +
       "\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 16 " +
       fmt((top + bottom) / 2) + ")\">" + xml_escape(spec.y_label) + "</text>\n";

  for (std::size_t k = 0; k < spec.series.size(); ++k) {
    const auto& s = spec.series[k];
    const std::string color = s.color.empty() ? palette[k % 8] : s.color;
    o += "<polyline class=\"series\" data-series=\"" + xml_escape(s.name) +
         "\" fill=\"none\" stroke-width=\"2\" stroke=\"" + xml_escape(color) + "\" points=\"";
    bool first = true;
    for (std::size_t i = 0; i < s.xs.size(); ++i) {
      if (!std::isfinite(s.xs[i]) || !std::isfinite(s.ys[i])) continue;
      if (!first) o += ' ';
      first = false;
      o += fmt(sx(s.xs[i]), "%.2f") + "," + fmt(sy(s.ys[i]), "%.2f");
    }
    o += "\"/>\n";
  }
  // Legend in the top-right corner of the plot area.
  o += "<g class=\"legend\" font-size=\"12\">\n";
  for (std::size_t k = 0; k < spec.series.size(); ++k) {
    const auto& s = spec.series[k];
    const std::string color = s.color.empty() ? palette[k % 8] : s.color;
    const double y = top + 14 + 16 * static_cast<double>(k);
    o += "<line x1=\"" + fmt(right - 150) + "\" y1=\"" + fmt(y - 4) + "\" x2=\"" +
         fmt(right - 130) + "\" y2=\"" + fmt(y - 4) + "\" stroke-width=\"2\" stroke=\"" +
         xml_escape(color) + "\"/>\n";
    o += "<text x=\"" + fmt(right - 124) + "\" y=\"" + fmt(y) + "\">" + xml_escape(s.name) +
         "</text>\n";
  }
  o += "</g>\n</svg>\n";
  return o;
}

void write_svg_plot(const std::string& path, const plot_spec& spec) {
  const std::string text = svg_plot(spec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("write_svg_plot: cannot open '" + tmp + "' for writing");
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("write_svg_plot: cannot write '" + tmp + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("write_svg_plot: cannot rename '" + tmp + "' to '" + path + "'");
  }
}

std::vector<std::string> write_curve_plots(const std::string& prefix,
                                           const std::vector<curve_point>& curve) {
  std::vector<double> t, train, test, acc, rate;
  for (const auto& p : curve) {
    t.push_back(p.seconds);
    train.push_back(p.train_loss);
    test.push_back(p.test_loss);
    acc.push_back(p.test_accuracy);
    rate.push_back(p.samples_per_s);
  }
  std::vector<std::string> paths{prefix + "-loss.svg", prefix + "-accuracy.svg",
                                 prefix + "-throughput.svg"};
  write_svg_plot(paths[0],
                 {"loss", "seconds", "loss", {{"train", t, train, ""}, {"test", t, test, ""}}});
  write_svg_plot(paths[1], {"test accuracy", "seconds", "accuracy", {{"test", t, acc, "#2ca02c"}}});
  write_svg_plot(paths[2],
                 {"throughput", "seconds", "samples / s", {{"samples/s", t, rate, "#9467bd"}}});
  return paths;
}

}  // namespace actrain::observe
