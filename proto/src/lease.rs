//! How many jobs a worker holds leased: the rule both sides obey, the worker when it asks
//! and the coordinator when it caps what one session may take.

use std::time::Duration;

/// Jobs that take less than this are short: the worker then leases ahead, keeping about
/// [`AHEAD_WORK`] of them per slot waiting (at most [`PREFETCH_PER_SLOT`]), so that a lease
/// RPC serves many jobs and a slot never waits for one. Long jobs are leased one per free
/// slot, so the end of a sweep stays balanced. Whether a sweep's jobs are short is measured
/// per sweep, by the worker.
pub const SHORT_JOB: Duration = Duration::from_millis(250);
/// The most jobs a slot holds leased ahead of the one it runs: deep enough that jobs of a
/// few microseconds do not drain it during a lease's round trip (at 64 the workers waited;
/// docs/performance.md).
pub const PREFETCH_PER_SLOT: usize = 512;
/// The most short jobs run as one batch (what a slot holds ahead beyond it waits for the
/// next batch): a batch keeps its jobs' records until their commit.
pub const BATCH_MOST: usize = 64;
/// The work a slot holds leased ahead, by the sweep's mean job length: 512 jobs of a few
/// microseconds (a lease per a few hundred jobs), but 2 of 40 ms, so that at a sweep's end no
/// worker holds seconds of jobs while another idles. Short jobs waiting run in batches of up
/// to [`BATCH_MOST`]: one task and one call on the blocking pool for all of them, their
/// records kept for their commits (no task, channel or thread hand-off per job).
pub const AHEAD_WORK: Duration = Duration::from_millis(100);

/// How many jobs that take `mean` each a slot holds leased ahead: about [`AHEAD_WORK`] of
/// them when they are short (at most [`PREFETCH_PER_SLOT`]), else none.
pub fn ahead_per_slot(mean: Duration) -> usize {
    if mean >= SHORT_JOB {
        return 0;
    }
    let n = AHEAD_WORK.as_nanos() / mean.as_nanos().max(1);
    (n as usize).clamp(1, PREFETCH_PER_SLOT)
}

/// The most jobs a session of `slots` slots holds leased at once (one slot when it did not
/// say): one running per slot and the prefetch depth of short jobs behind each. The
/// coordinator grants no more whatever the worker asks, so that one session cannot take a
/// whole sweep's queue.
pub fn most_leased(slots: u32) -> u32 {
    let most = u64::from(slots.max(1)) * (1 + PREFETCH_PER_SLOT as u64);
    most.min(u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_jobs_are_leased_about_a_tenth_of_a_second_ahead_and_long_ones_not_at_all() {
        assert_eq!(ahead_per_slot(Duration::from_micros(5)), PREFETCH_PER_SLOT, "capped");
        assert_eq!(ahead_per_slot(Duration::from_millis(40)), 2, "100 ms is two 40 ms jobs");
        assert_eq!(ahead_per_slot(Duration::from_millis(200)), 1, "at least one while short");
        assert_eq!(ahead_per_slot(SHORT_JOB), 0);
        assert_eq!(most_leased(0), 513, "a session that did not say has one slot");
        assert_eq!(most_leased(3), 3 * 513);
        assert_eq!(most_leased(u32::MAX), u32::MAX, "saturates");
    }

    /// The Python SDK's worker obeys the same rule: its constants are these.
    #[test]
    fn the_python_workers_lease_depth_is_this_one() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../workers/python/armada_sdk/session.py");
        let text = std::fs::read_to_string(path).unwrap();
        let rule = [
            ("SHORT_JOB_NS = ", SHORT_JOB.as_nanos()),
            ("AHEAD_WORK_NS = ", AHEAD_WORK.as_nanos()),
            ("PREFETCH_PER_SLOT = ", PREFETCH_PER_SLOT as u128),
            ("BATCH_MOST = ", BATCH_MOST as u128),
        ];
        for (assignment, value) in rule {
            let found = text.lines().find_map(|l| l.strip_prefix(assignment));
            let found = found.unwrap_or_else(|| panic!("worker.py assigns no {assignment:?}"));
            assert_eq!(found.replace('_', "").parse::<u128>().ok(), Some(value), "worker.py's {assignment}{found}");
        }
    }
}
