//! The data path at scale, against the in-process runner, on this machine.
//!
//! * jobs per second through lease -> run -> spool -> group commit, with trivial
//!   `testkit/echo` jobs of one step (two records);
//! * trajectory rows per second ingested, with long jobs;
//!
//! each end to end through `armada run`'s embedded coordinator and `WORKERS` worker
//! processes of one slot, and through the in-process runner (`armada run --in-process`,
//! `WORKERS` threads) on the same sweep in the same run, as a ratio; then
//!
//! * the coordinator's peak resident memory (a standalone `armada serve` process), for
//!   short and for long trajectories of the same number of jobs: spools bound it per
//!   running attempt, so it should not grow with the trajectories' length.
//!
//! * a sweep of a million jobs submitted while a worker session heartbeats: time to
//!   accept it, the coordinator's memory per queued job, the worst heartbeat and lease
//!   latency meanwhile, and the time a restart on that store takes to listen.
//!
//! * the throughput targets (`-- targets`): trivial jobs through `armada run` in both modes
//!   at 10,000, 100,000 and a million jobs, each target printed beside its figure.
//!
//! `cargo bench --bench coordinator` (release), or `--profile dev` for the README's build.
//! `ARMADA_BENCH_JOBS` (default 10,000), `ARMADA_BENCH_LONG_JOBS` (100) and
//! `ARMADA_BENCH_LONG_STEPS` (100,000) and `ARMADA_BENCH_HUGE` (1,000,000) scale the
//! sweeps; `cargo bench --bench coordinator -- huge` runs only the last part, `-- jobs` only
//! the first.

use armada::embedded::{run_embedded, EmbeddedConfig};
use armada::local::{run_sweep, LocalConfig};
use armada::{registry, sweep};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

const WORKERS: usize = 2;
const BIN: &str = env!("CARGO_BIN_EXE_armada");

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn testkit_sweep(name: &str, seeds: u64, horizon: u64) -> String {
    format!(
        "name = \"{name}\"\nfamily = \"testkit\"\nseeds = {seeds}\nhorizon = {horizon}\n\
         [[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n"
    )
}

/// One path's seconds: running the jobs (to the last commit), then the summaries.
struct Timing {
    run: f64,
    summaries: f64,
}

/// The in-process runner (then `armada summarize`'s rebuild) and the embedded coordinator
/// + workers (whose live summaries are written after the last commit, awaited).
fn measure(text: &str, name: &str) -> (Timing, Timing) {
    let registry = registry();
    let sweep = sweep::parse_sweep(text, name, &registry).expect("a valid sweep");
    let local_dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let report =
        run_sweep(&registry, &sweep, &local_dir.path().join(name), LocalConfig { n_threads: WORKERS, progress: false })
            .unwrap();
    let run = t0.elapsed().as_secs_f64();
    assert!(report.failures.is_empty());
    let t0 = Instant::now();
    armada::results::rebuild_summaries(&local_dir.path().join(name), None, &[], None).unwrap();
    let local = Timing { run, summaries: t0.elapsed().as_secs_f64() };

    let dist_dir = tempfile::tempdir().unwrap();
    let config =
        EmbeddedConfig { n_workers: WORKERS, progress: false, worker_exe: PathBuf::from(BIN), dashboard: None };
    let t0 = Instant::now();
    let outcome = run_embedded(text, name, dist_dir.path(), &config).unwrap();
    let total = t0.elapsed().as_secs_f64();
    assert_eq!(outcome.status.n_done as usize, sweep.jobs.len());
    assert!(outcome.summary.is_some_and(|s| !s.provisional));
    let summaries = outcome.summary_wait.as_secs_f64();
    (local, Timing { run: total - summaries, summaries })
}

/// One line per path: its rate to the last commit, and when the summaries were ready.
fn report(what: &str, n: u64, local: &Timing, dist: &Timing) {
    for (path, t) in [("in-process ", local), ("distributed", dist)] {
        println!(
            "  {path} {:>7.2} s {:>11.0} {what}/s   summaries {:>5.2} s after the last commit",
            t.run,
            n as f64 / t.run,
            t.summaries
        );
    }
    println!(
        "  ratio distributed/in-process {:.3} (jobs run), {:.3} (with summaries)",
        local.run / dist.run,
        (local.run + local.summaries) / (dist.run + dist.summaries)
    );
}

/// A child killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A field of /proc/PID/status in MB (VmRSS: now; VmHWM: the peak so far).
fn rss_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    kb / 1024.0
}

