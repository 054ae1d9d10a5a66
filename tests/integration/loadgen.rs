//! A CI-sized run of `armada loadgen`: 200 simulated sessions of 8 slots each run 20,000
//! jobs of 10 to 30 ms against a real coordinator. Every job must be committed exactly
//! once with every row, no session's attempt expired while it ran, and the calls' 99th
//! percentiles stay within bounds loose enough for a loaded 2-core machine (the capacity
//! figures themselves are measured by hand, docs/performance.md).

use crate::common;

use common::cluster::BIN;
use common::text;
use std::process::Command;

#[test]
fn two_hundred_sessions_commit_every_job_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("report.json");
    let jobs = 20_000;
    let out = Command::new(BIN)
        .args(["loadgen", "--sessions", "200", "--slots", "8", "--steps", "10", "--job-ms", "10..30"])
        .args(["--jobs", &jobs.to_string(), "--data"])
        .arg(tmp.path().join("data"))
        .arg("--json")
        .arg(&json)
        .env_remove("ARMADA_TOKEN")
        .output()
        .unwrap();
    let printed = text(&out.stdout);
    assert!(out.status.success(), "{printed}\n{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let number = |path: &[&str]| {
        path.iter().fold(&report, |v, k| &v[*k]).as_f64().unwrap_or_else(|| panic!("{path:?} in {report}"))
    };
    assert_eq!(number(&["jobs_in_parts"]), jobs as f64, "{printed}");
    assert_eq!((number(&["duplicated"]), number(&["wrong_rows"])), (0.0, 0.0), "{printed}");
    assert_eq!(number(&["abandoned"]), 0.0, "no attempt expired while its session ran it: {printed}");
    assert_eq!(number(&["not_committed"]), 0.0, "{printed}");
    assert_eq!(number(&["heartbeats_shared"]), 0.0, "every session heartbeats on its own connection: {printed}");
    for call in ["lease", "complete", "heartbeat"] {
        assert!(number(&[call, "calls"]) > 0.0, "{call}: {printed}");
    }
    assert!(number(&["heartbeat", "p99_ms"]) < 5_000.0, "{printed}");
    assert!(number(&["lease", "p99_ms"]) < 5_000.0, "{printed}");
    assert!(number(&["complete", "p99_ms"]) < 10_000.0, "{printed}");
    assert!(number(&["coordinator_cpu_us_per_job"]) > 0.0, "the coordinator's CPU is read: {printed}");
    assert!(number(&["store_bytes_per_job"]) > 0.0, "{printed}");
    assert!(printed.contains("exactly once      yes (20000 jobs in parts"), "{printed}");
}
