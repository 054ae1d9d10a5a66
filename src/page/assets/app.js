// armada's dashboard. Live: polls the coordinator's JSON API every two seconds. As a
// static report (`armada report`), reads the same views from window.ARMADA_REPORT and
// fetches nothing. Everything shown is set as text, never as HTML: sweep names,
// parameters and error messages come from users and workers.
"use strict";

const REPORT = window.ARMADA_REPORT || null;
const POLL_MS = 2000;
const ui = { sweep: null, metric: null, band: "se", sort: null, cell: null, job: null, final: null };

const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, cls) {
  const tr = el("tr", null, cls);
  for (const c of cells) {
    if (c instanceof Node) { const td = el("td"); td.appendChild(c); tr.appendChild(td); }
    else if (c && typeof c === "object") tr.appendChild(el("td", c.text, c.cls));
    else tr.appendChild(el("td", c));
  }
  return tr;
}

async function api(path) {
  const r = await fetch(path, { credentials: "same-origin", headers: { accept: "application/json" } });
  if (!r.ok) {
    let message = `${r.status} ${r.statusText}`;
    try { message = (await r.json()).error || message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return r.json();
}

function duration(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

function variant(name, params) { return params && params !== "{}" ? `${name} ${params}` : name; }

// `{a=1,b="x,y"}` as [["a", "1"], ["b", "\"x,y\""]]: commas inside quotes do not split.
// Result files store JSON, `{"a":1,"b":"x,y"}`: its names are unquoted first (values keep
// their text, so 3.0 stays 3.0).
function paramPairs(params) {
  const body = (params || "").replace(/"(\w+)":/g, "$1=").replace(/^\{|\}$/g, "");
  const pairs = [];
  let current = "", quoted = false;
  for (const c of body) {
    if (c === '"') quoted = !quoted;
    if (c === "," && !quoted) { pairs.push(current); current = ""; } else current += c;
  }
  if (current) pairs.push(current);
  return pairs.map((p) => { const i = p.indexOf("="); return [p.slice(0, i), p.slice(i + 1)]; });
}

// Short names for algorithm variants: a parameter with the same value in every variant of
// an algorithm tells them nothing apart, so only the others are shown (all on hover).
function shortNames(items) {
  const shared = {};
  for (const it of items) {
    const pairs = paramPairs(it.algorithm_params);
    const seen = shared[it.algorithm];
    if (!seen) { shared[it.algorithm] = new Map(pairs); continue; }
    const mine = new Map(pairs);
    for (const [k, v] of seen) if (mine.get(k) !== v) seen.delete(k);
    for (const k of mine.keys()) if (!seen.has(k)) seen.set(k, undefined);
  }
  return items.map((it) => {
    const keep = paramPairs(it.algorithm_params).filter(([k, v]) => shared[it.algorithm].get(k) !== v);
    return keep.length ? `${it.algorithm} {${keep.map(([k, v]) => `${k}=${v}`).join(",")}}` : it.algorithm;
  });
}

function bar(cls, done, failed, total) {
  const b = el("span", null, cls);
  const d = el("span", null, "done"), f = el("span", null, "failed");
  d.style.width = `${total ? (100 * done) / total : 0}%`;
  f.style.width = `${total ? (100 * failed) / total : 0}%`;
  b.append(d, f);
  return b;
}

// ---- the overview: sweeps and workers

function renderOverview(o) {
  // The coordinator's failing writes (a full disk...): what waits, until a write succeeds.
  const banner = $("write-troubles");
  banner.hidden = !o.write_troubles.length;
  banner.textContent = o.write_troubles.map((t) =>
    `Writes failing: ${t.place}: ${t.error} (${t.failures} failed writes over ${duration(t.seconds)}). ` +
    (t.place.startsWith("the store (") ? "Nothing is leased or recorded until a write succeeds; "
      : t.place.startsWith("the store's backups") ? "Nothing waits, but the newest backup grows older; "
      : "Its jobs are queued again until a write succeeds; ") + "armada resumes by itself.").join("\n");
  const body = $("sweeps").tBodies[0];
  body.textContent = "";
  for (const s of o.sweeps) {
    const link = el("a", s.id);
    link.href = `#sweep=${encodeURIComponent(s.id)}`;
    const tr = row([link, s.family, { text: s.state, cls: `state-${s.state}` },
      bar("mini-bar", s.done, s.failed + s.cancelled, s.n_jobs),
      { text: `${s.done} / ${s.n_jobs}`, cls: "num" }, { text: s.failed, cls: "num" },
      { text: s.jobs_per_second === null ? "–" : s.jobs_per_second.toFixed(2), cls: "num" },
      { text: s.state === "running" ? duration(s.eta_seconds) : "–", cls: "num" }]);
    tr.dataset.sweep = s.id;
    body.appendChild(tr);
  }
  if (!o.sweeps.length) body.appendChild(row(["no sweeps yet: `armada submit SWEEP`"]));
  const wbody = $("workers").tBodies[0];
  wbody.textContent = "";
  for (const w of o.workers) {
    wbody.appendChild(row([w.id, w.name, { text: w.slots || "?", cls: "num" }, { text: w.leased, cls: "num" },
      w.families.join(", "), `${w.idle_seconds.toFixed(1)} s ago`]));
  }
  const slots = o.workers.reduce((n, w) => n + w.slots, 0);
  $("workers-count").textContent =
    `${o.workers.length} live, ${slots} slots` + (o.workers_lost ? `, ${o.workers_lost} silent (not listed)` : "");
}

// ---- one sweep: progress, curves, final table, failures, jobs

function renderProgress(s) {
  $("sweep-title").textContent = `${s.id} (${s.family}, ${s.state})`;
  $("bar-done").style.width = `${s.n_jobs ? (100 * s.done) / s.n_jobs : 0}%`;
  $("bar-failed").style.width = `${s.n_jobs ? (100 * (s.failed + s.cancelled)) / s.n_jobs : 0}%`;
  const pace = s.jobs_per_second === null ? "" : `, ${s.jobs_per_second.toFixed(2)} jobs/s`;
  const eta = s.state === "running" && s.eta_seconds !== null ? `, about ${duration(s.eta_seconds)} left` : "";
  $("progress-text").textContent =
    `${s.done} / ${s.n_jobs} done, ${s.running} running${s.leased ? `, ${s.leased} leased ahead` : ""}, ${s.queued} queued, ${s.failed} failed${pace}${eta}`;
  $("progress-text").dataset.done = s.done;
}

function renderCells(v) {
  const what = { live: "live: cells still running show provisional statistics (no quantiles)",
    files: "from the summary files", none: "no job is done yet" }[v.source] || v.source;
  $("cells-text").textContent = `${v.n_exact} of ${v.n_cells} cells complete; ${what}`;
}

function renderMetricChoice(metrics, metric) {
  const select = $("metric");
  const have = Array.from(select.options).map((o) => o.value).join("\n");
  if (have !== metrics.join("\n")) {
    select.textContent = "";
    for (const m of metrics) select.appendChild(el("option", m));
  }
  select.value = metric || "";
}

function renderCurves(curves) {
  const box = $("curves");
  box.textContent = "";
  if (!curves) return;
  for (const panel of curves.panels) {
    const div = el("div", null, "panel");
    box.appendChild(div);
    const names = shortNames(panel.lines);
    const series = panel.lines.map((l, k) => ({
      name: names[k],
      x: l.step,
      y: l.mean,
      lo: ui.band === "se" ? l.mean.map((m, i) => (m === null || l.se[i] === null ? null : m - l.se[i]))
        : ui.band === "q" ? l.q10 : null,
      hi: ui.band === "se" ? l.mean.map((m, i) => (m === null || l.se[i] === null ? null : m + l.se[i]))
        : ui.band === "q" ? l.q90 : null,
    }));
    drawChart(div, { title: variant(panel.benchmark, panel.benchmark_params), xLabel: "step", yLabel: curves.metric, series });
    // Seeds behind the panel's last points: the test (and a curious reader) see it grow.
    div.dataset.seeds = panel.lines.reduce((n, l) => n + (l.n.length ? l.n[l.n.length - 1] : 0), 0);
  }
}

function renderFinal(table) {
  ui.final = table;
  const head = $("final").tHead, body = $("final").tBodies[0];
  head.textContent = "";
  body.textContent = "";
  if (!table) return;
  const short = shortNames(table.rows);
  const names = new Map(table.rows.map((r, k) => [r, short[k]]));
  const columns = [{ name: "benchmark", key: (r) => variant(r.benchmark, r.benchmark_params) },
    { name: "algorithm", key: (r) => names.get(r), title: (r) => variant(r.algorithm, r.algorithm_params) },
    { name: "step", key: (r) => r.step, num: true },
    { name: "n", key: (r) => r.n, num: true, text: (r) => r.n_failed ? `${r.n}/${r.n_jobs}, ${r.n_failed} failed` : r.n }]
    .concat(table.metrics.map((m, i) => ({ name: m, key: (r) => r.mean[i], num: true, metric: i })));
  const tr = el("tr");
  columns.forEach((c, i) => {
    const th = el("th", c.name);
    if (ui.sort && ui.sort.col === i) th.className = ui.sort.asc ? "sorted-asc" : "sorted-desc";
    th.onclick = () => {
      ui.sort = ui.sort && ui.sort.col === i ? { col: i, asc: !ui.sort.asc } : { col: i, asc: true };
      renderFinal(ui.final);
    };
    tr.appendChild(th);
  });
  head.appendChild(tr);
  const rows = table.rows.slice();
  if (ui.sort) {
    const key = columns[ui.sort.col].key, sign = ui.sort.asc ? 1 : -1;
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : x > y ? 1 : 0) * sign;
    });
  }
  for (const r of rows) {
    const cells = columns.map((c) => {
      if (c.text) return { text: c.text(r), cls: r.n_failed ? "num failed" : "num" };
      if (c.metric === undefined) return { text: c.key(r), cls: c.num ? "num" : "" };
      const m = r.mean[c.metric], se = r.se[c.metric];
      return { text: m === null ? "–" : `${formatNumber(m)} ± ${formatNumber(se)}`, cls: "num" };
    });
    const tr = row(cells, REPORT ? "" : "clickable");
    tr.children[1].title = columns[1].title(r);
    const cell = [r.benchmark, r.benchmark_params, r.algorithm, r.algorithm_params];
    if (ui.cell && ui.cell.join("\n") === cell.join("\n")) tr.classList.add("selected");
    if (!REPORT) tr.onclick = () => { ui.cell = cell; ui.job = null; showJobs(); renderFinal(ui.final); };
    body.appendChild(tr);
  }
}

