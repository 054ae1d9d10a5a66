//! Independent tasks of one iteration (the control sets' optimisations), on more than one
//! thread only when asked.
//!
//! A job runs on one core: a worker's slots are its cores, and a sweep's throughput comes
//! from jobs side by side (DESIGN, "the job model"). `ARMADA_CVS_THREADS=N` lets one job use
//! N threads, for a machine that runs fewer BO-uCVS jobs than it has cores (one long run on
//! a laptop); give its worker fewer slots. Each task's result depends only on its own
//! inputs (its random draws are made beforehand, in the sequential order), so a run gives
//! the same numbers on any number of threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Threads a job may use: `ARMADA_CVS_THREADS` if set (at least 1), else one.
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("ARMADA_CVS_THREADS").ok().and_then(|v| v.parse::<usize>().ok()).map_or(1, |n| n.max(1))
    })
}

/// `f(i)` for every `i < n`, in order; tasks are handed out one at a time (their costs
/// differ: a full set has one sample, a partial set many).
pub fn map<T: Send, F: Fn(usize) -> T + Sync>(n: usize, f: F) -> Vec<T> {
    map_on(threads(), n, f)
}

/// [`map`] on at most `threads` threads.
fn map_on<T: Send, F: Fn(usize) -> T + Sync>(threads: usize, n: usize, f: F) -> Vec<T> {
    let workers = threads.min(n);
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
        for threads in [1, 3] {
            let out = super::map_on(threads, 37, |i| i * i);
            assert_eq!(out, (0..37).map(|i| i * i).collect::<Vec<_>>());
            assert!(super::map_on(threads, 0, |i| i).is_empty());
        }
        // One thread unless ARMADA_CVS_THREADS asks for more.
        if std::env::var_os("ARMADA_CVS_THREADS").is_none() {
            assert_eq!(super::threads(), 1);
        }
    }
}
