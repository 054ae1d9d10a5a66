//! `/metrics`: the coordinator's state and counters in Prometheus' text format (version
//! 0.0.4). Gauges come from a snapshot of the scheduler's state taken at scrape time,
//! counters from [`Metrics`]. No per-sweep labels: a label per sweep id would grow without
//! bound on a coordinator that lives for months.

use crate::coordinator::state::metrics::{Metrics, COMMIT_BUCKETS};
use crate::coordinator::state::replies::SweepState;
use crate::coordinator::state::trouble::Place;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

/// The gauges, read from the scheduler when the page is scraped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gauges {
    /// Jobs of every sweep: queued, leased (ahead, not started), running, done, failed,
    /// cancelled.
    pub jobs: [u64; 6],
    /// Sweeps, indexed as `SweepState::ALL`.
    pub sweeps: [u64; 3],
    /// Workers heard from within a lease's lifetime, and the others.
    pub workers_alive: u64,
    pub workers_lost: u64,
    /// Job slots of the live workers, and the attempts leased (to any worker).
    pub slots: u64,
    pub leases: u64,
    /// Bytes of the SQLite store (its database and write-ahead log).
    pub store_bytes: u64,
}

pub const JOB_STATES: [&str; 6] = ["queued", "leased", "running", "done", "failed", "cancelled"];

