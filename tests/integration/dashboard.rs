//! The dashboard and `/metrics` of a real coordinator with a real worker on 127.0.0.1: the
//! token guards every route; the JSON views and the Prometheus counters agree with the
//! trajectories themselves; bad requests get a precise error and the coordinator keeps
//! serving; `armada report` writes the same tables into a self-contained page. A headless
//! Chromium (`tests/support/dashboard_browser.js`) watches progress and curves update
//! while jobs commit.

use crate::common;

use common::cluster::{client_env, serve, worker, write, Coordinator};
use common::{armada, jobs, text, wait_until};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TOKEN: &str = "dash-token";

/// A plain HTTP/1.1 GET: the status, the headers (lower-cased names) and the body.
fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, BTreeMap<String, String>, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request += &format!("{k}: {v}\r\n");
    }
    request += "\r\n";
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect::<BTreeMap<_, _>>();
    let body =
        if headers.get("transfer-encoding").is_some_and(|t| t == "chunked") { unchunk(body) } else { body.into() };
    (status, headers, body)
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

const BEARER: (&str, &str) = ("authorization", "Bearer dash-token");

/// Start a worker of two slots on `coord` and submit the sweep `body` (named `name`).
fn submit_to_a_worker(coord: &Coordinator, dir: &Path, name: &str, body: &str) -> common::Proc {
    let sweep = write(dir, &format!("{name}.toml"), body);
    let worker = worker(&coord.url, 2, &dir.join("w.log"), &[("ARMADA_TOKEN", TOKEN)]);
    let submitted = client_env(&["submit", sweep.to_str().unwrap()], &coord.url, 30, &[("ARMADA_TOKEN", TOKEN)]);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    worker
}

fn api(d: &Coordinator, path: &str) -> Value {
    let (status, _, body) = get(&d.dashboard, path, &[BEARER]);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// The sample `name` (with its labels) of a Prometheus text page.
fn sample(page: &str, name: &str) -> f64 {
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.rsplit_once(' ').filter(|(n, _)| *n == name).map(|(_, v)| v.parse().unwrap()))
        .unwrap_or_else(|| panic!("no sample {name} in\n{page}"))
}

const SWEEP: &str = r#"
name = "dash"
family = "testkit"
seeds = 4
horizon = 9
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "echo"
[[algorithms]]
name = "slow"
params = { ms = 1 }
[[algorithms]]
name = "panic"
params = { at = 3 }
"#;

