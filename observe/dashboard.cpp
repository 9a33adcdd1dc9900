#include "observe/dashboard.hpp"

namespace actrain::observe {
namespace {

// Kept in one literal so the page needs nothing but this server. The script only reads
// /status and writes text via textContent (never innerHTML), so names from the job cannot
// inject markup.
const char* const page = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>actrain</title>
<style>
body { font-family: sans-serif; margin: 16px; color: #222; background: #fafafa; }
h1 { font-size: 20px; margin: 0 0 8px 0; }
#summary span { margin-right: 18px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.plot { background: #fff; border: 1px solid #ddd; }
.plot text { font-size: 11px; fill: #444; }
.plot .title { font-size: 13px; font-weight: bold; fill: #222; }
.plot polyline { fill: none; stroke-width: 2; }
table { border-collapse: collapse; margin: 8px 0 16px 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; font-size: 13px; }
th { background: #eee; }
td:first-child, th:first-child { text-align: left; }
#stalls li { color: #b00; }
.stopped { color: #b00; }
</style>
</head>
<body>
<h1>actrain <span id="job"></span></h1>
<div id="summary"></div>
<div class="plots">
<svg id="loss-plot" class="plot" width="380" height="240" viewBox="0 0 380 240">
 <text class="title" x="190" y="16" text-anchor="middle">loss</text>
 <g class="axes"></g>
 <polyline id="loss-plot-train" stroke="#1f77b4" points="" data-points="0"></polyline>
 <polyline id="loss-plot-test" stroke="#d62728" points="" data-points="0"></polyline>
 <text x="300" y="34" style="fill:#1f77b4">train</text><text x="300" y="48" style="fill:#d62728">test</text>
</svg>
<svg id="accuracy-plot" class="plot" width="380" height="240" viewBox="0 0 380 240">
 <text class="title" x="190" y="16" text-anchor="middle">test accuracy</text>
 <g class="axes"></g>
 <polyline id="accuracy-plot-test" stroke="#2ca02c" points="" data-points="0"></polyline>
</svg>
<svg id="throughput-plot" class="plot" width="380" height="240" viewBox="0 0 380 240">
 <text class="title" x="190" y="16" text-anchor="middle">samples / s</text>
 <g class="axes"></g>
 <polyline id="throughput-plot-rate" stroke="#9467bd" points="" data-points="0"></polyline>
</svg>
</div>
<h2>Stalls</h2>
<ul id="stalls"><li>none</li></ul>
<h2>Workers</h2>
<table id="workers-table"><thead><tr><th>worker</th><th>node</th><th>step</th><th>samples</th>
<th>samples/s</th><th>loss</th><th>staleness</th><th>state</th><th>last report (s)</th></tr></thead>
<tbody></tbody></table>
<h2>Shards</h2>
<table id="shards-table"><thead><tr><th>shard</th><th>node</th><th>version</th><th>pushes</th>
<th>pulls</th><th>rejected</th><th>dropped stale</th><th>dropped late</th><th>mailbox</th></tr>
</thead><tbody></tbody></table>
<p>updated <span id="updated">never</span></p>
<script>
"use strict";
const NS = "http://www.w3.org/2000/svg";
const L = 50, R = 370, T = 28, B = 210;  // plot area inside the 380x240 view box

function fmt(v) {
  if (v === null || v === undefined || !isFinite(v)) return "-";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(a >= 100 ? 1 : 4);
}

// Durations as 42.5 s, 3:07 or 1:02:03.
function format_s(v) {
  if (v === null || v === undefined || !isFinite(v) || v < 0) return "-";
  if (v < 60) return v.toFixed(1) + " s";
  const t = Math.round(v), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
  const two = n => (n < 10 ? "0" : "") + n;
  return h > 0 ? h + ":" + two(m) + ":" + two(s) : m + ":" + two(s);
}

// Axis labels: three significant digits are enough to read a curve.
function tick(v) { return Number(v.toPrecision(3)).toString(); }

function svgText(g, x, y, s, anchor) {
  const t = document.createElementNS(NS, "text");
  t.setAttribute("x", x); t.setAttribute("y", y);
  t.setAttribute("text-anchor", anchor || "middle");
  t.textContent = s;
  g.appendChild(t);
}

function svgLine(g, x1, y1, x2, y2, color) {
  const l = document.createElementNS(NS, "line");
  l.setAttribute("x1", x1); l.setAttribute("y1", y1);
  l.setAttribute("x2", x2); l.setAttribute("y2", y2);
  l.setAttribute("stroke", color || "#888");
  g.appendChild(l);
}

// Draws series [{id, ys}] against xs into svg#plotId; skips null (not measured) points.
function drawPlot(plotId, xs, series) {
  const svg = document.getElementById(plotId);
  const pts = series.map(s => {
    const p = [];
    for (let i = 0; i < xs.length && i < s.ys.length; ++i)
      if (xs[i] !== null && s.ys[i] !== null && isFinite(xs[i]) && isFinite(s.ys[i]))
        p.push([xs[i], s.ys[i]]);
    return p;
  });
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const p of pts) for (const [x, y] of p) {
    x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
  }
  if (!isFinite(x0)) { x0 = 0; x1 = 1; y0 = 0; y1 = 1; }
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
  const sx = x => L + (x - x0) / (x1 - x0) * (R - L);
  const sy = y => B - (y - y0) / (y1 - y0) * (B - T);
  const g = svg.querySelector("g.axes");
  while (g.firstChild) g.removeChild(g.firstChild);
  svgLine(g, L, B, R, B); svgLine(g, L, T, L, B);
  for (let k = 0; k <= 4; ++k) {
    const xv = x0 + (x1 - x0) * k / 4, yv = y0 + (y1 - y0) * k / 4;
    svgLine(g, sx(xv), B, sx(xv), B + 4); svgText(g, sx(xv), B + 16, tick(xv));
    svgLine(g, L - 4, sy(yv), L, sy(yv)); svgText(g, L - 6, sy(yv) + 4, tick(yv), "end");
  }
  svgText(g, (L + R) / 2, 236, "seconds");
  series.forEach((s, i) => {
    const line = document.getElementById(s.id);
    line.setAttribute("points",
      pts[i].map(([x, y]) => sx(x).toFixed(1) + "," + sy(y).toFixed(1)).join(" "));
    line.setAttribute("data-points", String(pts[i].length));
  });
}

function fillTable(id, rows, cols) {
  const body = document.querySelector("#" + id + " tbody");
  while (body.firstChild) body.removeChild(body.firstChild);
  for (const r of rows) {
    const tr = document.createElement("tr");
    for (const c of cols) {
      const td = document.createElement("td");
      const v = r[c];
      td.textContent = typeof v === "number" ? fmt(v) : (v === null ? "-" : String(v));
      if (c === "state" && String(v).indexOf("computing") < 0) td.className = "stopped";
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function render(s) {
  document.getElementById("job").textContent = (s.job || "") + " (" + (s.mode || "") + ")";
  const sum = document.getElementById("summary");
  while (sum.firstChild) sum.removeChild(sum.firstChild);
  const items = [["epoch", (s.epoch) + " / " + (s.epochs)], ["step", fmt(s.step)],
    ["samples/s", fmt(s.samples_per_s)], ["train loss", fmt(s.train_loss)],
    ["test accuracy", fmt(s.test_accuracy)], ["elapsed", format_s(s.elapsed_s)],
    ["ETA", format_s(s.eta_s)], ["state", s.finished ? "finished" : "running"]];
  for (const [k, v] of items) {
    const sp = document.createElement("span");
    sp.textContent = k + ": " + v;
    sum.appendChild(sp);
  }
  const c = s.curve || {};
  const xs = c.seconds || [];
  drawPlot("loss-plot", xs, [{id: "loss-plot-train", ys: c.train_loss || []},
                             {id: "loss-plot-test", ys: c.test_loss || []}]);
  drawPlot("accuracy-plot", xs, [{id: "accuracy-plot-test", ys: c.test_accuracy || []}]);
  drawPlot("throughput-plot", xs, [{id: "throughput-plot-rate", ys: c.samples_per_s || []}]);
  const st = document.getElementById("stalls");
  while (st.firstChild) st.removeChild(st.firstChild);
  const stalls = (s.stalls && s.stalls.length) ? s.stalls : [];
  for (const line of stalls) {
    const li = document.createElement("li");
    li.textContent = line;
    st.appendChild(li);
  }
  if (!stalls.length) {
    const li = document.createElement("li");
    li.textContent = "none";
    li.style.color = "#484";
    st.appendChild(li);
  }
  fillTable("workers-table", s.workers || [], ["name", "node", "step", "samples", "samples_per_s",
            "busy", "loss", "last_staleness", "state", "seconds_since_report"]);
  fillTable("shards-table", s.shards || [], ["name", "node", "version", "pushes", "pulls",
            "rejected", "dropped_stale", "dropped_late", "mailbox_depth"]);
  document.getElementById("updated").textContent = new Date().toLocaleTimeString();
}

let busy = false;
function poll() {
  if (busy) return;
  busy = true;
  fetch("/status", {cache: "no-store"})
    .then(r => r.json()).then(render)
    .catch(e => { document.getElementById("updated").textContent = "error: " + e; })
    .finally(() => { busy = false; });
}
poll();
setInterval(poll, 500);
</script>
</body>
</html>
)HTML";

}  // namespace

const std::string& dashboard_html() {
  static const std::string html(page);
  return html;
}

}  // namespace actrain::observe
