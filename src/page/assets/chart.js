// armada's line charts: plain SVG, no library. One chart is a set of series, each a line
// (x, y) with an optional band (lo, hi) drawn beneath it. Missing values (null) break the
// line. Shared by the live dashboard and the static report.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
  "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173"];

function svgEl(name, attrs, parent) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (parent) parent.appendChild(el);
  return el;
}

// About `count` round tick values covering [lo, hi].
function niceTicks(lo, hi, count) {
  if (!(hi > lo)) { const d = Math.abs(lo) || 1; lo -= d / 2; hi += d / 2; }
  const raw = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return { lo: Math.min(lo, ticks[0]), hi: Math.max(hi, ticks[ticks.length - 1]), ticks };
}

function formatNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

// Draw `spec` into `container` (emptied first). spec: {title, xLabel, yLabel, series:
// [{name, x: [], y: [], lo: [], hi: []}]}. Returns the <svg>.
function drawChart(container, spec) {
  container.textContent = "";
  const W = 460, H = 280, M = { l: 58, r: 12, t: 26, b: 38 };
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" }, container);
  svgEl("title", {}, svg).textContent = spec.title || "";
  let xs = [], ys = [];
  for (const s of spec.series) {
    s.x.forEach((x, i) => {
      xs.push(x);
      for (const v of [s.y[i], s.lo && s.lo[i], s.hi && s.hi[i]]) if (v !== null && v !== undefined && isFinite(v)) ys.push(v);
    });
  }
  if (!xs.length || !ys.length) {
    svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, svg).textContent = "no data yet";
    return svg;
  }
  const xt = niceTicks(Math.min(...xs), Math.max(...xs), 5);
  const yt = niceTicks(Math.min(...ys), Math.max(...ys), 5);
  const px = (x) => M.l + ((x - xt.lo) / (xt.hi - xt.lo || 1)) * (W - M.l - M.r);
  const py = (y) => H - M.b - ((y - yt.lo) / (yt.hi - yt.lo || 1)) * (H - M.t - M.b);
  svgEl("text", { x: M.l, y: 16, class: "chart-title" }, svg).textContent = spec.title || "";
  const axes = svgEl("g", { class: "axes" }, svg);
  for (const t of yt.ticks) {
    svgEl("line", { x1: M.l, x2: W - M.r, y1: py(t), y2: py(t), class: "grid" }, axes);
    svgEl("text", { x: M.l - 6, y: py(t) + 4, "text-anchor": "end" }, axes).textContent = formatNumber(t);
  }
  for (const t of xt.ticks) {
    svgEl("text", { x: px(t), y: H - M.b + 16, "text-anchor": "middle" }, axes).textContent = formatNumber(t);
  }
  svgEl("text", { x: (M.l + W - M.r) / 2, y: H - 4, "text-anchor": "middle", class: "label" }, axes).textContent = spec.xLabel || "";
  svgEl("text", { x: 12, y: (M.t + H - M.b) / 2, "text-anchor": "middle", class: "label",
    transform: `rotate(-90 12 ${(M.t + H - M.b) / 2})` }, axes).textContent = spec.yLabel || "";
  spec.series.forEach((s, k) => {
    const color = PALETTE[k % PALETTE.length];
    const g = svgEl("g", { class: "series", "data-name": s.name }, svg);
    svgEl("title", {}, g).textContent = s.name;
    if (s.lo && s.hi) {
      // The band: one polygon per run of points where both bounds are present.
      let run = [];
      const flush = () => {
        if (run.length > 1) {
          const top = run.map((i) => `${px(s.x[i])},${py(s.hi[i])}`);
          const bottom = run.slice().reverse().map((i) => `${px(s.x[i])},${py(s.lo[i])}`);
          svgEl("polygon", { points: top.concat(bottom).join(" "), fill: color, class: "band" }, g);
        }
        run = [];
      };
      s.x.forEach((_, i) => (s.lo[i] !== null && s.hi[i] !== null && isFinite(s.lo[i]) && isFinite(s.hi[i]) ? run.push(i) : flush()));
      flush();
    }
    let d = "", pen = false, points = 0;
    s.x.forEach((x, i) => {
      const y = s.y[i];
      if (y === null || y === undefined || !isFinite(y)) { pen = false; return; }
      d += `${pen ? "L" : "M"}${px(x).toFixed(1)},${py(y).toFixed(1)}`;
      pen = true;
      points += 1;
    });
    svgEl("path", { d, stroke: color, class: "line", "data-points": points }, g);
  });
  const legend = document.createElement("div");
  legend.className = "legend";
  spec.series.forEach((s, k) => {
    const item = document.createElement("span");
    item.innerHTML = `<i style="background:${PALETTE[k % PALETTE.length]}"></i>`;
    item.appendChild(document.createTextNode(s.name));
    legend.appendChild(item);
  });
  container.appendChild(legend);
  return svg;
}
