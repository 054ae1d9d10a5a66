//! The dashboard: a coordinator's sweeps in a browser, and its Prometheus metrics, over
//! HTTP/1.1 on a port of its own (`armada serve --dashboard`, and `armada run`'s loopback
//! one).
//!
//! The page ([`crate::page`]) polls a small JSON API
//! answered from the scheduler's state and the live summaries ([`crate::coordinator::durable::summarizer`]),
//! never from the trajectories (one job's rows are read only when its trajectory is asked
//! for). A sweep's curves and final table are computed once per change of the sweep and
//! shared by every viewer. The same token as the gRPC services guards everything.
//!
//! Routes: `/` (the page), `/assets/*`, `/metrics` (Prometheus text), and under `/api/`:
//! `overview` (sweeps with their pace, workers), `sweeps/{id}` (status and failures),
//! `sweeps/{id}/curves?metric=M`, `sweeps/{id}/final`, `sweeps/{id}/jobs?benchmark=..`
//! (a cell's jobs) and `sweeps/{id}/jobs/{key}` (one job's trajectory).

pub mod progress;
pub mod prometheus;
pub mod tls;

use crate::coordinator::durable::summarizer::{SweepSummaries, Written};
use crate::coordinator::state::replies::SummaryInputs;
use crate::coordinator::state::replies::{CommandError, ErrorKind, JobFilter, SweepState, SweepStatus, WorkerInfo};
use crate::coordinator::state::sweeps::FailurePage;
use crate::coordinator::surface::access::{DashboardPart, Tokens};
use crate::coordinator::SchedulerHandle;
use crate::page::{views, APP_JS, CHART_JS, INDEX_HTML, STYLE_CSS};
use crate::results;
use armada_proto::ids::SweepId;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use progress::Progress;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A sweep's tables are recomputed at most this often while it runs, however many pages
/// poll them.
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(1);
/// Jobs listed for one cell at most.
const CELL_JOBS_LIMIT: usize = 1_000;

/// The dashboard's state, shared by its handlers.
pub struct Dashboard {
    scheduler: SchedulerHandle,
    /// The coordinator's data directory (for the store's size).
    data: PathBuf,
    /// The coordinator's tokens: the same roles as gRPC's open the dashboard.
    tokens: Arc<Tokens>,
    /// The cookie that carries the token: named after the port, since a browser shares
    /// cookies between the ports of one host.
    cookie: String,
    progress: Mutex<Progress>,
    views: Mutex<HashMap<String, Arc<SweepViews>>>,
}

/// What the page shows of a sweep's results, computed once per change, and encoded then
/// too (on the blocking pool): a poll only copies bytes.
struct SweepViews {
    /// `live` (some cells provisional), `files` (the summary files) or `none` (no job done).
    source: &'static str,
    n_cells: u32,
    n_exact: u32,
    metrics: Vec<String>,
    /// The final table and each metric's curves, as JSON.
    final_json: String,
    curves_json: BTreeMap<String, String>,
    /// Where the sweep's files are.
    sweep_dir: std::path::PathBuf,
    stamp: Stamp,
    made: Instant,
}

impl SweepViews {
    /// `{"source":...,"n_cells":...,"n_exact":..., <rest>}` with `rest` already JSON.
    fn reply(&self, rest: &[(&str, &str)]) -> Response {
        let mut body =
            serde_json::json!({ "source": self.source, "n_cells": self.n_cells, "n_exact": self.n_exact }).to_string();
        body.pop();
        for (key, json) in rest {
            body += &format!(",{}:{json}", serde_json::Value::from(*key));
        }
        body.push('}');
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

/// What identifies a state of a sweep's summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    n_done: u32,
    n_failed: u32,
    finished: bool,
    n_exact: usize,
    /// The summary files are written (or there is nothing live to wait for).
    written: bool,
}

/// Serve the dashboard on `listener` until `shutdown` resolves, over TLS with `tls`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    scheduler: SchedulerHandle,
    data: PathBuf,
    tokens: Arc<Tokens>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let dashboard = Arc::new(Dashboard {
        scheduler,
        data,
        tokens,
        cookie: format!("armada_token_{port}"),
        progress: Mutex::default(),
        views: Mutex::default(),
    });
    let sampler = tokio::spawn(sample_progress(dashboard.clone()));
    let app = router(dashboard);
    let served = match tls {
        Some(acceptor) => tls::serve(listener, acceptor, app, shutdown).await,
        None => axum::serve(listener, app).with_graceful_shutdown(shutdown).await,
    };
    sampler.abort();
    served
}

