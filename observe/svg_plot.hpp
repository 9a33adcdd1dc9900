#pragma once
#include <string>
#include <vector>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// One named line: ys[i] is drawn at xs[i]; pairs with a non-finite value are skipped.
struct plot_series {
  std::string name;
  std::vector<double> xs;
  std::vector<double> ys;
  std::string color;  ///< CSS colour; "" picks one from a fixed palette by position
};

/// A line plot: title, axis labels, several series with a legend.
struct plot_spec {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<plot_series> series;
  int width = 640;
  int height = 400;
};

/// The standalone SVG document for `spec` (axes with "nice" ticks and labels, one
/// <polyline class="series" data-series="NAME"> per series, a legend). Text is XML-escaped.
/// Throws std::invalid_argument when a series' xs and ys differ in length (naming the series).
std::string svg_plot(const plot_spec& spec);

/// Writes svg_plot(spec) to `path` atomically (temp file in the same folder, then rename), so a
/// reader never sees half a picture. Throws std::runtime_error naming the path on I/O failure.
void write_svg_plot(const std::string& path, const plot_spec& spec);

/// Writes a run's curves as `<prefix>-loss.svg` (train and test loss), `<prefix>-accuracy.svg`
/// and `<prefix>-throughput.svg` (samples/s), all against seconds; returns the paths written.
/// `prefix` is typically the metrics file path without its extension.
std::vector<std::string> write_curve_plots(const std::string& prefix,
                                           const std::vector<curve_point>& curve);

}  // namespace actrain::observe
