//! Results read back in bounded memory, whatever a trajectory's length: one job of 3,000,000
//! steps run, summarized and reported by `armada run`, then every view of the dashboard of
//! its data directory served by a coordinator under an address-space limit below what
//! reading its summary whole took (about 1.3 GB), and fetched from it by `armada fetch`
//! holding a chunk at a time. The only test of its binary, so that the
//! peak it measures of the processes it waited for is `armada run`'s (or a worker's).

use crate::common;

use common::cluster::{http_get, http_get_within, BIN};
use common::text;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

const STEPS: usize = 3_000_000;

/// The largest resident set of the processes this one waited for, in bytes.
fn children_peak_rss() -> u64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    usage.ru_maxrss as u64 * 1024
}

/// Run `command` to its end: whether it succeeded, what it printed on stderr, and its peak
/// resident set in bytes. Linux counts in it this process's own at the spawn (the child
/// starts in its memory), so this process compares files without reading them whole.
fn run_measured(mut command: Command, stderr: &std::path::Path) -> (bool, String, u64) {
    // wait4 reaps it (and gives its usage), so std's wait is not called.
    #[allow(clippy::zombie_processes)]
    let child = command.stdout(Stdio::null()).stderr(std::fs::File::create(stderr).unwrap()).spawn().unwrap();
    let (mut status, mut usage): (libc::c_int, libc::rusage) = (0, unsafe { std::mem::zeroed() });
    assert_eq!(
        unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) },
        child.id() as libc::pid_t
    );
    let succeeded = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (succeeded, std::fs::read_to_string(stderr).unwrap(), usage.ru_maxrss as u64 * 1024)
}

/// Whether two files hold the same bytes, read a megabyte at a time.
fn same_bytes(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::io::Read;
    let (mut a, mut b) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = a.read(&mut x).unwrap();
        if n == 0 {
            return b.read(&mut y).unwrap() == 0;
        }
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return false;
        }
    }
}

#[test]
fn a_long_sweep_is_run_reported_and_viewed_in_bounded_memory() {
    // The peaks below are read with getrusage and wait4: in a process of its own, so that
    // neither the binary's other tests' children nor their memory count.
    if std::env::var_os(common::ALONE).is_none() {
        return common::run_alone(module_path!(), "a_long_sweep_is_run_reported_and_viewed_in_bounded_memory");
    }
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("long.toml");
    let body = format!(
        "name = \"long\"\nfamily = \"testkit\"\nseeds = 1\nhorizon = {STEPS}\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n"
    );
    std::fs::write(&sweep, body).unwrap();
    let data = tmp.path().join("data");
    let run = Command::new(BIN)
        .args(["run", sweep.to_str().unwrap(), "--out", data.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let peak = children_peak_rss();
    assert!(peak < 340 << 20, "armada run of one {STEPS}-step job peaked at {} MiB", peak >> 20);
    let report = std::fs::read_to_string(data.join("long/report.html")).unwrap();
    assert!(report.contains("\"n_cells\":1"), "the report has its cell");

    // The dashboard of that directory, under a 1 GiB address-space limit.
    let mut serve = Command::new(BIN);
    serve
        .args(["serve", "--listen", "127.0.0.1:0", "--dashboard", "127.0.0.1:0", "--data", data.to_str().unwrap()])
        .env_remove("ARMADA_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    unsafe {
        serve.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut serve = common::Proc(serve.spawn().unwrap());
    let mut lines = BufReader::new(serve.0.stdout.take().unwrap()).lines();
    let grpc = lines.next().unwrap().unwrap();
    let grpc = grpc.split_whitespace().last().unwrap().to_string();
    let dashboard = lines.next().unwrap().unwrap();
    let addr = dashboard.split("://").nth(1).and_then(|r| r.split('/').next()).unwrap().to_string();
    let overview = http_get(&addr, "/api/overview");
    assert!(overview.contains("\"long\""), "{overview}");
    // The first view of a 3-million-step sweep reads its summary twice, a piece at a time:
    // 7.6 s in the dev build alone, longer beside other tests. Its memory is the point.
    let final_table = http_get_within(&addr, "/api/sweeps/long/final", 120);
    assert!(final_table.contains(&format!("\"step\":{STEPS}")), "{final_table}");
    let curves = http_get(&addr, "/api/sweeps/long/curves?metric=value");
    let steps = curves.split("\"step\":[").nth(1).and_then(|r| r.split(']').next()).unwrap_or_default();
    assert_eq!(steps.split(',').count(), armada::page::views::CURVE_POINTS, "{curves:.300}");
    assert!(steps.ends_with(&STEPS.to_string()), "the last step is drawn");
    let jobs = http_get(&addr, "/api/sweeps/long/jobs");
    let key = jobs.split("\"key\":\"").nth(1).and_then(|r| r.split('"').next()).expect(&jobs).to_string();
    let trajectory = http_get(&addr, &format!("/api/sweeps/long/jobs/{key}"));
    let steps = trajectory.split("\"step\":[").nth(1).and_then(|r| r.split(']').next()).unwrap_or_default();
    assert_eq!(steps.split(',').count(), armada::page::views::TRAJECTORY_POINTS, "{trajectory:.300}");
    assert!(http_get(&addr, "/").contains("<html"), "the page");
    // `armada fetch` writes what it receives a chunk at a time: its peak stays near that of
    // fetching a table of a few kilobytes, whatever the size of the file fetched.
    let fetch = |table: &str| {
        let mut command = Command::new(BIN);
        command.args(["fetch", "long", "--table", table, "--coordinator", &grpc, "--out"]);
        command.arg(tmp.path().join(format!("fetched-{table}"))).env_remove("ARMADA_TOKEN");
        let (succeeded, stderr, peak) = run_measured(command, &tmp.path().join(format!("fetch-{table}.err")));
        assert!(succeeded, "armada fetch --table {table}: {stderr}");
        peak
    };
    let base = fetch("final");
    let summary_bytes = std::fs::metadata(data.join("long/summary.parquet")).unwrap().len();
    let peak = fetch("summary");
    assert!(
        peak < base + summary_bytes / 4,
        "fetching {summary_bytes} bytes of summary peaked at {peak} (a final table: {base})"
    );
    let fetched = tmp.path().join("fetched-summary/long/summary.parquet");
    assert!(same_bytes(&fetched, &data.join("long/summary.parquet")), "the summary arrives whole");
    let part = std::fs::read_dir(data.join("long/trajectories")).unwrap().next().unwrap().unwrap().path();
    let part_bytes = std::fs::metadata(&part).unwrap().len();
    let peak = fetch("trajectories");
    assert!(
        peak < base + part_bytes / 2,
        "fetching a part of {part_bytes} bytes peaked at {peak} (a final table: {base})"
    );
    let fetched = tmp.path().join("fetched-trajectories/long/trajectories/fetched-000001.parquet");
    assert!(same_bytes(&fetched, &part), "the part arrives whole");
    // Alive after every view.
    assert!(http_get(&addr, "/api/overview").contains("\"long\""));
    assert!(serve.0.try_wait().unwrap().is_none(), "the coordinator is alive");
}