// A resolving sweep's comparisons, the open ones first: `null` for any other sweep.
function renderComparisons(c) {
  $("comparisons-box").hidden = !c;
  const body = $("comparisons").tBodies[0];
  body.textContent = "";
  if (!c) return;
  const open = c.rows.filter((r) => r.verdict === "open").length;
  const more = c.total > c.rows.length ? `, ${c.rows.length} of ${c.total} shown` : "";
  $("comparisons-count").textContent = `(${open} open${more})`;
  for (const r of c.rows) {
    const interval = r.lower === null ? "–" : `[${formatNumber(r.lower)}, ${formatNumber(r.upper)}]`;
    body.appendChild(row([variant(r.benchmark, r.benchmark_params), variant(r.a, r.a_params), variant(r.b, r.b_params),
      { text: r.verdict, cls: `verdict-${r.verdict.replace(/[<>]/g, (m) => (m === "<" ? "lt" : "gt"))}` },
      { text: r.n, cls: "num" }, { text: formatNumber(r.mean_difference), cls: "num" }, { text: interval, cls: "num" }]));
  }
}

function renderFailures(detail) {
  const box = $("failures-box");
  box.hidden = detail.failures.length === 0;
  const body = $("failures").tBodies[0];
  body.textContent = "";
  for (const f of detail.failures) {
    body.appendChild(row([f.description, `${f.attempt}${f.final ? " (final)" : ""}`, { text: f.error, cls: "error" }]));
  }
  $("failures-count").textContent =
    `${detail.failures.length}${detail.failures_omitted ? ` listed, ${detail.failures_omitted} more` : ""}`;
}

