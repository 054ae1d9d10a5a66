//! armada-sdk (workers/python) with real processes: its own tests in a venv it is
//! pip-installed into; Python workers of a declared family beside a Rust worker of a
//! built-in one, one Python worker killed while it holds leases, giving an uninterrupted
//! run's trajectories and summaries; and the SDK's guide run as written.

use crate::common;

use common::cluster::{client, serve, worker, write, Coordinator, Launcher};
use common::{jobs, text, wait_until, Proc};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The python of a venv with the SDK's test requirements, and the SDK installed from
/// workers/python (once per run of this binary, so that a changed SDK is what is tested).
pub(crate) fn sdk_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let sdk = common::manifest_dir().join("workers/python");
        let python = common::python_venv("venv-sdk", &sdk.join("requirements-test.txt"));
        common::install_sdk(&python);
        python
    })
}

fn python_worker(url: &str, family: &str, slots: usize, log: &Path, dir: &Path) -> Proc {
    python_worker_args(url, family, slots, log, dir, &[])
}

fn python_worker_args(url: &str, family: &str, slots: usize, log: &Path, dir: &Path, extra: &[&str]) -> Proc {
    python_worker_with(&Launcher::workspace(), sdk_python(), url, family, slots, log, dir, extra)
}

/// A Python worker of `family` (`module:NAME`, found on `dir`) run by `python` through
/// `launcher`'s wrapper.
#[allow(clippy::too_many_arguments)]
pub(crate) fn python_worker_with(
    launcher: &Launcher,
    python: &Path,
    url: &str,
    family: &str,
    slots: usize,
    log: &Path,
    dir: &Path,
    extra: &[&str],
) -> Proc {
    let child = launcher
        .command(python)
        .args(["-m", "armada_sdk.worker", family, "--coordinator", url, "--slots", &slots.to_string()])
        .args(extra)
        .current_dir(dir)
        .env("PYTHONPATH", dir)
        .env_remove("ARMADA_TOKEN")
        .stdout(Stdio::null())
        .stderr(File::create(log).unwrap())
        .spawn()
        .unwrap();
    Proc(child)
}

pub(crate) fn registered(log: &Path) -> bool {
    std::fs::read_to_string(log).is_ok_and(|l| l.contains("registered with"))
}

#[test]
fn the_sdk_passes_its_own_tests() {
    common::pytest_passes(sdk_python(), &common::manifest_dir().join("workers/python/tests"));
}

pub(crate) const NOISY_SWEEP: &str = r#"
name = "noisy-mix"
family = "noisy"
seeds = 4
horizon = 30
[[benchmarks]]
name = "branin"
[[benchmarks]]
name = "hartmann3"
[[algorithms]]
name = "random-search"
[[algorithms]]
name = "gp-ucb"
params = { candidates = 2048 }
"#;

const TESTKIT_SWEEP: &str = r#"
name = "builtin-mix"
family = "testkit"
seeds = 6
horizon = 5
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "echo"
"#;

fn submit_and_watch(coord: &Coordinator, sweep: &Path, id: &str) {
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 60);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let watched = client(&["watch", id, "--quiet"], &coord.url, 300);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
}