/// The routes, behind the token.
pub fn router(dashboard: Arc<Dashboard>) -> Router {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/assets/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/assets/chart.js", get(|| async { asset("text/javascript; charset=utf-8", CHART_JS) }))
        .route("/assets/style.css", get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }))
        .route("/metrics", get(metrics))
        .route("/api/overview", get(overview))
        .route("/api/sweeps/{id}", get(sweep))
        .route("/api/sweeps/{id}/curves", get(curves))
        .route("/api/sweeps/{id}/final", get(final_table))
        .route("/api/sweeps/{id}/jobs", get(cell_jobs))
        .route("/api/sweeps/{id}/jobs/{key}", get(trajectory))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .layer(middleware::from_fn_with_state(dashboard.clone(), require_token))
        .with_state(dashboard)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// A token whose role opens what is asked for (`Role::opens`), whenever any token is
/// configured: `authorization: Bearer <token>` (scripts, Prometheus), the dashboard's cookie
/// (the page's own requests), or `?token=<token>` in the address that `armada run` prints,
/// which sets the cookie and redirects to the address without it. A known token of another
/// role is FORBIDDEN, naming the roles that would do; none, or an unknown one, UNAUTHORIZED.
async fn require_token(State(d): State<Arc<Dashboard>>, request: Request, next: Next) -> Response {
    if d.tokens.is_open() {
        return next.run(request).await;
    }
    let part = if request.uri().path() == "/metrics" { DashboardPart::Metrics } else { DashboardPart::Pages };
    let headers = request.headers();
    let bearer =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let presented = bearer.map(str::to_owned).or_else(|| cookie(headers, &d.cookie));
    if let Some(entry) = presented.as_deref().and_then(|t| d.tokens.entry(t)) {
        if entry.role.opens(part) {
            return next.run(request).await;
        }
        let needs = match part {
            DashboardPart::Pages => "the dashboard opens with an admin, viewer or client token",
            DashboardPart::Metrics => "/metrics opens with an admin or scrape token",
        };
        return (StatusCode::FORBIDDEN, format!("this token's role does not open this: {needs}\n")).into_response();
    }
    let query: Vec<(String, String)> =
        request.uri().query().and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default();
    let from_query = query.iter().find(|(k, _)| k == "token").and_then(|(_, v)| d.tokens.entry(v).map(|e| (v, e)));
    if let Some((expected, _)) = from_query.filter(|(_, e)| e.role.opens(DashboardPart::Pages)) {
        let rest: Vec<&(String, String)> = query.iter().filter(|(k, _)| k != "token").collect();
        let mut location = request.uri().path().to_string();
        if !rest.is_empty() {
            location.push('?');
            location.push_str(&serde_urlencoded::to_string(rest).unwrap_or_default());
        }
        let set_cookie = format!("{}={expected}; Path=/; HttpOnly; SameSite=Strict", d.cookie);
        let mut response = StatusCode::SEE_OTHER.into_response();
        if let (Ok(location), Ok(cookie)) = (HeaderValue::from_str(&location), HeaderValue::from_str(&set_cookie)) {
            response.headers_mut().insert(header::LOCATION, location);
            response.headers_mut().insert(header::SET_COOKIE, cookie);
        }
        return response;
    }
    let message = "missing or wrong token: open the address armada printed (it carries ?token=...), \
                   or send `authorization: Bearer <token>`\n";
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], message).into_response()
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|c| {
        let (k, v) = c.trim().split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// An API error: the status and a JSON body `{"error": "..."}`.
struct ApiError(StatusCode, String);

impl From<CommandError> for ApiError {
    fn from(e: CommandError) -> Self {
        let status = match e.kind() {
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::InvalidArgument => StatusCode::BAD_REQUEST,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::PermissionDenied | ErrorKind::FailedPrecondition | ErrorKind::Internal => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        ApiError(status, e.message().to_string())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, json_body(&serde_json::json!({ "error": self.1 }))).into_response()
    }
}

fn json_body(value: &impl Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], Body::from(bytes)).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("encoding: {e}")).into_response(),
    }
}

