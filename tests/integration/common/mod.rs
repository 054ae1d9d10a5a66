//! Helpers shared by the end-to-end tests: running the real binary, reading trajectory
//! parts, and comparing trajectories.
#![allow(dead_code)]

pub mod cluster;
pub mod net;

use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// This checkout's root, read when the test runs: cargo reuses a test binary built from
/// another checkout of the same sources when both share a target directory, and
/// `env!("CARGO_MANIFEST_DIR")` would then still name that other checkout.
pub fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), std::path::PathBuf::from)
}

pub fn armada(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_armada"))
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .expect("the armada binary runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The trajectory part files of a sweep directory (none if it has no `trajectories/`).
pub fn part_files(sweep_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sweep_dir.join("trajectories")) else { return Vec::new() };
    let mut parts: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    parts.sort();
    parts
}

/// The jobs of one part file, by key, read from its rows alone (not its footer index):
/// each job must be one contiguous run of rows.
pub fn jobs_in(path: &Path) -> BTreeMap<String, DataFrame> {
    let df = read(path);
    let keys: Vec<String> =
        df.column("job_key").unwrap().str().unwrap().iter().map(|k| k.unwrap().to_owned()).collect();
    let mut jobs = BTreeMap::new();
    let mut start = 0;
    for i in 1..=keys.len() {
        if i == keys.len() || keys[i] != keys[start] {
            let run = df.slice(start as i64, i - start);
            assert!(
                jobs.insert(keys[start].clone(), run).is_none(),
                "{}: job {} is split",
                path.display(),
                keys[start]
            );
            start = i;
        }
    }
    jobs
}

/// Every committed job of a sweep directory, by key; a job in two files fails the test.
pub fn jobs(sweep_dir: &Path) -> BTreeMap<String, DataFrame> {
    let mut all = BTreeMap::new();
    for path in part_files(sweep_dir) {
        for (key, df) in jobs_in(&path) {
            assert!(all.insert(key.clone(), df).is_none(), "job {key} is stored twice");
        }
    }
    all
}

/// How many jobs are committed under `sweep_dir`.
pub fn job_count(sweep_dir: &Path) -> usize {
    jobs(sweep_dir).len()
}

pub fn read(path: &Path) -> DataFrame {
    let file = std::fs::File::open(path).unwrap();
    ParquetReader::new(file).finish().unwrap()
}

/// A summary table rebuilt from trajectories alone against the coordinator's: every row and
/// column the same, bit for bit, but the job counts, which the rebuild cannot know (the
/// sweep's failures are not in its trajectories) and leaves null.
#[allow(dead_code)]
pub fn assert_rebuilt_summary(rebuilt: &Path, coordinators: &Path) {
    let (rebuilt, theirs) = (read(rebuilt), read(coordinators));
    for name in ["n_jobs", "n_failed"] {
        assert_eq!(rebuilt.column(name).unwrap().null_count(), rebuilt.height(), "{name} of a rebuild");
        assert_eq!(theirs.column(name).unwrap().null_count(), 0, "{name} of the coordinator's");
    }
    let strip = |df: DataFrame| df.drop("n_jobs").unwrap().drop("n_failed").unwrap();
    assert!(strip(rebuilt).equals_missing(&strip(theirs)), "the rebuilt rows differ from the coordinator's");
}

/// Every column but `elapsed_ms`, bit for bit (NaN included).
pub fn assert_same_trajectory(a: &DataFrame, b: &DataFrame, what: &str) {
    assert_eq!(a.get_column_names(), b.get_column_names(), "{what}");
    assert_eq!(a.height(), b.height(), "{what}");
    for col in a.columns() {
        let name = col.name().as_str();
        if name == "elapsed_ms" {
            continue;
        }
        let other = b.column(name).unwrap();
        assert_eq!(col.dtype(), other.dtype(), "{what}: {name}");
        if col.dtype() == &DataType::Float64 {
            let x: Vec<Option<u64>> = col.f64().unwrap().iter().map(|v| v.map(f64::to_bits)).collect();
            let y: Vec<Option<u64>> = other.f64().unwrap().iter().map(|v| v.map(f64::to_bits)).collect();
            assert_eq!(x, y, "{what}: column {name}");
        } else {
            assert!(
                col.as_materialized_series().equals_missing(other.as_materialized_series()),
                "{what}: column {name}"
            );
        }
    }
}

/// Two runs of one sweep (its result directories) agree: the same `n_jobs` jobs, their
/// trajectories bit for bit (elapsed_ms aside), the summary tables byte for byte.
pub fn assert_same_sweep(ours: &Path, theirs: &Path, n_jobs: usize) {
    let (a, b) = (jobs(ours), jobs(theirs));
    assert_eq!(a.len(), n_jobs, "{}", ours.display());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (key, df) in &a {
        assert_same_trajectory(df, &b[key], key);
    }
    for table in ["summary.parquet", "final.parquet"] {
        let read = |dir: &Path| std::fs::read(dir.join(table)).unwrap();
        assert!(read(ours) == read(theirs), "{table} of {} differs from {}'s", ours.display(), theirs.display());
    }
}

/// A child process killed (SIGKILL) when dropped, so a failing test leaves nothing behind.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    pub fn kill9(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }

    pub fn sigterm(&mut self) {
        let status = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status().unwrap();
        assert!(status.success());
    }

    /// Wait for the process to exit, at most `secs`.
    pub fn wait(&mut self, secs: u64) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "process {} did not exit within {secs} s", self.0.id());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether `qemu-x86_64` (Debian: `qemu-user`) is installed; where it is not, the test that
