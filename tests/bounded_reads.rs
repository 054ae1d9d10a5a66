//! Results read back in bounded memory, whatever a trajectory's length: one job of 3,000,000
//! steps run, summarized and reported by `armada run`, then every view of the dashboard of
//! its data directory served by a coordinator under an address-space limit below what
//! reading its summary whole took (about 1.3 GB). The only test of its binary, so that the
//! peak it measures of the processes it waited for is `armada run`'s (or a worker's).

mod common;

use common::cluster::{http_get, BIN};
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

#[test]
fn a_long_sweep_is_run_reported_and_viewed_in_bounded_memory() {
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
    let _grpc = lines.next().unwrap().unwrap();
    let dashboard = lines.next().unwrap().unwrap();
    let addr = dashboard.split("://").nth(1).and_then(|r| r.split('/').next()).unwrap().to_string();
    let overview = http_get(&addr, "/api/overview");
    assert!(overview.contains("\"long\""), "{overview}");
    let final_table = http_get(&addr, "/api/sweeps/long/final");
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
    // Alive after every view.
    assert!(http_get(&addr, "/api/overview").contains("\"long\""));
    assert!(serve.0.try_wait().unwrap().is_none(), "the coordinator is alive");
}