#[test]
fn the_dashboard_serves_progress_curves_jobs_and_metrics_behind_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--token", TOKEN, "--max-attempts", "2"]);

    // Nothing without the token, not even the page.
    for path in ["/", "/api/overview", "/metrics", "/assets/app.js", "/api/sweeps/dash"] {
        let (status, headers, body) = get(&coord.dashboard, path, &[]);
        assert_eq!(status, 401, "{path}");
        assert!(body.contains("token"), "{body}");
        assert_eq!(headers.get("www-authenticate").map(String::as_str), Some("Bearer"));
        let wrong = get(&coord.dashboard, path, &[("authorization", "Bearer dash-tokem")]);
        assert_eq!(wrong.0, 401, "{path} with a wrong token");
    }
    // The address with ?token= swaps it for a cookie and drops it from the address.
    let (status, headers, _) = get(&coord.dashboard, "/?token=dash-token", &[]);
    assert_eq!(status, 303);
    assert_eq!(headers["location"], "/");
    let cookie = headers["set-cookie"].split(';').next().unwrap().to_string();
    assert_eq!(cookie, format!("armada_token_{}={TOKEN}", coord.dashboard.rsplit(':').next().unwrap()));
    assert!(headers["set-cookie"].contains("HttpOnly") && headers["set-cookie"].contains("SameSite=Strict"));
    let (status, headers, page) = get(&coord.dashboard, "/", &[("cookie", &cookie)]);
    assert_eq!(status, 200);
    assert!(headers["content-type"].starts_with("text/html"));
    assert!(page.contains("/assets/app.js"));
    assert!(!page.contains("http://") && !page.contains("https://"), "the page loads nothing from elsewhere");
    assert_eq!(get(&coord.dashboard, "/?token=nope", &[]).0, 401);

    let _w = submit_to_a_worker(&coord, tmp.path(), "dash", SWEEP);
    wait_until(60, "the sweep to finish", || api(&coord, "/api/overview")["sweeps"][0]["state"] == "finished");

    let overview = api(&coord, "/api/overview");
    let s = &overview["sweeps"][0];
    assert_eq!((s["id"].as_str(), s["n_jobs"].as_u64(), s["done"].as_u64()), (Some("dash"), Some(12), Some(8)));
    assert_eq!(s["failed"], 4);
    // The failures, with the job's own error: a panic fails its job at the first attempt.
    let detail = api(&coord, "/api/sweeps/dash");
    let failures = detail["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 4, "{detail}");
    for f in failures {
        assert_eq!((f["attempt"].as_u64(), f["final"].as_bool()), (Some(1), Some(true)), "{f}");
        assert!(f["error"].as_str().unwrap().contains("panic"), "{f}");
        assert!(f["description"].as_str().unwrap().contains("panic"), "{f}");
    }
    let workers = overview["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!((workers[0]["slots"].as_u64(), workers[0]["alive"].as_bool()), (Some(2), Some(true)));
    assert!(workers[0]["families"].as_array().unwrap().contains(&Value::from("testkit")), "{overview}");

    // The curves and the final table are the trajectories' own statistics.
    let trajectories = jobs(&data.join("dash"));
    assert_eq!(trajectories.len(), 8, "the panicking jobs left no trajectory");
    let mut values: BTreeMap<(String, i64), Vec<f64>> = BTreeMap::new();
    let mut keys_of: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for (key, df) in &trajectories {
        let algorithm = df.column("algorithm").unwrap().str().unwrap().get(0).unwrap().to_string();
        let seed = df.column("seed").unwrap().i64().unwrap().get(0).unwrap();
        keys_of.entry(algorithm.clone()).or_default().push((seed, key.clone()));
        let steps = df.column("step").unwrap().i64().unwrap();
        let value = df.column("value").unwrap().f64().unwrap();
        for (step, v) in steps.into_no_null_iter().zip(value.into_no_null_iter()) {
            values.entry((algorithm.clone(), step)).or_default().push(v);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // Finished, its curves come from the summary files once they are written (until then
    // from the live summaries).
    wait_until(60, "the summary files", || api(&coord, "/api/sweeps/dash/curves")["source"] == "files");
    let curves = api(&coord, "/api/sweeps/dash/curves?metric=value");
    assert_eq!(curves["source"], "files");
    // Three cells; the panicking one has no job done, so no line (its row in the final
    // table says its jobs failed).
    assert_eq!((curves["n_cells"].as_u64(), curves["n_exact"].as_u64()), (Some(3), Some(3)));
    assert_eq!(curves["metrics"], serde_json::json!(["value"]));
    let panels = curves["curves"]["panels"].as_array().unwrap();
    assert_eq!(panels.len(), 1);
    let lines = panels[0]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    for line in lines {
        let algorithm = line["algorithm"].as_str().unwrap().to_string();
        let steps: Vec<i64> = line["step"].as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect();
        assert_eq!(steps, (0..=9).collect::<Vec<_>>());
        for (i, &step) in steps.iter().enumerate() {
            let v = &values[&(algorithm.clone(), step)];
            assert_eq!(line["n"][i], 4);
            let got = line["mean"][i].as_f64().unwrap();
            assert!((got - mean(v)).abs() < 1e-12, "{algorithm} step {step}: {got} vs {}", mean(v));
            // testkit's value is seed + step + U(0, 1): the band is a real spread.
            let (q10, q90) = (line["q10"][i].as_f64().unwrap(), line["q90"][i].as_f64().unwrap());
            assert!(q10 < got && got < q90, "{q10} {got} {q90}");
        }
    }
    let fin = api(&coord, "/api/sweeps/dash/final");
    let rows = fin["final"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        let algorithm = row["algorithm"].as_str().unwrap().to_string();
        if algorithm == "panic" {
            let counts = (row["n"].as_i64(), row["n_jobs"].as_i64(), row["n_failed"].as_i64());
            assert_eq!(counts, (Some(0), Some(4), Some(4)), "{row}");
            assert_eq!(row["mean"], serde_json::json!([null]), "{row}");
            continue;
        }
        assert_eq!((row["n_jobs"].as_i64(), row["n_failed"].as_i64()), (Some(4), Some(0)), "{row}");
        assert_eq!((row["step"].as_i64(), row["n"].as_i64()), (Some(9), Some(4)));
        let v = &values[&(algorithm, 9)];
        assert!((row["mean"][0].as_f64().unwrap() - mean(v)).abs() < 1e-12);
    }

    // A cell's jobs, and one job's trajectory as it is stored.
    let listed = api(&coord, "/api/sweeps/dash/jobs?benchmark=constant&benchmark_params=%7B%7D&algorithm=echo");
    let mut listed: Vec<(i64, String)> = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            assert_eq!(j["state"], "done");
            (j["seed"].as_i64().unwrap(), j["key"].as_str().unwrap().to_string())
        })
        .collect();
    listed.sort();
    let mut expected = keys_of["echo"].clone();
    expected.sort();
    assert_eq!(listed, expected);
    let key = &listed[2].1;
    let trajectory = api(&coord, &format!("/api/sweeps/dash/jobs/{key}"));
    let stored: Vec<f64> = trajectories[key].column("value").unwrap().f64().unwrap().into_no_null_iter().collect();
    let (name, served) = (&trajectory["columns"][0][0], &trajectory["columns"][0][1]);
    assert_eq!(name, "value");
    // Who produced it: the worker session, its host and build, the attempt.
    let provenance = &trajectory["provenance"];
    assert!(provenance["worker"].as_str().unwrap().starts_with('w'), "{provenance}");
    assert!(provenance["software"].as_str().unwrap().starts_with("armada 0.1.0 (build "), "{provenance}");
    assert_eq!(provenance["processor"], armada_worker::processor::describe().as_str(), "{provenance}");
    assert_eq!(provenance["family_digest"], "", "a built-in family has no declaration digest");
    let served: Vec<f64> = served.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(served.len(), stored.len());
    for (got, want) in served.iter().zip(&stored) {
        // The page's JSON.parse reads the shortest round-trip text exactly; serde_json's
        // default parser (used here) may be one unit in the last place off.
        assert!((got - want).abs() <= 2.0 * f64::EPSILON * want.abs(), "{got} vs {want}");
    }

    // Bad requests: a precise error, and the coordinator goes on.
    let (status, _, body) = get(&coord.dashboard, "/api/sweeps/nope/final", &[BEARER]);
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("nope"), "{body}");
    let (status, _, body) = get(&coord.dashboard, "/api/sweeps/dash/curves?metric=regret", &[BEARER]);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("metric: `regret`") && body.contains("value"), "{body}");
    let (status, _, body) = get(&coord.dashboard, "/api/sweeps/dash/jobs/0123", &[BEARER]);
    assert_eq!(status, 404, "{body}");
    assert_eq!(get(&coord.dashboard, "/nothing/here", &[BEARER]).0, 404);

    // Prometheus: the counters are the sweep's own numbers.
    let (status, headers, page) = get(&coord.dashboard, "/metrics", &[BEARER]);
    assert_eq!(status, 200);
    assert!(headers["content-type"].starts_with("text/plain; version=0.0.4"));
    assert_eq!(sample(&page, "armada_jobs{state=\"done\"}"), 8.0);
    assert_eq!(sample(&page, "armada_jobs{state=\"failed\"}"), 4.0);
    assert_eq!(sample(&page, "armada_jobs{state=\"queued\"}"), 0.0);
    assert_eq!(sample(&page, "armada_sweeps{state=\"finished\"}"), 1.0);
    assert_eq!(sample(&page, "armada_jobs_committed_total"), 8.0);
    assert_eq!(sample(&page, "armada_rows_committed_total"), 80.0);
    let received = sample(&page, "armada_records_received_total");
    assert!((80.0..=80.0 + 8.0 * 3.0).contains(&received), "{received}");
    // Each panicking job: one attempt, no retry (its own error); its records up to the
    // panic are not committed, but they were received.
    assert_eq!(sample(&page, "armada_attempts_started_total"), 12.0);
    assert_eq!(sample(&page, "armada_attempts_ended_total{outcome=\"committed\"}"), 8.0);
    assert_eq!(sample(&page, "armada_attempts_ended_total{outcome=\"failed\"}"), 4.0);
    assert_eq!(sample(&page, "armada_retries_total"), 0.0);
    assert_eq!(sample(&page, "armada_leases_expired_total"), 0.0);
    assert_eq!(sample(&page, "armada_leases"), 0.0);
    assert_eq!(sample(&page, "armada_workers"), 1.0);
    assert_eq!(sample(&page, "armada_worker_slots"), 2.0);
    assert_eq!(sample(&page, "armada_commit_latency_seconds_count"), 8.0);
    assert!(sample(&page, "armada_parts_written_total") >= 1.0);
    assert!(sample(&page, "armada_store_bytes") > 0.0);

    // The report: the same table, in one file that refers to nothing outside it.
    let report = armada(&["report", data.join("dash").to_str().unwrap()]);
    assert!(report.status.success(), "{}", text(&report.stderr));
    let path = PathBuf::from(text(&report.stdout).trim());
    assert_eq!(path, data.join("dash").join("report.html"));
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(!html.contains("/assets/") && !html.contains("src=\""), "the report loads nothing");
    let data_json = html.split("window.ARMADA_REPORT = ").nth(1).unwrap().split(";</script>").next().unwrap();
    let embedded: Value = serde_json::from_str(data_json).unwrap();
    assert_eq!(embedded["sweep"], "dash");
    assert_eq!(embedded["views"]["final"], fin["final"]);
    assert_eq!(embedded["views"]["curves"]["value"], curves["curves"]);
    let missing = armada(&["report", tmp.path().to_str().unwrap()]);
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("summary.parquet not found"), "{}", text(&missing.stderr));
    drop(coord);
}