/// Run blocking work (Parquet, polars) off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> anyhow::Result<T> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(Into::into)
}

/// Sample every sweep's settled count, for throughput and ETA.
async fn sample_progress(d: Arc<Dashboard>) {
    let mut tick = tokio::time::interval(progress::SAMPLE_EVERY);
    loop {
        tick.tick().await;
        let Ok(sweeps) = d.scheduler.list().await else { continue };
        let now = Instant::now();
        let mut progress = d.progress.lock().unwrap_or_else(|e| e.into_inner());
        for s in &sweeps {
            progress.sample(&s.sweep_id, u64::from(s.n_done + s.n_failed + s.n_cancelled), now);
        }
        let ids: Vec<&str> = sweeps.iter().map(|s| s.sweep_id.as_str()).collect();
        progress.retain(&ids);
        // A deleted sweep's views go with it.
        d.views.lock().unwrap_or_else(|e| e.into_inner()).retain(|id, _| ids.contains(&id.as_str()));
    }
}

#[derive(Serialize)]
struct SweepSummaryView {
    id: String,
    family: String,
    state: &'static str,
    n_jobs: u32,
    queued: u32,
    running: u32,
    leased: u32,
    done: u32,
    failed: u32,
    cancelled: u32,
    jobs_per_second: Option<f64>,
    eta_seconds: Option<f64>,
}

impl SweepSummaryView {
    fn of(s: &SweepStatus, progress: &Progress) -> Self {
        let pace = progress.pace(&s.sweep_id, u64::from(s.n_queued + s.n_running + s.n_leased));
        SweepSummaryView {
            id: s.sweep_id.to_string(),
            family: s.family.clone(),
            state: s.state.as_str(),
            n_jobs: s.n_jobs,
            queued: s.n_queued,
            running: s.n_running,
            leased: s.n_leased,
            done: s.n_done,
            failed: s.n_failed,
            cancelled: s.n_cancelled,
            jobs_per_second: pace.jobs_per_second,
            eta_seconds: if s.state == SweepState::Running { pace.eta_seconds } else { None },
        }
    }
}

#[derive(Serialize)]
struct WorkerView {
    id: String,
    name: String,
    families: Vec<String>,
    slots: u32,
    leased: u32,
    idle_seconds: f64,
    alive: bool,
}

impl From<WorkerInfo> for WorkerView {
    fn from(w: WorkerInfo) -> Self {
        WorkerView {
            id: w.id,
            name: w.name,
            families: w.families,
            slots: w.slots,
            leased: w.leased,
            idle_seconds: w.idle.as_secs_f64(),
            alive: w.alive,
        }
    }
}

async fn overview(State(d): State<Arc<Dashboard>>) -> Result<Response, ApiError> {
    let sweeps = d.scheduler.list().await?;
    let workers = d.scheduler.workers().await?;
    let sweeps: Vec<SweepSummaryView> = {
        let progress = d.progress.lock().unwrap_or_else(|e| e.into_inner());
        sweeps.iter().map(|s| SweepSummaryView::of(s, &progress)).collect()
    };
    // Workers that went silent long ago are counted, not listed: a coordinator that has
    // seen thousands of Slurm tasks come and go would list them all.
    let n_lost = workers.iter().filter(|w| !w.alive).count();
    let workers: Vec<WorkerView> = workers.into_iter().filter(|w| w.alive).map(WorkerView::from).collect();
    let now = std::time::SystemTime::now();
    let write_troubles: Vec<_> = d
        .scheduler
        .metrics()
        .writes
        .current()
        .into_iter()
        .map(|t| {
            serde_json::json!({
                "place": t.place.to_string(), "error": t.error, "failures": t.failures,
                "seconds": now.duration_since(t.since).map_or(0.0, |d| d.as_secs_f64()),
            })
        })
        .collect();
    Ok(json_body(&serde_json::json!({
        "sweeps": sweeps, "workers": workers, "workers_lost": n_lost, "write_troubles": write_troubles,
    })))
}