async function showJobs() {
  if (!ui.cell) return;
  const [benchmark, benchmark_params, algorithm, algorithm_params] = ui.cell;
  const q = new URLSearchParams({ benchmark, benchmark_params, algorithm, algorithm_params });
  const { jobs } = await api(`/api/sweeps/${encodeURIComponent(ui.sweep)}/jobs?${q}`);
  $("jobs-box").hidden = false;
  $("jobs-title").textContent = `Jobs of ${variant(algorithm, algorithm_params)} on ${variant(benchmark, benchmark_params)}`;
  const body = $("jobs").tBodies[0];
  body.textContent = "";
  for (const j of jobs) {
    const tr = row([{ text: j.seed, cls: "num" }, j.state, { text: j.attempts, cls: "num" }, j.key], j.state === "done" ? "clickable" : "");
    if (j.key === ui.job) tr.classList.add("selected");
    if (j.state === "done") tr.onclick = () => { ui.job = j.key; showTrajectory(); showJobs(); };
    body.appendChild(tr);
  }
  if (!ui.job) $("trajectory").textContent = "";
}

async function showTrajectory() {
  const t = await api(`/api/sweeps/${encodeURIComponent(ui.sweep)}/jobs/${encodeURIComponent(ui.job)}`);
  const metric = t.columns.find(([name]) => name === ui.metric) || t.columns[0];
  const box = $("trajectory");
  if (!metric) { box.textContent = "this job has no metric columns"; return; }
  drawChart(box, { title: `job ${t.key}`, xLabel: "step", yLabel: metric[0],
    series: [{ name: metric[0], x: t.step, y: metric[1] }] });
  const p = t.provenance;
  if (p) {
    const line = document.createElement("p");
    line.className = "provenance";
    const family = p.family_digest ? `, family declaration ${p.family_digest}` : "";
    const processor = p.processor ? ` (${p.processor})` : '';
    line.textContent = `committed by ${p.worker} (${p.name}) on ${p.host}${processor}, running ${p.software}; attempt ${p.attempt_id}${family}`;
    box.appendChild(line);
  }
}

