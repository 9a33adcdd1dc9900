#pragma once
#include <string>
#include <vector>

#include <actrain/run_state.hpp>

namespace actrain::observe {

/// Renders a snapshot in the Prometheus text exposition format 0.0.4 (what GET /metrics
/// serves). Every family has # HELP and # TYPE lines; names start with "actrain_"; per-entity
/// series carry worker / shard / node labels (values escaped); the staleness histogram is a
/// real Prometheus histogram (cumulative _bucket{le}, +Inf, _sum, _count).
std::string prometheus_text(const run_snapshot& s);

/// Escapes a label value: backslash, double quote and newline (format 0.0.4).
std::string prometheus_escape_label(const std::string& value);

/// Formats a sample value: shortest round-trip decimal, "NaN", "+Inf" or "-Inf".
std::string prometheus_number(double v);

/// Upper bounds (le) of the staleness histogram buckets, before +Inf.
const std::vector<long long>& staleness_buckets();

}  // namespace actrain::observe
