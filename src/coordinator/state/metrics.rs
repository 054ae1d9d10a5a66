//! The coordinator's counters, for the Prometheus text at `/metrics` (see
//! [`super::super::surface::dashboard::prometheus`]).
//!
//! Counters only go up and are bumped where the thing happens: attempts by the scheduler
//! as it carries out the table's effects, records by the upload streams, parts and commit
//! latency by the committer. Gauges (jobs by state, workers, store size) are not kept here:
//! they are read when the page is scraped, from the scheduler's own state.

use super::stored::AttemptOutcome;
use super::trouble::WriteTroubles;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds (seconds) of the commit latency histogram's buckets: from a group commit of
/// trivial jobs (the 200 ms linger) to a slow disk.
pub const COMMIT_BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// Shared by the scheduler, the committer and the services; cheap to bump.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Attempts leased to workers.
    pub attempts_started: AtomicU64,
    /// Attempts that failed and whose job was queued again.
    pub retries: AtomicU64,
    /// Leases that ran out without a heartbeat (their attempts end as `failed`).
    pub leases_expired: AtomicU64,
    /// Records received from workers (uploaded or inline with a commit).
    pub records_received: AtomicU64,
    /// Trajectory rows and jobs written into parts, and the parts.
    pub rows_committed: AtomicU64,
    pub jobs_committed: AtomicU64,
    pub parts_written: AtomicU64,
    pub parts_failed: AtomicU64,
    /// Ended attempts by outcome (`committed`, `failed`, `dropped`, `released`, `unwritten`): few keys.
    attempts_ended: Mutex<BTreeMap<&'static str, u64>>,
    commit_latency: Histogram,
    /// Writes of the store and of parts that fail now, and every failure counted.
    pub writes: Arc<WriteTroubles>,
}

impl Metrics {
    pub fn attempt_ended(&self, outcome: AttemptOutcome) {
        *self.attempts_ended.lock().unwrap_or_else(|e| e.into_inner()).entry(outcome.as_str()).or_default() += 1;
    }

    /// Ended attempts by outcome, sorted by outcome.
    pub fn attempts_ended(&self) -> Vec<(&'static str, u64)> {
        self.attempts_ended.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// A commit was answered `latency` after its attempt asked to commit.
    pub fn commit_answered(&self, latency: Duration) {
        self.commit_latency.observe(latency.as_secs_f64());
    }

    pub fn commit_latency(&self) -> HistogramSnapshot {
        self.commit_latency.snapshot()
    }
}

/// A fixed-bucket histogram of seconds ([`COMMIT_BUCKETS`]).
#[derive(Debug, Default)]
struct Histogram {
    /// Observations at or below each bucket's bound (not cumulative), then above the last.
    counts: [AtomicU64; COMMIT_BUCKETS.len() + 1],
    /// The sum of the observations, in microseconds (an integer, so that it can be atomic).
    sum_us: AtomicU64,
}

impl Histogram {
    fn observe(&self, seconds: f64) {
        let bucket = COMMIT_BUCKETS.iter().position(|&b| seconds <= b).unwrap_or(COMMIT_BUCKETS.len());
        self.counts[bucket].fetch_add(1, Relaxed);
        self.sum_us.fetch_add((seconds * 1e6).round() as u64, Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = Vec::with_capacity(self.counts.len());
        let mut total = 0;
        for count in &self.counts {
            total += count.load(Relaxed);
            cumulative.push(total);
        }
        HistogramSnapshot { cumulative, sum_seconds: self.sum_us.load(Relaxed) as f64 / 1e6 }
    }
}

/// A histogram as Prometheus shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    /// Observations at or below each of [`COMMIT_BUCKETS`], then the total (`+Inf`).
    pub cumulative: Vec<u64>,
    pub sum_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_counts_each_observation_in_its_bucket_and_cumulates() {
        let m = Metrics::default();
        for ms in [5, 10, 11, 240, 250, 251, 40_000] {
            m.commit_answered(Duration::from_millis(ms));
        }
        let s = m.commit_latency();
        // <= 0.01: 5, 10 ms; <= 0.05: 11; <= 0.25: 240, 250; <= 0.5: 251; above 30 s: 40 s.
        assert_eq!(s.cumulative, vec![2, 3, 3, 5, 6, 6, 6, 6, 6, 6, 7]);
        assert!((s.sum_seconds - 40.767).abs() < 1e-9, "{}", s.sum_seconds);
    }

    #[test]
    fn ended_attempts_are_counted_by_outcome() {
        let m = Metrics::default();
        use AttemptOutcome::*;
        for outcome in [Failed, Committed, Failed, Released] {
            m.attempt_ended(outcome);
        }
        assert_eq!(m.attempts_ended(), vec![("committed", 1), ("failed", 2), ("released", 1)]);
    }
}