/// asks says it is skipped, unless `ARMADA_REQUIRE_QEMU=1` (as `.ci/run` sets) makes that a
/// failure.
pub fn qemu_present() -> bool {
    let found = Command::new("qemu-x86_64").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("ARMADA_REQUIRE_QEMU").as_deref() != Ok("1"),
            "qemu-x86_64 is missing and ARMADA_REQUIRE_QEMU=1 (Debian: apt-get install qemu-user)"
        );
        eprintln!("SKIPPED: qemu-x86_64 is missing (Debian: qemu-user); see ARMADA_REQUIRE_QEMU");
    }
    found
}

/// Poll `cond` every 50 ms for at most `secs`.
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A command's standard output, once it has succeeded (else the test fails with `what` and
/// both outputs).
pub fn succeeded(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

/// A test that needs to mount (root) cannot, for `why`: it says it is skipped, or fails
/// under `ARMADA_REQUIRE_MOUNT=1` (as `.ci/run` sets).
pub fn mount_refused(why: &str) {
    assert!(
        std::env::var("ARMADA_REQUIRE_MOUNT").as_deref() != Ok("1"),
        "cannot mount ({why}) and ARMADA_REQUIRE_MOUNT=1"
    );
    eprintln!("SKIPPED: cannot mount here ({why}); run as root, see ARMADA_REQUIRE_MOUNT");
}

/// Whether this machine lets a test mount a tmpfs in a mount namespace of its own (root);
/// false after [`mount_refused`].
pub fn can_mount() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let probe = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "mount", "-t", "tmpfs", "armada-probe"])
        .arg(dir.path())
        .output();
    match probe {
        Ok(out) if out.status.success() => true,
        other => {
            mount_refused(&other.map_or_else(|e| e.to_string(), |o| text(&o.stderr)));
            false
        }
    }
}

/// The python of a venv under the target directory with `requirements` installed from the
/// package registry, made on first use (and again when the requirements change). Tests
/// run side by side: one makes it, the others wait.
pub fn python_venv(name: &str, requirements: &Path) -> PathBuf {
    python_venv_of(name, &[requirements])
}

/// [`python_venv`] with the packages of several requirements files.
pub fn python_venv_of(name: &str, requirements: &[&Path]) -> PathBuf {
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let wanted: String = requirements.iter().map(|r| std::fs::read_to_string(r).unwrap()).collect();
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let (python, stamp) = (venv.join("bin").join("python"), venv.join("armada-requirements.txt"));
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).output().expect("python3 runs");
    assert!(
        made.status.success(),
        "python3 -m venv failed (Debian: apt-get install python3-venv):\n{}",
        text(&made.stderr)
    );
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]);
    for r in requirements {
        pip.arg("-r").arg(r);
    }
    let installed = pip.output().unwrap();
    assert!(installed.status.success(), "pip install -r {requirements:?}:\n{}", text(&installed.stderr));
    std::fs::write(&stamp, wanted).unwrap();
    python
}

/// Install the SDK from this checkout's workers/python into the venv of `python` (its
/// dependencies are the venv's already), so that a changed SDK is what is tested; the
/// install writes nothing into the checkout (an out-of-tree build: it works from a
/// read-only one).
pub fn install_sdk(python: &Path) {
    let sdk = manifest_dir().join("workers/python");
    let before = tree(&sdk);
    let installed = Command::new(python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"])
        .args(["--no-build-isolation", "--force-reinstall"])
        .arg(&sdk)
        .output()
        .unwrap();
    assert!(installed.status.success(), "pip install workers/python:\n{}", text(&installed.stderr));
    let after = tree(&sdk);
    let written: Vec<_> = after.iter().filter(|entry| !before.contains(entry)).collect();
    assert!(written.is_empty(), "pip install wrote into the checkout: {written:?}");
}

/// Every file and directory under `dir`, files with their length and modification time,
/// but Python's bytecode caches (the SDK's own tests, running beside, write those, and so
/// change their directories' times).
fn tree(dir: &Path) -> std::collections::BTreeSet<(PathBuf, u64, std::time::SystemTime)> {
    let mut entries = std::collections::BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == "__pycache__") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path.clone());
                entries.insert((path, 0, std::time::UNIX_EPOCH));
            } else {
                entries.insert((path, meta.len(), meta.modified().unwrap()));
            }
        }
    }
    entries
}

/// Run a pytest directory with `python` from a directory of its own (so that the installed
/// package is what is imported, not a checkout's), and require every test to pass: none
/// failed, none skipped.
pub fn pytest_passes(python: &Path, tests: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(tests)
        .current_dir(tmp.path())
        // The tests that start a real coordinator run this build's armada.
        .env("ARMADA_BIN", env!("CARGO_BIN_EXE_armada"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.contains(" passed") && !summary.contains("failed") && !summary.contains("skipped"), "{summary}");
}

/// The name libtest knows the test `name` of `module` (its `module_path!()`) by: its path
/// below the test binary's crate, for running it again in another process.
pub fn test_name(module: &str, name: &str) -> String {
    format!("{}::{name}", module.split_once("::").map_or("", |(_, m)| m))
}

/// Set in a process that [`run_alone`] started: the test it names runs its body there.
pub const ALONE: &str = "ARMADA_TEST_ALONE";

/// Run the test `name` of `module` (its `module_path!()`) again in a process of its own,
/// the only test there, and fail with its output if it fails. For a test that measures what
/// this process and its children hold (getrusage, wait4): beside the binary's other tests,
/// their children and their memory would count too. The test's body runs where
/// `std::env::var_os(ALONE)` is set.
pub fn run_alone(module: &str, name: &str) {
    let test = test_name(module, name);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads", "1"])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test}, run alone:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