#[test]
fn python_workers_of_a_declared_family_run_beside_a_rust_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (noisy, builtin) = (write(dir, "noisy.toml", NOISY_SWEEP), write(dir, "builtin.toml", TESTKIT_SWEEP));
    let family = "armada_sdk.examples.noisy:FAMILY";

    // The uninterrupted run: one Python worker.
    let reference = serve(&dir.join("reference"), 0, &[]);
    let mut only = python_worker(&reference.url, family, 2, &dir.join("only.log"), dir);
    wait_until(120, "the Python worker registers", || registered(&dir.join("only.log")));
    submit_and_watch(&reference, &noisy, "noisy-mix");
    only.sigterm();
    assert!(only.wait(60).success(), "a drained Python worker exits 0");

    // Before any worker declared the family, its sweep is refused.
    let coord = serve(&dir.join("data"), 0, &["--lease-ttl-ms", "1000"]);
    let refused = client(&["submit", noisy.to_str().unwrap()], &coord.url, 60);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("family: unknown family `noisy`"), "{}", text(&refused.stderr));
    let _rust = worker(&coord.url, 1, &dir.join("rust.log"), &[]);
    let (log1, log2) = (dir.join("p1.log"), dir.join("p2.log"));
    let mut p1 = python_worker(&coord.url, family, 1, &log1, dir);
    wait_until(120, "the first Python worker registers", || registered(&log1));
    for sweep in [&noisy, &builtin] {
        let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 60);
        assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    }
    // Kill it once it holds leases of the declared family's jobs (it leases 16 per slot
    // ahead, and is their only worker yet): they expire and go to the second worker.
    let running = || {
        let status = text(&client(&["status", "noisy-mix"], &coord.url, 60).stdout);
        status.split(", ").find_map(|part| part.strip_suffix(" running")?.parse::<u32>().ok()).unwrap_or(0)
    };
    wait_until(120, "the first Python worker leases", || running() > 0);
    p1.kill9();
    let _p2 = python_worker(&coord.url, family, 1, &log2, dir);
    for id in ["noisy-mix", "builtin-mix"] {
        let watched = client(&["watch", id, "--quiet"], &coord.url, 300);
        assert!(watched.status.success(), "{}", text(&watched.stderr));
    }
    let metrics = Command::new("curl").args(["-s", &format!("http://{}/metrics", coord.dashboard)]).output().unwrap();
    let metrics = text(&metrics.stdout);
    let expired: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("armada_leases_expired_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no expired-lease counter in /metrics:\n{metrics}"));
    assert!(expired >= 1, "the killed worker held no lease: nothing was tested");
    // The dashboard and `armada report` show the declared family like a built-in one.
    let curves =
        Command::new("curl").args(["-s", &format!("http://{}/api/sweeps/noisy-mix/curves", coord.dashboard)]).output();
    let curves = text(&curves.unwrap().stdout);
    // Its headline metric first, as for a built-in family.
    assert!(curves.contains(r#""metrics":["simple_regret","best_observed"],"metric":"simple_regret""#), "{curves}");
    let report = dir.join("report.html");
    let written =
        common::armada(&["report", dir.join("data/noisy-mix").to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("simple_regret") && html.contains("gp-ucb") && html.contains("hartmann3"));

    // The same trajectories, bit for bit but elapsed_ms, and the same summaries, byte for byte.
    common::assert_same_sweep(&dir.join("data/noisy-mix"), &dir.join("reference/noisy-mix"), 16);
    // Each family's jobs ran on its own workers: provenance says who committed what.
    let provenance = |sweep: &str| -> Vec<armada::results::Provenance> {
        let mut all = Vec::new();
        for part in common::part_files(&dir.join("data").join(sweep)) {
            all.extend(armada::results::read_provenance(&part).unwrap().into_values());
        }
        all
    };
    // Both SDKs describe this machine's processor the same way.
    for p in provenance("noisy-mix").iter().chain(&provenance("builtin-mix")) {
        assert_eq!(p.processor, armada_worker::processor::describe(), "{p:?}");
    }
    let software = |sweep: &str| -> Vec<String> { provenance(sweep).into_iter().map(|p| p.software).collect() };
    let python = software("noisy-mix");
    assert_eq!(python.len(), 16);
    assert!(python.iter().all(|s| s.starts_with("armada-sdk 0.1.0 (Python ")), "{python:?}");
    let rust = software("builtin-mix");
    assert_eq!(rust.len(), 6);
    assert!(rust.iter().all(|s| s.starts_with("armada 0.1.0 (build ")), "{rust:?}");
}

/// The fenced blocks of the SDK's README marked `file=NAME`, as (name, text).
fn guide_files(readme: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("```python file=") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
            files.push((name.trim().to_string(), body.join("\n") + "\n"));
        }
    }
    files
}