async fn sweep(State(d): State<Arc<Dashboard>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let sweep = id.clone();
    let failures = FailurePage::default();
    let status = d.scheduler.status(SweepId::from(sweep), failures).await?;
    let progress = SweepSummaryView::of(&status, &d.progress.lock().unwrap_or_else(|e| e.into_inner()));
    let failures: Vec<_> = status
        .failures
        .iter()
        .map(|f| {
            serde_json::json!({
                "key": f.job_key, "description": f.description, "error": f.error,
                "attempt": f.attempt, "final": f.is_final,
            })
        })
        .collect();
    Ok(json_body(&serde_json::json!({
        "sweep": progress,
        "results_dir": status.results_dir,
        "failures": failures,
        "failures_omitted": status.n_failures_omitted,
    })))
}

#[derive(Deserialize)]
struct MetricQuery {
    metric: Option<String>,
}

async fn curves(
    State(d): State<Arc<Dashboard>>,
    Path(id): Path<String>,
    Query(q): Query<MetricQuery>,
) -> Result<Response, ApiError> {
    let v = d.views_of(&id).await?;
    let metric = match q.metric {
        Some(m) if v.source != "none" && !v.metrics.contains(&m) => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("metric: `{m}` is not a float metric of sweep `{id}`; it has {}", v.metrics.join(", ")),
            ))
        }
        Some(m) => Some(m),
        None => v.metrics.first().cloned(),
    };
    let curves = metric.as_ref().and_then(|m| v.curves_json.get(m)).map_or("null", String::as_str);
    let (metrics, metric) =
        (serde_json::Value::from(v.metrics.clone()).to_string(), serde_json::json!(metric).to_string());
    Ok(v.reply(&[("metrics", &metrics), ("metric", &metric), ("curves", curves)]))
}

/// The final table, and a resolving sweep's comparisons (read afresh: its rounds rewrite
/// them when a round is judged, which no count of jobs marks).
async fn final_table(State(d): State<Arc<Dashboard>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let v = d.views_of(&id).await?;
    let dir = v.sweep_dir.clone();
    let comparisons = blocking(move || {
        let found = views::comparisons_of(&dir)?;
        Ok(serde_json::to_string(&found.map(|(rows, total)| serde_json::json!({ "rows": rows, "total": total })))?)
    })
    .await?;
    Ok(v.reply(&[("final", &v.final_json), ("comparisons", &comparisons)]))
}

#[derive(Deserialize)]
struct CellQuery {
    benchmark: Option<String>,
    benchmark_params: Option<String>,
    algorithm: Option<String>,
    algorithm_params: Option<String>,
}

async fn cell_jobs(
    State(d): State<Arc<Dashboard>>,
    Path(id): Path<String>,
    Query(q): Query<CellQuery>,
) -> Result<Response, ApiError> {
    let filter = JobFilter {
        benchmark: q.benchmark,
        benchmark_params: q.benchmark_params,
        algorithm: q.algorithm,
        algorithm_params: q.algorithm_params,
    };
    let jobs = d.scheduler.jobs(SweepId::from(id), filter, CELL_JOBS_LIMIT).await?;
    Ok(json_body(&serde_json::json!({ "jobs": jobs, "limit": CELL_JOBS_LIMIT })))
}

async fn trajectory(
    State(d): State<Arc<Dashboard>>,
    Path((id, key)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let (sweep, job) = (id.clone(), key.clone());
    let part = d.scheduler.part_of(SweepId::from(sweep), job).await?;
    let Some(part) = part else {
        return Err(ApiError(StatusCode::NOT_FOUND, format!("job {key} of sweep `{id}` has no trajectory (not done)")));
    };
    let trajectory = blocking(move || {
        let index = results::read_index(&part)?;
        let Some(rows) = index.iter().find(|j| j.key == key) else {
            anyhow::bail!("{} does not hold job {key}", part.display());
        };
        // Only the rows shown are kept, read a piece at a time: a job may be 10^8 steps.
        let shown = results::read_rows_at(rows, &views::thin(rows.rows, views::TRAJECTORY_POINTS))?;
        let mut trajectory = views::trajectory(&key, &shown, views::TRAJECTORY_POINTS)?;
        trajectory.provenance = results::read_provenance(&part)?.remove(&key);
        Ok(trajectory)
    })
    .await?;
    Ok(json_body(&trajectory))
}

async fn metrics(State(d): State<Arc<Dashboard>>) -> Result<Response, ApiError> {
    let sweeps = d.scheduler.list().await?;
    let workers = d.scheduler.workers().await?;
    let mut gauges = prometheus::Gauges::default();
    for s in &sweeps {
        let by_state = [s.n_queued, s.n_leased, s.n_running, s.n_done, s.n_failed, s.n_cancelled];
        for (total, n) in gauges.jobs.iter_mut().zip(by_state) {
            *total += u64::from(n);
        }
        gauges.sweeps[s.state as usize] += 1;
    }
    for w in &workers {
        gauges.leases += u64::from(w.leased);
        if w.alive {
            gauges.workers_alive += 1;
            gauges.slots += u64::from(w.slots);
        } else {
            gauges.workers_lost += 1;
        }
    }
    gauges.store_bytes = crate::data_dir::DataDir(&d.data).store_bytes();
    let page = prometheus::render(&gauges, d.scheduler.metrics());
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], page).into_response())
}

