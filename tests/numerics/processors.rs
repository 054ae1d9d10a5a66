//! The same bits on any processor, end to end: a sweep whose jobs are shared between a
//! native worker and a worker under qemu's emulation of an older processor gives every
//! trajectory bit for bit as one native run, and each trajectory's provenance says which
//! processor computed it. (tests/numerics/golden.rs recomputes the golden trajectories under every
//! x86-64 level; this is the same promise through the coordinator, as a cluster of mixed
//! processor generations keeps it.)
//!
//! Needs `qemu-x86_64` (Debian: `qemu-user`): without it the test says it is skipped, unless
//! `ARMADA_REQUIRE_QEMU=1` (as `.ci/run` sets).

use crate::common;

use common::cluster::{client, serve, worker, worker_via, write};
use common::{armada, assert_same_trajectory, job_count, jobs, part_files, qemu_present, text, wait_until};
use std::collections::BTreeSet;

/// The emulated processor: x86-64-v2, without AVX, so that the emulated worker runs armada's
/// baseline kernels where this machine's native worker runs their AVX2 or AVX-512 copies.
const EMULATED: (&str, &str) = ("Nehalem", "x86-64-v2");

/// One sweep of the level-set family: GP posteriors (products, Cholesky factors, triangular
/// solves), transcendental functions and their four-lane copies (MILE's normal CDF), normal
/// variates and an eigendecomposition (the GP sample path). Its jobs are long enough (tens of
/// milliseconds natively, seconds emulated) that neither worker leases ahead.
const SWEEP: &str = r#"
name = "processors"
family = "lse"
seeds = 2
horizon = 20
[[benchmarks]]
name = "sinusoidal"
[[benchmarks]]
name = "gp-sample-path"
[[algorithms]]
name = "straddle"
[[algorithms]]
name = "rand-straddle"
[[algorithms]]
name = "lse"
[[algorithms]]
name = "mile"
"#;

#[test]
fn a_sweep_shared_with_an_emulated_processor_equals_one_native_run() {
    if !qemu_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "processors.toml", SWEEP);
    // The reference: the sweep in one native process.
    let local = tmp.path().join("local");
    let out = armada(&["run", sweep.to_str().unwrap(), "--out", local.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    // The emulated worker alone until it has committed a job; then a native one joins, and
    // the emulated one drains (it finishes its running job and hands back those it leased
    // ahead): both serve the sweep, whichever of them is faster.
    let emulated_log = tmp.path().join("emulated.log");
    let mut emulated = worker_via(&["qemu-x86_64", "-cpu", EMULATED.0], &coord.url, 1, &emulated_log, &[], &[]);
    let out = client(&["submit", sweep.to_str().unwrap()], &coord.url, 60);
    assert!(out.status.success(), "{}", text(&out.stderr));
    wait_until(600, "the emulated worker to commit a job", || job_count(&data.join("processors")) >= 1);
    let native_log = tmp.path().join("native.log");
    let _native = worker(&coord.url, 1, &native_log, &[]);
    emulated.sigterm();
    assert!(emulated.wait(600).success(), "{}", std::fs::read_to_string(&emulated_log).unwrap_or_default());
    let out = client(&["watch", "processors", "--quiet"], &coord.url, 1800);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let (shared, native) = (jobs(&data.join("processors")), jobs(&local.join("processors")));
    assert_eq!(native.len(), 16);
    assert_eq!(shared.keys().collect::<Vec<_>>(), native.keys().collect::<Vec<_>>());
    for (key, df) in &shared {
        assert_same_trajectory(df, &native[key], key);
    }
    let mut processors = BTreeSet::new();
    for part in part_files(&data.join("processors")) {
        processors.extend(armada::results::read_provenance(&part).unwrap().into_values().map(|p| p.processor));
    }
    // Both processors computed some of the jobs, and said which they were.
    let native = armada_worker::processor::describe();
    assert!(
        processors.contains(&native),
        "no job from the native {native}: {processors:?}\nnative worker's log:\n{}",
        std::fs::read_to_string(&native_log).unwrap_or_default()
    );
    assert!(
        processors.iter().any(|p| p.ends_with(&format!("({})", EMULATED.1))),
        "no job from the emulated {}: {processors:?}",
        EMULATED.1
    );
}
