//! The queue of jobs waiting for a lease: one FIFO per family, so that a worker is offered
//! only the jobs of the families it runs, still in the order they were queued across
//! families (each entry carries a sequence number; the front of the queue counts down).
//!
//! A job is in the queue at most once. Entries are not removed when a job is cancelled or
//! committed meanwhile: the scheduler skips them when it pops them.

use super::jobs::JobIndex;
use std::collections::{BTreeSet, HashMap, VecDeque};

#[derive(Default)]
pub struct JobQueue {
    by_family: HashMap<String, VecDeque<(i64, JobIndex)>>,
    /// Sequence numbers of the next entry at the back and at the front.
    back: i64,
    front: i64,
    /// Whether job `i` is queued.
    member: Vec<bool>,
}

impl JobQueue {
    pub fn contains(&self, job: JobIndex) -> bool {
        self.member.get(job.get()).copied().unwrap_or(false)
    }

    fn mark(&mut self, job: JobIndex) -> bool {
        if self.contains(job) {
            return false;
        }
        if self.member.len() <= job.get() {
            self.member.resize(job.get() + 1, false);
        }
        self.member[job.get()] = true;
        true
    }

    /// How many jobs were ever queued (it changes whenever one is).
    pub fn pushed(&self) -> u64 {
        (self.back - self.front) as u64
    }

    /// Queue `job` of `family` last (nothing if it is queued already).
    pub fn push_back(&mut self, job: JobIndex, family: &str) {
        if self.mark(job) {
            let seq = self.back;
            self.back += 1;
            self.family(family).push_back((seq, job));
        }
    }

    /// Queue `jobs` of `family` at the back, in order (one family lookup for them all).
    pub fn extend(&mut self, family: &str, jobs: &[JobIndex]) {
        if let Some(&last) = jobs.iter().max() {
            if self.member.len() <= last.get() {
                self.member.resize(last.get() + 1, false);
            }
        }
        let (mut back, member) = (self.back, &mut self.member);
        let queued = jobs.iter().filter(|&&job| !std::mem::replace(&mut member[job.get()], true)).map(|&job| {
            back += 1;
            (back - 1, job)
        });
        let queue = self.by_family.entry(family.to_string()).or_default();
        queue.extend(queued);
        self.back = back;
    }

    /// Queue `job` of `family` first: a retried job should not wait behind the whole sweep.
    pub fn push_front(&mut self, job: JobIndex, family: &str) {
        if self.mark(job) {
            self.front -= 1;
            let seq = self.front;
            self.family(family).push_front((seq, job));
        }
    }

    fn family(&mut self, family: &str) -> &mut VecDeque<(i64, JobIndex)> {
        if !self.by_family.contains_key(family) {
            self.by_family.insert(family.to_string(), VecDeque::new());
        }
        self.by_family.get_mut(family).expect("inserted")
    }

    /// The earliest queued job of any of `families`.
    pub fn pop(&mut self, families: &BTreeSet<String>) -> Option<JobIndex> {
        let family = families
            .iter()
            .filter_map(|f| self.by_family.get(f).and_then(|q| q.front()).map(|&(seq, _)| (seq, f)))
            .min()?
            .1
            .clone();
        let (_, job) = self.by_family.get_mut(&family)?.pop_front()?;
        self.member[job.get()] = false;
        Some(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(i: usize) -> JobIndex {
        JobIndex::new(i)
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn jobs_come_out_in_queue_order_across_the_families_asked_for() {
        let mut q = JobQueue::default();
        for (job, family) in [(0, "a"), (1, "b"), (2, "a"), (3, "b")] {
            q.push_back(j(job), family);
        }
        q.push_front(j(4), "b");
        q.push_back(j(2), "a");
        assert!(q.contains(j(2)) && !q.contains(j(5)));
        // Only `a`: its own order.
        assert_eq!(q.pop(&set(&["a"])), Some(j(0)));
        // Both: the retried job first, then the rest in order.
        let both = set(&["a", "b"]);
        let order: Vec<usize> = std::iter::from_fn(|| q.pop(&both)).map(JobIndex::get).collect();
        assert_eq!(order, vec![4, 1, 2, 3], "each job once");
        assert_eq!(q.pop(&set(&["a", "c"])), None);
        q.push_back(j(2), "a");
        assert_eq!(q.pop(&set(&["c"])), None, "a family nobody queued");
        assert_eq!(q.pop(&set(&["a"])), Some(j(2)), "popped jobs can be queued again");
    }

    #[test]
    fn extending_queues_in_order_after_what_is_queued_and_skips_queued_jobs() {
        let mut q = JobQueue::default();
        q.push_back(j(0), "a");
        q.push_back(j(1), "b");
        q.extend("a", &[j(2), j(0), j(3)]);
        q.push_back(j(4), "b");
        let both = set(&["a", "b"]);
        let order: Vec<usize> = std::iter::from_fn(|| q.pop(&both)).map(JobIndex::get).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
    }
}