// ---- the loop

async function refreshSweep() {
  const id = encodeURIComponent(ui.sweep);
  const metric = ui.metric ? `?metric=${encodeURIComponent(ui.metric)}` : "";
  const [detail, curves, fin] = await Promise.all([api(`/api/sweeps/${id}`), api(`/api/sweeps/${id}/curves${metric}`), api(`/api/sweeps/${id}/final`)]);
  renderProgress(detail.sweep);
  renderFailures(detail);
  renderCells(curves);
  ui.metric = curves.metric;
  renderMetricChoice(curves.metrics, curves.metric);
  renderCurves(curves.curves);
  renderFinal(fin.final);
  renderComparisons(fin.comparisons);
}

function selectedSweep() {
  const m = /sweep=([^&]+)/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

let ticking = false;

async function tick() {
  // A slow coordinator must not pile requests up: one refresh at a time.
  if (ticking) return;
  ticking = true;
  try {
    const o = await api("/api/overview");
    renderOverview(o);
    ui.sweep = selectedSweep() || (o.sweeps.length === 1 ? o.sweeps[0].id : null);
    $("sweep").hidden = !ui.sweep;
    if (ui.sweep) await refreshSweep();
    $("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
    $("status").className = "muted";
  } catch (e) {
    $("status").textContent = `cannot reach the coordinator: ${e.message}`;
    $("status").className = "error";
  } finally {
    ticking = false;
  }
}

function renderReport() {
  for (const e of document.querySelectorAll(".live-only")) e.hidden = true;
  const r = REPORT;
  $("sweep").hidden = false;
  $("sweep-title").textContent = `${r.sweep} (${r.family})`;
  $("status").textContent = r.generated;
  renderCells(r.views);
  ui.metric = ui.metric || r.views.metrics[0];
  renderMetricChoice(r.views.metrics, ui.metric);
  renderCurves(r.views.curves[ui.metric]);
  renderFinal(r.views.final);
  renderComparisons(r.views.comparisons);
}

$("metric").onchange = (e) => { ui.metric = e.target.value; REPORT ? renderReport() : tick(); };
$("band").onchange = (e) => { ui.band = e.target.value; REPORT ? renderReport() : tick(); };
window.onhashchange = () => { ui.metric = null; ui.cell = null; ui.job = null; $("jobs-box").hidden = true; tick(); };

if (REPORT) {
  renderReport();
} else {
  tick();
  setInterval(tick, POLL_MS);
}