/// The page.
pub fn render(gauges: &Gauges, metrics: &Metrics) -> String {
    let mut out = String::new();
    let o = &mut out;
    header(o, "armada_jobs", "gauge", "Jobs of every sweep, by state.");
    for (state, n) in JOB_STATES.iter().zip(gauges.jobs) {
        let _ = writeln!(o, "armada_jobs{{state=\"{state}\"}} {n}");
    }
    header(o, "armada_sweeps", "gauge", "Sweeps, by state.");
    for (state, n) in SweepState::ALL.iter().map(|s| s.as_str()).zip(gauges.sweeps) {
        let _ = writeln!(o, "armada_sweeps{{state=\"{state}\"}} {n}");
    }
    let simple: [(&str, &str, &str, u64); 13] = [
        ("armada_workers", "gauge", "Workers heard from within a lease's lifetime.", gauges.workers_alive),
        ("armada_workers_lost", "gauge", "Registered workers silent for longer than a lease.", gauges.workers_lost),
        ("armada_worker_slots", "gauge", "Job slots of the live workers.", gauges.slots),
        ("armada_leases", "gauge", "Attempts leased to workers and not ended.", gauges.leases),
        ("armada_store_bytes", "gauge", "Bytes of the SQLite store (database and WAL).", gauges.store_bytes),
        ("armada_attempts_started_total", "counter", "Attempts leased.", metrics.attempts_started.load(Relaxed)),
        (
            "armada_retries_total",
            "counter",
            "Failed or expired attempts whose job was queued again.",
            metrics.retries.load(Relaxed),
        ),
        (
            "armada_leases_expired_total",
            "counter",
            "Leases that ran out without a heartbeat (their attempts count as failed).",
            metrics.leases_expired.load(Relaxed),
        ),
        (
            "armada_records_received_total",
            "counter",
            "Step records received from workers.",
            metrics.records_received.load(Relaxed),
        ),
        (
            "armada_rows_committed_total",
            "counter",
            "Trajectory rows written into parts.",
            metrics.rows_committed.load(Relaxed),
        ),
        ("armada_jobs_committed_total", "counter", "Jobs written into parts.", metrics.jobs_committed.load(Relaxed)),
        ("armada_parts_written_total", "counter", "Trajectory parts written.", metrics.parts_written.load(Relaxed)),
        (
            "armada_parts_failed_total",
            "counter",
            "Trajectory parts that could not be written.",
            metrics.parts_failed.load(Relaxed),
        ),
    ];
    for (name, kind, help, value) in simple {
        header(o, name, kind, help);
        let _ = writeln!(o, "{name} {value}");
    }
    header(o, "armada_write_failures_total", "counter", "Writes that failed: the store's, parts', backups'.");
    for (kind, n) in metrics.writes.failures() {
        let _ = writeln!(o, "armada_write_failures_total{{place=\"{kind}\"}} {n}");
    }
    let failing = metrics.writes.current();
    let help = "Places whose writes fail now: the store (0 or 1), sweeps' parts, the backups (0 or 1).";
    header(o, "armada_writes_failing", "gauge", help);
    for kind in Place::KINDS {
        let n = failing.iter().filter(|t| t.place.kind() == kind).count();
        let _ = writeln!(o, "armada_writes_failing{{place=\"{kind}\"}} {n}");
    }
    let last = metrics.writes.last_failure().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let help = "When a write last failed (Unix seconds; 0: never).";
    header(o, "armada_last_write_failure_timestamp_seconds", "gauge", help);
    let _ = writeln!(o, "armada_last_write_failure_timestamp_seconds {}", last.map_or(0.0, |d| d.as_secs_f64()));
    header(o, "armada_attempts_ended_total", "counter", "Attempts ended, by outcome.");
    for (outcome, n) in metrics.attempts_ended() {
        let _ = writeln!(o, "armada_attempts_ended_total{{outcome=\"{outcome}\"}} {n}");
    }
    let name = "armada_commit_latency_seconds";
    header(o, name, "histogram", "From an attempt's commit request to its answer (linger, part write, store).");
    let latency = metrics.commit_latency();
    let bounds = COMMIT_BUCKETS.iter().map(|b| b.to_string()).chain(["+Inf".to_string()]);
    for (bound, n) in bounds.zip(&latency.cumulative) {
        let _ = writeln!(o, "{name}_bucket{{le=\"{bound}\"}} {n}");
    }
    let _ = writeln!(o, "{name}_sum {}", latency.sum_seconds);
    let _ = writeln!(o, "{name}_count {}", latency.cumulative.last().copied().unwrap_or(0));
    out
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::state::stored::AttemptOutcome;
    use std::time::Duration;

    /// Every sample line of the page, as (name with labels, value).
    fn samples(page: &str) -> Vec<(String, f64)> {
        page.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (name, value) = l.rsplit_once(' ').unwrap();
                (name.to_string(), value.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn the_page_is_well_formed_text_with_every_family_typed_once() {
        let metrics = Metrics::default();
        metrics.attempts_started.fetch_add(7, Relaxed);
        metrics.attempt_ended(AttemptOutcome::Committed);
        metrics.attempt_ended(AttemptOutcome::Dropped);
        metrics.commit_answered(Duration::from_millis(300));
        let at = |s| std::time::UNIX_EPOCH + Duration::from_secs(s);
        metrics.writes.failed(Place::Store, "database or disk is full", at(1_000));
        metrics.writes.failed(Place::Parts("a".into()), "no space left on device", at(1_001));
        metrics.writes.failed(Place::Parts("b".into()), "no space left on device", at(1_002));
        metrics.writes.succeeded(&Place::Parts("a".into()));
        let gauges = Gauges {
            jobs: [1, 6, 2, 3, 4, 5],
            sweeps: [1, 0, 2],
            workers_alive: 2,
            slots: 4,
            leases: 2,
            ..Gauges::default()
        };
        let page = render(&gauges, &metrics);
        let s = samples(&page);
        let get = |name: &str| s.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name} in\n{page}")).1;
        assert_eq!(get("armada_jobs{state=\"failed\"}"), 4.0);
        assert_eq!(get("armada_jobs{state=\"leased\"}"), 6.0);
        assert_eq!(get("armada_sweeps{state=\"cancelled\"}"), 2.0);
        assert_eq!(get("armada_attempts_started_total"), 7.0);
        assert_eq!(get("armada_attempts_ended_total{outcome=\"dropped\"}"), 1.0);
        assert_eq!(get("armada_worker_slots"), 4.0);
        assert_eq!(get("armada_commit_latency_seconds_bucket{le=\"0.25\"}"), 0.0);
        assert_eq!(get("armada_commit_latency_seconds_bucket{le=\"0.5\"}"), 1.0);
        assert_eq!(get("armada_commit_latency_seconds_bucket{le=\"+Inf\"}"), 1.0);
        assert_eq!(get("armada_commit_latency_seconds_count"), 1.0);
        assert!((get("armada_commit_latency_seconds_sum") - 0.3).abs() < 1e-9);
        assert_eq!(get("armada_write_failures_total{place=\"store\"}"), 1.0);
        assert_eq!(get("armada_write_failures_total{place=\"parts\"}"), 2.0);
        assert_eq!(get("armada_writes_failing{place=\"store\"}"), 1.0);
        assert_eq!(get("armada_writes_failing{place=\"parts\"}"), 1.0, "a's parts were written since");
        assert_eq!(get("armada_last_write_failure_timestamp_seconds"), 1_002.0);
        // Each family has one HELP and one TYPE line, before its samples, and every sample
        // belongs to the family typed last.
        let mut typed = Vec::new();
        let mut current = String::new();
        for line in page.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                current = rest.split(' ').next().unwrap().to_string();
                assert!(!typed.contains(&current), "{current} typed twice");
                typed.push(current.clone());
            } else if !line.starts_with('#') {
                assert!(line.starts_with(&current), "{line} outside its family {current}");
            }
        }
        assert_eq!(typed.len(), 20);
        // The gauges index sweeps by `state as usize`: ALL must be in declaration order.
        assert!(SweepState::ALL.iter().enumerate().all(|(i, &s)| s as usize == i));
    }
}