#[test]
fn the_sdk_guide_runs_as_written() {
    let readme = std::fs::read_to_string(common::manifest_dir().join("workers/python/README.md")).unwrap();
    let files = guide_files(&readme);
    assert_eq!(files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["my_family.py", "submit.py"]);
    // The guide's commands, as the README gives them (with a free port here).
    assert!(readme.contains("armada serve --listen 127.0.0.1:7070 --data armada-data &"));
    assert!(
        readme.contains("python -m armada_sdk.worker my_family:FAMILY --coordinator http://127.0.0.1:7070 --slots 2 &")
    );
    assert!(readme.contains("`python submit.py http://127.0.0.1:7070`"));
    let tmp = tempfile::tempdir().unwrap();
    for (name, body) in &files {
        write(tmp.path(), name, body);
    }
    let coord = serve(&tmp.path().join("armada-data"), 0, &[]);
    let log = tmp.path().join("worker.log");
    let _worker = python_worker(&coord.url, "my_family:FAMILY", 2, &log, tmp.path());
    let out = Command::new(sdk_python())
        .args(["submit.py", &coord.url])
        .current_dir(tmp.path())
        .env("PYTHONPATH", tmp.path())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}\nworker: {}",
        text(&out.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(stdout.contains("15 of 15 jobs done"), "{stdout}");
    for row in ["local-search", r#"{"step_size":0.1}"#, r#"{"step_size":0.5}"#, "random"] {
        assert!(stdout.contains(row), "{row} missing:\n{stdout}");
    }
}

const BROKEN_FAMILY: &str = r#"
from armada_sdk import Algorithm, Benchmark, Family, Metric


class Episode:
    def __init__(self, job, streams):
        self.job = job

    def initial(self):
        return {"value": 0.0}

    def step(self, t):
        if self.job.algorithm == "breaks" and t == 2 and self.job.seed % 2 == 1:
            raise ValueError(f"broken on purpose at step {t}")
        return {"value": float(t)}


FAMILY = Family(
    name="broken",
    version=1,
    benchmarks=[Benchmark("b")],
    algorithms=[Algorithm("works"), Algorithm("breaks")],
    metrics=[Metric("value")],
    start=Episode,
)
"#;

/// A job whose episode raises (for its odd seeds) is reported with its traceback
/// (FailAttempt, the job's own error), failed at its first attempt, and counted in every
/// table: `n_jobs` and `n_failed` on the rows of both summary files, and the terminal
/// table's marker; the other jobs commit.
#[test]
fn a_python_job_that_raises_fails_with_its_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "broken_family.py", BROKEN_FAMILY);
    let sweep = write(
        tmp.path(),
        "broken.toml",
        "family = \"broken\"\nseeds = 4\nhorizon = 3\n[[benchmarks]]\nname = \"b\"\n\
         [[algorithms]]\nname = \"works\"\n[[algorithms]]\nname = \"breaks\"\n",
    );
    let coord = serve(&tmp.path().join("data"), 0, &["--max-attempts", "3"]);
    let log = tmp.path().join("worker.log");
    let _worker = python_worker(&coord.url, "broken_family:FAMILY", 1, &log, tmp.path());
    wait_until(120, "the Python worker registers", || registered(&log));
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 60);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let watched = client(&["watch", "broken", "--quiet"], &coord.url, 300);
    assert!(!watched.status.success(), "a sweep with failed jobs exits non-zero");
    let status = client(&["status", "broken"], &coord.url, 60);
    let status = text(&status.stdout);
    assert!(status.contains("6 done") && status.contains("2 failed"), "{status}");
    assert_eq!(status.matches("after 1 attempt: ").count(), 2, "a job's own error is not retried: {status}");
    assert!(status.contains("ValueError: broken on purpose at step 2"), "{status}");
    assert_eq!(jobs(&tmp.path().join("data/broken")).len(), 6);
    let table = text(&watched.stdout);
    let line = |algorithm: &str| table.lines().find(|l| l.contains(&format!("  {algorithm}  "))).unwrap_or_default();
    assert!(line("breaks").contains("  2/4, 2 failed  "), "{table}");
    assert!(!line("works").contains("failed"), "{table}");
    for file in ["summary.parquet", "final.parquet"] {
        let df = common::read(&tmp.path().join("data/broken").join(file));
        let ints = |name: &str| -> Vec<Option<i64>> { df.column(name).unwrap().i64().unwrap().iter().collect() };
        let algorithm: Vec<Option<&str>> = df.column("algorithm").unwrap().str().unwrap().iter().collect();
        let (n, n_jobs, n_failed) = (ints("n"), ints("n_jobs"), ints("n_failed"));
        for i in 0..df.height() {
            let failed = if algorithm[i] == Some("breaks") { 2 } else { 0 };
            assert_eq!(n_jobs[i], Some(4), "{file} row {i}");
            assert_eq!(n_failed[i], Some(failed), "{file} row {i}");
            assert!(n[i] <= Some(4 - failed), "{file} row {i}");
        }
    }
}

