//! The distributed system with real processes on 127.0.0.1: a coordinator (`armada serve`
//! on a port the OS picks), worker processes, and the CLI clients. Every wait is bounded.
//! By feature: what a run leaves (`results`), processes killed mid-sweep (`kills`), what
//! clients and workers are told (`clients`), the data directory under trouble (`storage`),
//! how workers share a sweep (`leasing`); the helpers they share are here.

use crate::common;

mod clients;
mod kills;
mod leasing;
mod results;
mod storage;

use common::cluster::{client, client_env, http_get, serve, worker, worker_args, write, BIN};
use common::{armada, assert_same_trajectory, job_count, jobs, text, wait_until, Proc};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Every committed job holds steps 0..=horizon exactly once, in order.
fn assert_each_step_once(sweep_dir: &Path, horizon: i64) {
    for (key, df) in jobs(sweep_dir) {
        let steps: Vec<i64> = df.column("step").unwrap().i64().unwrap().into_no_null_iter().collect();
        assert_eq!(steps, (0..=horizon).collect::<Vec<_>>(), "{key}");
    }
}

const LSE_SWEEP: &str = r#"
name = "dist-lse"
family = "lse"
seeds = 3
horizon = 12
[[benchmarks]]
name = "sinusoidal"
[[benchmarks]]
name = "himmelblau"
[[algorithms]]
name = "rand-straddle"
[[algorithms]]
name = "us"
params = { tie_break = "random" }
[[algorithms]]
name = "lse"
"#;

const TWO_CELLS: &str = r#"
name = "two-cells"
family = "testkit"
seeds = 6
horizon = 8
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = [40, 50] }
"#;

/// A Python with analysis/requirements-grpc.txt: a venv under the target directory, made
/// from the package registry on first use and kept while the requirements are unchanged.
fn python_with_grpc() -> PathBuf {
    common::python_venv("venv-grpc", &common::manifest_dir().join("analysis/requirements-grpc.txt"))
}

const SLOW_SWEEP: &str = r#"
name = "slow"
family = "testkit"
seeds = 12
horizon = 10
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = 60 }
"#;

/// (algorithm, step, n, n_jobs, n_failed) of each row of a summary table.
type CountRow = (String, Option<i64>, Option<i64>, Option<i64>, Option<i64>);

fn count_rows(path: &Path) -> Vec<CountRow> {
    let df = common::read(path);
    let ints = |name: &str| -> Vec<Option<i64>> { df.column(name).unwrap().i64().unwrap().iter().collect() };
    let algorithm: Vec<String> =
        df.column("algorithm").unwrap().str().unwrap().iter().map(|a| a.unwrap().to_string()).collect();
    let (step, n, n_jobs, n_failed) = (ints("step"), ints("n"), ints("n_jobs"), ints("n_failed"));
    (0..df.height()).map(|i| (algorithm[i].clone(), step[i], n[i], n_jobs[i], n_failed[i])).collect()
}

const CHAOS_SWEEP: &str = r#"
name = "chaos"
family = "testkit"
seeds = 16
horizon = 6
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = [15, 25] }
"#;

const ROGUE_SWEEP: &str = r#"
name = "rogue"
family = "testkit"
seeds = 3
horizon = 8
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "slow"
params = { ms = 500 }
"#;

/// A tmpfs of `size` mounted at `dir` for the life of the value (unmounted when dropped);
/// `None` when this machine does not let the test mount one (not root), which fails the
/// test under `ARMADA_REQUIRE_MOUNT=1` (as `.ci/run` sets).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", dir.to_str().unwrap()])
            .stderr(Stdio::piped())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs(dir.to_path_buf())),
            other => {
                common::mount_refused(&other.map_or_else(|e| e.to_string(), |o| text(&o.stderr)));
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The value of one sample of a Prometheus page.
fn sample(page: &str, name: &str) -> f64 {
    let line = page.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '));
    line.unwrap_or_else(|| panic!("no {name} in\n{page}")).rsplit(' ').next().unwrap().parse().unwrap()
}

/// A testkit sweep `name` of `seeds` trivial jobs, as a file in `dir`.
fn echo_sweep(dir: &Path, name: &str, seeds: u32) -> PathBuf {
    let body = format!(
        "name = \"{name}\"\nfamily = \"testkit\"\nseeds = {seeds}\nhorizon = 5\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n"
    );
    write(dir, &format!("{name}.toml"), &body)
}

/// Run `sweeps` to completion on a coordinator of `data` started with `args`, with a worker;
/// then stop it with SIGTERM.
fn run_on_coordinator(data: &Path, args: &[&str], sweeps: &[&Path], log: &Path) {
    let mut coord = serve(data, 0, args);
    let _w = worker(&coord.url, 2, log, &[]);
    for sweep in sweeps {
        let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
        assert!(submitted.status.success(), "{}", text(&submitted.stderr));
        let name = sweep.file_stem().unwrap().to_str().unwrap();
        let watched = client(&["watch", name, "--quiet"], &coord.url, 60);
        assert!(watched.status.success(), "{}", text(&watched.stderr));
    }
    coord.proc.sigterm();
    assert!(coord.proc.wait(30).success());
}

/// How many of a sweep's jobs each worker committed (by the provenance in its parts).
fn committed_by_worker(sweep_dir: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut by_worker = std::collections::BTreeMap::<String, usize>::new();
    for part in common::part_files(sweep_dir) {
        for provenance in armada::results::read_provenance(&part).unwrap().into_values() {
            *by_worker.entry(provenance.worker).or_default() += 1;
        }
    }
    by_worker
}