/// The dashboard and `/metrics` behind the same tokens as gRPC, under every combination of
/// `--token` and `--tokens`: open when no token is configured, closed as soon as one is;
/// `admin` (the `--token`, or an admin of the file) opens all of it, `viewer` and `client`
/// the pages, `scrape` the metrics, `worker` nothing; an unknown token is unauthorized.
#[test]
fn the_dashboard_opens_by_role_under_every_combination_of_token_and_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let roles = ["admin", "viewer", "client", "scrape", "worker"];
    let secret = |role: &str| format!("{role}-secret-0123456789");
    let file: String =
        roles.iter().map(|r| format!("[[tokens]]\nsecret = \"{}\"\nrole = \"{r}\"\n", secret(r))).collect();
    let tokens = write(tmp.path(), "tokens.toml", &file);
    let single = "single-admin-0123456789";
    for (i, (with_token, with_file)) in
        [(false, false), (true, false), (false, true), (true, true)].into_iter().enumerate()
    {
        let mut args = vec![];
        if with_token {
            args.extend(["--token", single]);
        }
        if with_file {
            args.extend(["--tokens", tokens.to_str().unwrap()]);
        }
        let coord = serve(&tmp.path().join(format!("data-{i}")), 0, &args);
        let code = |path: &str, token: Option<&str>| {
            let bearer = token.map(|t| format!("Bearer {t}"));
            let headers: Vec<(&str, &str)> = bearer.iter().map(|b| ("authorization", b.as_str())).collect();
            get(&coord.dashboard, path, &headers).0
        };
        let both = |token: Option<&str>| (code("/api/overview", token), code("/metrics", token));
        let case = format!("--token {with_token}, --tokens {with_file}");
        if !with_token && !with_file {
            assert_eq!(both(None), (200, 200), "{case}: open");
            continue;
        }
        assert_eq!(both(None), (401, 401), "{case}: no token");
        assert_eq!(both(Some("not-a-token-0123456789")), (401, 401), "{case}: an unknown token");
        assert_eq!(both(Some(single)), if with_token { (200, 200) } else { (401, 401) }, "{case}: --token");
        for role in roles {
            let expected = match (with_file, role) {
                (false, _) => (401, 401),
                (true, "admin") => (200, 200),
                (true, "viewer" | "client") => (200, 403),
                (true, "scrape") => (403, 200),
                _ => (403, 403),
            };
            assert_eq!(both(Some(&secret(role))), expected, "{case}: {role}");
        }
        if with_file {
            // A viewer's address with ?token= sets the cookie, which opens the pages only.
            let (status, headers, _) = get(&coord.dashboard, &format!("/?token={}", secret("viewer")), &[]);
            assert_eq!(status, 303, "{case}");
            let cookie = headers["set-cookie"].split(';').next().unwrap().to_string();
            assert_eq!(get(&coord.dashboard, "/api/overview", &[("cookie", &cookie)]).0, 200, "{case}");
            assert_eq!(get(&coord.dashboard, "/metrics", &[("cookie", &cookie)]).0, 403, "{case}");
            let (status, _, body) =
                get(&coord.dashboard, "/metrics", &[("authorization", &format!("Bearer {}", secret("viewer")))]);
            assert_eq!(status, 403);
            assert!(body.contains("/metrics opens with an admin or scrape token"), "{body}");
            // Dashboard tokens open no gRPC.
            for role in ["viewer", "scrape"] {
                let out = client_env(&["status"], &coord.url, 30, &[("ARMADA_TOKEN", &secret(role))]);
                assert!(
                    !out.status.success() && text(&out.stderr).contains("dashboard token"),
                    "{}",
                    text(&out.stderr)
                );
            }
        }
    }
}