/// A family whose seeds from 50 on block their slot: the worker measures short jobs, leases
/// ahead, then holds one chunk running and the rest of its leases waiting, for good.
const STUCK_FAMILY: &str = r#"
import time

from armada_sdk import Algorithm, Benchmark, Family, Metric


class Episode:
    def __init__(self, job, streams):
        self.seed = job.seed

    def initial(self):
        while self.seed >= 50:
            time.sleep(1)
        return {"value": 0.0}

    def step(self, t):
        return {"value": float(t)}


FAMILY = Family(
    name="stuck",
    version=1,
    benchmarks=[Benchmark("b")],
    algorithms=[Algorithm("a")],
    metrics=[Metric("value")],
    start=Episode,
)
"#;

/// A Python worker killed while it holds jobs leased ahead is charged only for the jobs it
/// had started (its heartbeats' `started_ids`): with `--max-attempts 1` exactly the jobs the
/// coordinator saw running fail, and exactly those it saw leased ahead are queued again,
/// uncharged.
#[test]
fn a_killed_python_worker_is_charged_only_for_the_jobs_it_had_started() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "stuck_family.py", STUCK_FAMILY);
    let sweep = write(
        dir,
        "stuck.toml",
        "family = \"stuck\"\nseeds = 400\nhorizon = 1\n[[benchmarks]]\nname = \"b\"\n[[algorithms]]\nname = \"a\"\n",
    );
    let coord = serve(&dir.join("data"), 0, &["--max-attempts", "1", "--lease-ttl-ms", "2000"]);
    let log = dir.join("worker.log");
    let mut worker = python_worker(&coord.url, "stuck_family:FAMILY", 1, &log, dir);
    wait_until(120, "the Python worker registers", || registered(&log));
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 60);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let status = || text(&client(&["status", "stuck", "--failures", "10000"], &coord.url, 60).stdout);
    let count = |status: &str, what: &str| -> u32 {
        status.split([',', ':']).find_map(|part| part.trim().strip_suffix(what)?.trim().parse().ok()).unwrap_or(0)
    };
    // Stuck: the same counts over two heartbeats (every 500 ms), some running, more ahead.
    let mut last = (0, 0);
    wait_until(120, "the worker stuck with jobs running and leased ahead", || {
        std::thread::sleep(Duration::from_millis(1200));
        let s = status();
        let now = (count(&s, "running"), count(&s, "leased ahead"));
        let stable = now == last && now.0 > 0 && now.1 > 0;
        last = now;
        stable
    });
    let (running, ahead) = last;
    eprintln!("killing the worker holding {running} started and {ahead} leased-ahead jobs");
    worker.kill9();
    wait_until(60, "its leases expire", || {
        let s = status();
        count(&s, "running") == 0 && count(&s, "leased ahead") == 0
    });
    let status = status();
    let metrics = Command::new("curl").args(["-s", &format!("http://{}/metrics", coord.dashboard)]).output().unwrap();
    let metrics = text(&metrics.stdout);
    let expired: u32 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("armada_leases_expired_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no expired-lease counter in /metrics:\n{metrics}"));
    assert_eq!(expired, running + ahead, "{status}");
    assert_eq!(count(&status, "failed"), running, "only the started jobs are charged:\n{status}");
    let failures: Vec<&str> = status.lines().map(str::trim_start).filter(|l| l.starts_with("failed: ")).collect();
    assert_eq!(failures.len() as u32, running, "{status}");
    assert!(failures.iter().all(|l| l.contains("after 1 attempt: lease expired: worker")), "{status}");
}

