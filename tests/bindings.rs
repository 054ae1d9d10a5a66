//! armada-bindings (workers/bindings) from Python: built with maturin into a venv the test
//! makes, then its own tests (numpy reimplementations of LSE methods equal to the built-in
//! ones bit for bit, the benchmarks' instances, streams and metrics, errors) and its
//! benchmark script, which must print one row per workload with the same trajectory.

mod common;

use common::text;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The python of a venv with the bindings' test requirements and the module built into it
/// (once per run of this binary, so that what is tested is this checkout's code).
fn bindings_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let crate_dir = common::manifest_dir().join("workers/bindings");
        let python = common::python_venv("venv-bindings", &crate_dir.join("requirements-test.txt"));
        let venv = python.parent().unwrap().parent().unwrap();
        // Its own target directory: `cargo test` holds the workspace's while tests run, and
        // a build there would wait for it forever.
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bindings-target");
        let built = Command::new(venv.join("bin").join("maturin"))
            .arg("develop")
            .current_dir(&crate_dir)
            .env("VIRTUAL_ENV", venv)
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        assert!(built.status.success(), "maturin develop in workers/bindings:\n{}", text(&built.stderr));
        python
    })
}

#[test]
fn the_bindings_pass_their_own_tests() {
    common::pytest_passes(bindings_python(), &common::manifest_dir().join("workers/bindings/tests"));
}

/// The cost benchmark runs as documented: each workload's numpy method gave the built-in's
/// trajectory, and its ratio is a number.
#[test]
fn the_cost_benchmark_prints_a_ratio_per_workload() {
    let examples = common::manifest_dir().join("workers/bindings/examples");
    let out = Command::new(bindings_python())
        .arg(examples.join("bench.py"))
        .args(["--horizon", "20", "--rounds", "1"])
        .current_dir(&examples)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 7, "{stdout}");
    for row in rows {
        assert_eq!(row.split_whitespace().nth(2), Some("yes"), "{stdout}");
        let ratio: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{row}");
    }
}