/// A standalone `armada serve` on a free loopback port, once it listens; its URL.
fn serve(data: &Path, extra: &[&str]) -> (Proc, String) {
    let mut serve = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (Proc(serve), line.trim().rsplit(' ').next().unwrap().to_string())
}

/// Run `text` (a sweep named `peak`) through a standalone coordinator and `WORKERS`
/// workers. Returns the coordinator's largest RSS sampled while jobs ran (the data path),
/// its peak RSS once the summaries were built too (VmHWM), both in MB, and the seconds
/// the jobs took.
fn coordinator_peak(text: &str, dir: &Path, extra: &[&str]) -> (f64, f64, f64) {
    let (serve, url) = serve(&dir.join("data"), extra);
    let _workers: Vec<Proc> = (0..WORKERS)
        .map(|_| {
            let child = Command::new(BIN)
                .args(["worker", "--coordinator", &url, "--slots", "1"])
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            Proc(child)
        })
        .collect();
    let file = dir.join("sweep.toml");
    std::fs::write(&file, text).unwrap();
    let t0 = Instant::now();
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).args(["--coordinator", &url]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["submit", file.to_str().unwrap()]);
    let pid = serve.0.id();
    let mut ingest_peak: f64 = 0.0;
    let secs = loop {
        let rss = rss_mb(pid, "VmRSS:");
        let out = Command::new(BIN).args(["status", "peak", "--coordinator", &url]).output().unwrap();
        if String::from_utf8_lossy(&out.stdout).contains(": finished,") {
            break t0.elapsed().as_secs_f64();
        }
        // Still running after the sample: it measured the data path, not the summaries
        // that the last commit starts.
        ingest_peak = ingest_peak.max(rss);
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    run(&["watch", "peak", "--quiet"]);
    (ingest_peak, rss_mb(pid, "VmHWM:"), secs)
}

fn main() {
    // `cargo bench` passes `--bench`; `-- huge` runs only the last section.
    if std::env::args().skip(1).any(|a| a == "huge") {
        return huge_submit(env_or("ARMADA_BENCH_HUGE", 1_000_000));
    }
    if std::env::args().skip(1).any(|a| a == "targets") {
        return targets();
    }
    let n_jobs = env_or("ARMADA_BENCH_JOBS", 10_000);
    let (local, dist) = measure(&testkit_sweep("bench-jobs", n_jobs, 1), "bench-jobs");
    println!("trivial one-step jobs, {WORKERS} workers ({n_jobs} jobs):");
    report("jobs", n_jobs, &local, &dist);
    // `-- jobs` runs only the section above.
    if std::env::args().skip(1).any(|a| a == "jobs") {
        return;
    }

    let (seeds, steps) = (env_or("ARMADA_BENCH_LONG_JOBS", 100), env_or("ARMADA_BENCH_LONG_STEPS", 100_000));
    let n_rows = seeds * steps;
    let (local, dist) = measure(&testkit_sweep("bench-rows", seeds, steps - 1), "bench-rows");
    println!("trajectory rows ingested, {seeds} jobs of {steps} rows:");
    report("rows", n_rows, &local, &dist);

    println!("coordinator RSS (standalone `armada serve`, {WORKERS} workers), {seeds} jobs:");
    let mut peaks = Vec::new();
    for (steps, extra) in [(100, &[][..]), (steps, &[][..]), (steps, &["--part-writers", "1"][..])] {
        let dir = tempfile::tempdir().unwrap();
        let sweep = testkit_sweep("peak", seeds, steps - 1);
        let (ingest, with_summaries, secs) = coordinator_peak(&sweep, dir.path(), extra);
        println!(
            "  {steps:>7} rows per job {:<17}: {ingest:>7.1} MB while jobs ran ({secs:.1} s), {with_summaries:>7.1} MB peak with summaries",
            extra.join(" ")
        );
        peaks.push(ingest);
    }
    println!(
        "  growth while jobs ran, 100 -> {steps} rows per job: {:+.1} MB ({:+.1} MB with one part writer)",
        peaks[1] - peaks[0],
        peaks[2] - peaks[0]
    );
    huge_submit(env_or("ARMADA_BENCH_HUGE", 1_000_000));
}