impl Dashboard {
    /// The sweep's views, computed again only when its summaries changed (and at most every
    /// [`REFRESH_AT_MOST_EVERY`] while it runs).
    async fn views_of(&self, id: &str) -> Result<Arc<SweepViews>, ApiError> {
        let sweep = id.to_string();
        let inputs = self.scheduler.summary_inputs(SweepId::from(sweep), false).await?;
        let entry = self.scheduler.live_summaries(id);
        let n_exact = entry.as_ref().map_or(0, |e| e.lock().progress().0);
        let written = entry.as_ref().is_none_or(|e| e.state() != Written::Pending);
        let stamp =
            Stamp { n_done: inputs.n_done, n_failed: inputs.n_failed, finished: inputs.finished, n_exact, written };
        let cached = self.views.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
        if let Some(v) = cached {
            if v.stamp == stamp || (!stamp.written && v.made.elapsed() < REFRESH_AT_MOST_EVERY) {
                return Ok(v);
            }
        }
        let views = Arc::new(self.compute_views(entry, &inputs, stamp).await?);
        self.views.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string(), views.clone());
        Ok(views)
    }

    /// From the live summaries while the sweep's files are not written (even once it has
    /// finished: a page does not wait for the last cells' exact rows), then from the files.
    async fn compute_views(
        &self,
        entry: Option<Arc<SweepSummaries>>,
        inputs: &SummaryInputs,
        stamp: Stamp,
    ) -> Result<SweepViews, ApiError> {
        let n_cells = inputs.n_cells;
        let (source, n_exact, frames) = match entry.as_ref().map(|e| e.state()) {
            _ if inputs.n_done == 0 => ("none", 0, None),
            Some(Written::Pending) => {
                let entry = entry.expect("matched");
                let live = blocking(move || {
                    let live = entry.lock();
                    Ok((live.progress().0 as u32, live.tables()?))
                })
                .await?;
                match live {
                    (n_exact, Some(frames)) => ("live", n_exact, Some(frames)),
                    (n_exact, None) => ("none", n_exact, None),
                }
            }
            Some(Written::Done(Ok(false))) => ("none", n_cells, None),
            Some(Written::Done(Err(e))) => {
                return Err(ApiError(StatusCode::INTERNAL_SERVER_ERROR, format!("summarizing the sweep: {e}")))
            }
            // Written, by this coordinator or before it started: read a piece at a time.
            Some(Written::Done(Ok(true))) | None => ("files", n_cells, None),
        };
        let (headline, dir) = (inputs.headline, inputs.sweep_dir.clone());
        let sweep_dir = dir.clone();
        let (metrics, final_json, curves_json) = blocking(move || {
            let tables = match frames {
                Some((summary, last)) => views::sweep_tables(&summary, &last, headline)?,
                None if source == "files" => views::sweep_tables_of(&dir, headline)?,
                None => views::SweepTables::default(),
            };
            let mut curves = BTreeMap::new();
            for (metric, c) in &tables.curves {
                curves.insert(metric.clone(), serde_json::to_string(c)?);
            }
            Ok((tables.metrics, serde_json::to_string(&tables.final_table)?, curves))
        })
        .await?;
        Ok(SweepViews {
            source,
            n_cells,
            n_exact,
            metrics,
            final_json,
            curves_json,
            sweep_dir,
            stamp,
            made: Instant::now(),
        })
    }
}