/// A Python worker (with the coordinator's token) outlives its coordinator: it retries,
/// naming the coordinator, while the coordinator is down, registers again when it is back
/// (its old session is unknown there), and the sweep completes with every job once.
#[test]
fn a_python_worker_rides_out_a_coordinator_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let token = "sdk-token-0123456789";
    let sweep = write(dir, "noisy.toml", &NOISY_SWEEP.replace("seeds = 4", "seeds = 12"));
    let data = dir.join("data");
    let mut coord = serve(&data, 0, &["--token", token]);
    let (url, port) = (coord.url.clone(), coord.port);
    let log = dir.join("worker.log");
    let _worker = python_worker_args(&url, "armada_sdk.examples.noisy:FAMILY", 1, &log, dir, &["--token", token]);
    wait_until(120, "the Python worker registers", || registered(&log));
    let with_token = [("ARMADA_TOKEN", token)];
    let submitted = common::cluster::client_env(&["submit", sweep.to_str().unwrap()], &url, 60, &with_token);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    wait_until(120, "a first part", || {
        std::fs::read_dir(data.join("noisy-mix/trajectories")).is_ok_and(|mut d| d.next().is_some())
    });
    coord.proc.kill9();
    let worker_log = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until(60, "the worker retries", || worker_log().contains(&format!("coordinator {url}: UNAVAILABLE")));
    let coord = serve(&data, port, &["--token", token]);
    let watched = common::cluster::client_env(&["watch", "noisy-mix", "--quiet"], &coord.url, 300, &with_token);
    assert!(watched.status.success(), "{}\n{}", text(&watched.stderr), worker_log());
    assert!(worker_log().contains("registering again"), "{}", worker_log());
    assert_eq!(jobs(&data.join("noisy-mix")).len(), 48);
}

/// Over TLS: the Python worker and client take the CA certificate as the Rust ones do.
#[test]
fn python_workers_and_clients_speak_tls() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = common::manifest_dir().join("tests/fixtures/tls");
    let (cert, key) = (fixtures.join("cert.pem"), fixtures.join("key.pem"));
    let coord =
        serve(&tmp.path().join("data"), 0, &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    assert!(coord.url.starts_with("https://"), "{}", coord.url);
    let ca = cert.to_str().unwrap();
    let log = tmp.path().join("worker.log");
    let family = "armada_sdk.examples.echo:FAMILY";
    let _worker = python_worker_args(&coord.url, family, 1, &log, tmp.path(), &["--tls-ca", ca]);
    let script = r#"
import sys

from armada_sdk import Client

client = Client(sys.argv[1], tls_ca=sys.argv[2])
sweep = client.submit(
    {"name": "tls", "family": "echo", "seeds": 3, "horizon": 4,
     "benchmarks": [{"name": "constant"}], "algorithms": [{"name": "echo"}]}
)
status = client.watch(sweep, progress=False)
print(status.n_done, len(client.trajectories(sweep)))
"#;
    wait_until(120, "the Python worker registers over TLS", || registered(&log));
    let out = Command::new(sdk_python()).args(["-c", script, &coord.url, ca]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "3 15", "3 jobs of 5 rows");
}

/// What a worker says of itself is kept with its session and recorded with its
/// trajectories, so it is bounded: an oversized host, name or slot count is refused naming
/// the field, and the coordinator goes on.
#[test]
fn an_oversized_registration_is_refused_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let coord = serve(&tmp.path().join("data"), 0, &[]);
    let script = r#"
import sys

import grpc

from armada_sdk import connection
from armada_sdk._proto import service_pb2
from armada_sdk.examples.echo import FAMILY

_, workers = connection.stubs(connection.channel(sys.argv[1]))


def register(host, name="x", slots=1):
    request = service_pb2.RegisterRequest(
        name=name, slots=slots, families=["echo"], declarations=[FAMILY.to_proto()], host=host, software="test"
    )
    try:
        return "OK " + workers.Register(request, timeout=10).key_salts["echo"]
    except grpc.RpcError as e:
        return f"{e.code().name}: {e.details()}"


print(register("h" * 300))
print(register("h", name="n" * 1000))
print(register("h", slots=5000))
print(register("h" * 256, slots=4096))
"#;
    let out = Command::new(sdk_python()).args(["-c", script, &coord.url]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(lines[0], "INVALID_ARGUMENT: host: 300 characters, over 256");
    assert_eq!(lines[1], "INVALID_ARGUMENT: name: 1000 characters, over 256");
    assert_eq!(lines[2], "INVALID_ARGUMENT: slots: 5000, over 4096");
    assert!(lines[3].starts_with("OK armada-job-v1+"), "{lines:?}");
}