/// Chromium, and node with playwright-core under the target directory (installed from the
/// npm registry on first use), or why not.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or("no Chromium (Debian's package `chromium`)")?;
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("playwright");
    let module = target.join("node_modules").join("playwright-core");
    if !module.is_dir() {
        std::fs::create_dir_all(&target).unwrap();
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&target)
            .arg(format!("playwright-core@{PLAYWRIGHT}"))
            .output()
            .map_err(|e| format!("npm: {e}"))?;
        if !out.status.success() {
            return Err(format!("npm install playwright-core failed: {}", text(&out.stderr)));
        }
    }
    Ok((chromium, target))
}

/// The version of playwright-core the browser test drives Chromium with.
const PLAYWRIGHT: &str = "1.65.1";

const SLOW_SWEEP: &str = r#"
name = "browse"
family = "testkit"
seeds = 6
horizon = 40
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = 60 }
[[algorithms]]
name = "slow"
params = { ms = 40 }
"#;

#[test]
fn a_browser_sees_progress_and_curves_update_while_jobs_commit() {
    let (chromium, modules) = match browser() {
        Ok(found) => found,
        Err(why) if std::env::var_os("ARMADA_REQUIRE_BROWSER").is_some() => panic!("ARMADA_REQUIRE_BROWSER: {why}"),
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let coord = serve(&tmp.path().join("data"), 0, &["--token", TOKEN]);
    let _w = submit_to_a_worker(&coord, tmp.path(), "browse", SLOW_SWEEP);
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let script = common::manifest_dir().join("tests/support/dashboard_browser.js");
    let out = Command::new("timeout")
        .args(["--signal=KILL", "180", "node"])
        .arg(&script)
        .env("PLAYWRIGHT", modules.join("node_modules").join("playwright-core"))
        .env("CHROMIUM", &chromium)
        .env("DASHBOARD", format!("http://{}", coord.dashboard))
        .env("TOKEN", TOKEN)
        .env("SWEEP", "browse")
        .env("SHOTS", &shots)
        .output()
        .unwrap();
    assert!(out.status.success(), "the browser script failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    let seen: Value = serde_json::from_str(text(&out.stdout).lines().last().unwrap()).unwrap();
    // Without the token the page is refused; with it, progress and curves move on their own.
    assert_eq!(seen["unauthorized_status"], 401);
    assert!(seen["unauthorized_text"].as_str().unwrap().contains("token"), "{seen}");
    let address = seen["address"].as_str().unwrap();
    assert!(!address.contains("token") && address.ends_with("/#sweep=browse"), "{address}");
    let done: Vec<u64> = seen["done"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert!(done.len() >= 2 && done.windows(2).all(|w| w[0] <= w[1]) && done.last() > done.first(), "{done:?}");
    let seeds: Vec<u64> = seen["seeds"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert!(seeds.last() > seeds.first(), "the curves' seed counts did not grow: {seeds:?}");
    assert_eq!(seen["final_done"], 12, "{seen}");
    assert_eq!(seen["panels"], 1);
    assert_eq!(seen["lines"], 2);
    assert_eq!(seen["sorted_asc"], serde_json::json!(["slow {ms=40}", "slow {ms=60}"]), "{seen}");
    assert_eq!(seen["sorted_desc"], serde_json::json!(["slow {ms=60}", "slow {ms=40}"]), "{seen}");
    assert_eq!(seen["jobs_listed"], 6);
    assert!(seen["trajectory_points"].as_u64().unwrap() >= 41, "{seen}");
    // Who committed the job, under its trajectory.
    let provenance = seen["provenance"].as_str().unwrap_or_default();
    assert!(provenance.starts_with("committed by w") && provenance.contains("running armada 0.1.0 (build "), "{seen}");
    for shot in ["dashboard-running.png", "dashboard-finished.png"] {
        let png = std::fs::read(shots.join(shot)).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{shot} is a PNG");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        assert_eq!(width, 1280, "{shot}");
    }
}
