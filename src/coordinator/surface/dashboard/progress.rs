//! Throughput and ETA of running sweeps, from samples of their settled-job counts.
//!
//! The dashboard samples every sweep's status every [`SAMPLE_EVERY`]; a sweep's rate is
//! the jobs settled (done, failed or cancelled) over the last [`WINDOW`] of samples, so it
//! follows the current pace (a resubmission or a worker joining shows within a minute) and
//! needs nobody to keep a page open. Pure: the caller passes the time.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

pub const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// Samples kept per sweep: a minute's worth.
pub const WINDOW: usize = 31;

/// A sweep's pace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pace {
    /// Jobs settled per second over the window (none before two samples).
    pub jobs_per_second: Option<f64>,
    /// Seconds until every job is settled at that pace (none while the pace is zero).
    pub eta_seconds: Option<f64>,
}

#[derive(Default)]
pub struct Progress {
    samples: HashMap<String, VecDeque<(Instant, u64)>>,
}

impl Progress {
    /// Record that `sweep` had `settled` jobs settled at `at`.
    pub fn sample(&mut self, sweep: &str, settled: u64, at: Instant) {
        let samples = self.samples.entry(sweep.to_string()).or_default();
        // A resubmission can lower the count: the old pace no longer applies.
        if samples.back().is_some_and(|&(_, last)| settled < last) {
            samples.clear();
        }
        samples.push_back((at, settled));
        while samples.len() > WINDOW {
            samples.pop_front();
        }
    }

    /// Forget sweeps that are not in `current` (deleted).
    pub fn retain(&mut self, current: &[&str]) {
        self.samples.retain(|sweep, _| current.contains(&sweep.as_str()));
    }

    /// The pace of `sweep`, with `remaining` jobs still queued or running.
    pub fn pace(&self, sweep: &str, remaining: u64) -> Pace {
        let rate = self.samples.get(sweep).and_then(|s| {
            let (&(t0, n0), &(t1, n1)) = (s.front()?, s.back()?);
            let dt = t1.duration_since(t0).as_secs_f64();
            (dt > 0.0).then(|| (n1 - n0) as f64 / dt)
        });
        let eta = match rate {
            _ if remaining == 0 => Some(0.0),
            Some(r) if r > 0.0 => Some(remaining as f64 / r),
            _ => None,
        };
        Pace { jobs_per_second: rate, eta_seconds: eta }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_is_the_settled_jobs_over_the_window_and_the_eta_follows() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        assert_eq!(p.pace("a", 10), Pace { jobs_per_second: None, eta_seconds: None });
        // 3 jobs a second for 100 s: only the last WINDOW samples (60 s) count.
        for i in 0..50u64 {
            p.sample("a", 3 * 2 * i, t0 + Duration::from_secs(2 * i));
        }
        let pace = p.pace("a", 30);
        assert!((pace.jobs_per_second.unwrap() - 3.0).abs() < 1e-12);
        assert!((pace.eta_seconds.unwrap() - 10.0).abs() < 1e-12);
        // Nothing settles any more: the rate falls, and with it the ETA goes.
        for i in 50..50 + WINDOW as u64 {
            p.sample("a", 294, t0 + Duration::from_secs(2 * i));
        }
        assert_eq!(p.pace("a", 30), Pace { jobs_per_second: Some(0.0), eta_seconds: None });
        assert_eq!(p.pace("a", 0).eta_seconds, Some(0.0));
    }

    #[test]
    fn a_lower_count_restarts_the_window_and_deleted_sweeps_are_forgotten() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        p.sample("a", 100, t0);
        p.sample("a", 200, t0 + Duration::from_secs(10));
        p.sample("a", 5, t0 + Duration::from_secs(12));
        assert_eq!(p.pace("a", 1).jobs_per_second, None);
        p.sample("a", 9, t0 + Duration::from_secs(14));
        assert_eq!(p.pace("a", 1).jobs_per_second, Some(2.0));
        p.retain(&["b"]);
        assert_eq!(p.pace("a", 1).jobs_per_second, None);
    }
}
