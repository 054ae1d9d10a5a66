//! Independent tasks of one iteration (the control sets' optimisations) on a few threads.
//!
//! Each task's result depends only on its own inputs (its random draws are made beforehand,
//! in the sequential order), so a run gives the same numbers on any number of threads.
//! The thread count is the machine's parallelism, capped by `ARMADA_CVS_THREADS` (1 runs
//! every task on the caller's thread).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Threads a job may use: `ARMADA_CVS_THREADS` if set (at least 1), else the machine's.
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let machine = std::thread::available_parallelism().map_or(1, |n| n.get());
        match std::env::var("ARMADA_CVS_THREADS").ok().and_then(|v| v.parse::<usize>().ok()) {
            Some(n) => n.max(1),
            None => machine,
        }
    })
}

/// `f(i)` for every `i < n`, in order; tasks are handed out one at a time (their costs
/// differ: a full set has one sample, a partial set many).
pub fn map<T: Send, F: Fn(usize) -> T + Sync>(n: usize, f: F) -> Vec<T> {
    let workers = threads().min(n);
    if workers <= 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        let out = f(i);
        slots.lock().expect("no task panicked while holding the lock")[i] = Some(out);
    };
    std::thread::scope(|s| {
        for _ in 1..workers {
            s.spawn(work);
        }
        work();
    });
    slots
        .into_inner()
        .expect("no task panicked while holding the lock")
        .into_iter()
        .map(|t| t.expect("every task ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_back_in_order() {
        let out = super::map(37, |i| i * i);
        assert_eq!(out, (0..37).map(|i| i * i).collect::<Vec<_>>());
        assert!(super::map(0, |i| i).is_empty());
    }
}