/// A coordinator (standalone `armada serve`) accepting one sweep of `n_jobs` jobs while a
/// worker session heartbeats an attempt of another sweep every 10 ms. Prints the time to
/// accept, the coordinator's peak and settled RSS, the worst heartbeat (and lease) latency
/// meanwhile, and the time a restart on that store takes to listen.
fn huge_submit(n_jobs: u64) {
    use armada_proto::v1 as pb;
    use pb::workers_client::WorkersClient;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let start = |data: &Path| {
        let t0 = Instant::now();
        let (serve, url) = serve(data, &[]);
        (serve, url, t0.elapsed())
    };
    let (serve, url, _) = start(&data);
    let pid = serve.0.id();
    let baseline = rss_mb(pid, "VmRSS:");
    let cli = |args: &[&str]| {
        let out = Command::new(BIN).args(args).args(["--coordinator", &url]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    // One job held by a worker session, heartbeated throughout.
    let small = dir.path().join("small.toml");
    std::fs::write(&small, testkit_sweep("held", 4, 1)).unwrap();
    cli(&["submit", small.to_str().unwrap()]);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (stop, worst) = runtime.block_on(async {
        let mut client = WorkersClient::connect(url.clone()).await.unwrap();
        let reg = armada::registry();
        let session = client
            .register(pb::RegisterRequest {
                name: "bench".into(),
                slots: 1,
                version: env!("CARGO_PKG_VERSION").into(),
                families: vec!["testkit".into()],
                build: reg.digest(),
                declarations: vec![],
                host: "bench".into(),
                software: "bench".into(),
                processor: "bench".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .session;
        let lease = client.lease(pb::LeaseRequest { session: session.clone(), max_jobs: 1, wait_ms: 0 }).await.unwrap();
        let attempt = lease.into_inner().leases[0].attempt_id;
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let worst = tokio::spawn(async move {
            let (mut heartbeat, mut lease) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
            while !*stopped.borrow() {
                let t = Instant::now();
                let r = client.heartbeat(pb::HeartbeatRequest {
                    session: session.clone(),
                    attempt_ids: vec![attempt],
                    started_ids: vec![attempt],
                });
                r.await.unwrap();
                heartbeat = heartbeat.max(t.elapsed());
                let t = Instant::now();
                client.lease(pb::LeaseRequest { session: session.clone(), max_jobs: 0, wait_ms: 0 }).await.unwrap();
                lease = lease.max(t.elapsed());
                let _ = tokio::time::timeout(std::time::Duration::from_millis(10), stopped.changed()).await;
            }
            (heartbeat, lease)
        });
        (stop, worst)
    });
    let file = dir.path().join("huge.toml");
    std::fs::write(&file, testkit_sweep("huge", n_jobs, 1)).unwrap();
    let t0 = Instant::now();
    cli(&["submit", file.to_str().unwrap()]);
    let accepted = t0.elapsed();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let settled = rss_mb(pid, "VmRSS:");
    let peak = rss_mb(pid, "VmHWM:");
    stop.send(true).unwrap();
    let (heartbeat, lease) = runtime.block_on(worst).unwrap();
    drop(serve);
    let (serve, _, restart) = start(&data);
    let restarted = rss_mb(serve.0.id(), "VmRSS:");
    println!("a sweep of {n_jobs} jobs submitted to a standalone coordinator:");
    println!("  accepted in {:.1} s; coordinator RSS {baseline:.0} MB before, {peak:.0} MB peak, {settled:.0} MB after ({:.0} bytes per queued job)",
        accepted.as_secs_f64(), (settled - baseline) * 1e6 / n_jobs as f64);
    println!(
        "  worst latency meanwhile: heartbeat {:.1} ms, lease {:.1} ms",
        heartbeat.as_secs_f64() * 1e3,
        lease.as_secs_f64() * 1e3
    );
    println!("  restart on that store listens in {:.1} s with {restarted:.0} MB RSS", restart.as_secs_f64());
}

/// `armada run` on `sweep` (a file) as a user runs it, in one mode; its seconds (from spawn
/// to exit, waited for, not polled) and the peak RSS of the `armada run` process itself
/// (VmHWM, sampled by a thread until it exits), in MB.
fn armada_run(sweep: &Path, in_process: bool) -> (f64, f64) {
    let out = tempfile::tempdir().unwrap();
    let jobs = WORKERS.to_string();
    let mut args = vec!["run", sweep.to_str().unwrap(), "--quiet", "--dashboard", "off", "--jobs", &jobs];
    if in_process {
        args.push("--in-process");
    }
    let t0 = Instant::now();
    let mut child = Command::new(BIN).args(&args).arg("--out").arg(out.path()).stdout(Stdio::null()).spawn().unwrap();
    let pid = child.id();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak: f64 = 0.0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let hwm = rss_mb(pid, "VmHWM:");
                if hwm.is_finite() {
                    peak = peak.max(hwm);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            peak
        })
    };
    let status = child.wait().unwrap();
    let secs = t0.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(status.success(), "armada run {}", sweep.display());
    (secs, sampler.join().unwrap())
}

/// `rounds` runs of each mode, alternated (in process first), after one unmeasured run of
/// each (so neither mode pays for a cold page cache): the median seconds of each mode, and
/// the largest peak RSS of each.
fn armada_run_rounds(sweep: &Path, rounds: usize) -> ((f64, f64), (f64, f64)) {
    if rounds > 1 {
        armada_run(sweep, true);
        armada_run(sweep, false);
    }
    let (mut local, mut dist) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        local.push(armada_run(sweep, true));
        dist.push(armada_run(sweep, false));
    }
    let median = |runs: &mut Vec<(f64, f64)>| {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let peak = runs.iter().map(|r| r.1).fold(0.0, f64::max);
        (runs[runs.len() / 2].0, peak)
    };
    (median(&mut local), median(&mut dist))
}

/// The throughput targets beside what this machine measures, in one run: trivial jobs through
/// `armada run` in both modes at 10,000, 100,000 and `ARMADA_BENCH_MILLION` (1,000,000)
/// jobs (seconds, jobs/s, the process's peak memory; at 10,000 the median of 7 runs of each
/// mode and at 100,000 of 3, alternated after an unmeasured run of each), then each target
/// with its figure.
/// `ARMADA_BENCH_QUICK_SWEEPS=1` adds the real quick sweeps (lse-finite-quick,
/// cdt-main-quick; minutes each) in both modes.
fn targets() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [10_000, 100_000, env_or("ARMADA_BENCH_MILLION", 1_000_000)];
    // (jobs, (seconds, MB) in process, (seconds, MB) distributed)
    let mut rows = Vec::new();
    println!("trivial one-step jobs through `armada run --jobs {WORKERS}` (start-up and summaries included):");
    for n in sizes {
        let file = dir.path().join(format!("trivial-{n}.toml"));
        std::fs::write(&file, testkit_sweep("trivial", n, 1)).unwrap();
        // Short runs vary by tens of percent from one to the next: the median of several.
        let rounds = match n {
            0..=10_000 => 7,
            10_001..=100_000 => 3,
            _ => 1,
        };
        let (local, dist) = armada_run_rounds(&file, rounds);
        for (mode, (secs, mb)) in [("in-process ", local), ("distributed", dist)] {
            println!("  {n:>9} jobs {mode} {secs:>7.2} s {:>8.0} jobs/s  peak {mb:>6.0} MB", n as f64 / secs);
        }
        rows.push((n, local, dist));
    }
    let (small, mid, big) = (rows[0], rows[1], rows[2]);
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("targets:");
    let ratio = small.1 .0 / small.2 .0;
    println!("  10,000 jobs distributed >= 0.8x in-process: {ratio:.2}x  {}", verdict(ratio >= 0.8));
    let secs = mid.2 .0;
    println!("  {} jobs distributed <= 5 s: {secs:.2} s  {}", mid.0, verdict(secs <= 5.0));
    let rate = big.0 as f64 / big.2 .0;
    println!("  >= 25,000 jobs/s end to end ({} jobs, distributed): {rate:.0}  {}", big.0, verdict(rate >= 25_000.0));
    for (mode, (secs, mb)) in [("in-process", big.1), ("distributed", big.2)] {
        println!(
            "  {} jobs {mode} <= 60 s: {secs:.1} s {}; peak < 1 GB: {mb:.0} MB {}",
            big.0,
            verdict(secs <= 60.0),
            verdict(mb < 1024.0)
        );
    }
    for (mode, a, b) in [("in-process", small.1 .0, mid.1 .0), ("distributed", small.2 .0, mid.2 .0)] {
        println!("  100,000 within 12x of 10,000 ({mode}): {:.1}x  {}", b / a, verdict(b / a <= 12.0));
    }
    if std::env::var("ARMADA_BENCH_QUICK_SWEEPS").is_ok_and(|v| v == "1") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps");
        for name in ["lse-finite-quick", "cdt-main-quick"] {
            let file = root.join(format!("{name}.toml"));
            let (local, dist) = (armada_run(&file, true), armada_run(&file, false));
            let ratio = dist.0 / local.0;
            println!(
                "  {name} distributed within 1.1x of in-process: {:.1} s vs {:.1} s, {ratio:.2}x  {}",
                dist.0,
                local.0,
                verdict(ratio <= 1.1)
            );
        }
    }
    println!("  100 trials >= 1,000x Ray Tune: benches/ray_tune.py (needs Ray) measures it");
}
