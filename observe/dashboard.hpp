#pragma once
#include <string>

namespace actrain::observe {

/// The page GET / serves: self-contained HTML (inline CSS and JS, no external URLs) that polls
/// /status every 500 ms and draws live curves as inline SVG.
/// Stable ids, for tests and users' scripts:
///   svg#loss-plot (polylines #loss-plot-train, #loss-plot-test),
///   svg#accuracy-plot (#accuracy-plot-test), svg#throughput-plot (#throughput-plot-rate);
///   every polyline carries data-points="<number of points drawn>";
///   table#workers-table, table#shards-table, ul#stalls, div#summary, span#updated.
const std::string& dashboard_html();

}  // namespace actrain::observe
