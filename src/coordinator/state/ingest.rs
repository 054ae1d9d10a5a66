//! A submission on its way in, as a pure state machine: it is written to the store a chunk
//! at a time, then added to the job table a chunk at a time, then committed, so that a
//! large sweep never holds the scheduler (other commands are served between steps). Until
//! the commit nothing of it is visible or leasable: its rows belong to an uncommitted
//! generation, which a coordinator that dies meanwhile drops at start-up, and its jobs sit
//! in the table after `first`, in no sweep or queue. A failed step cuts the table back.
//!
//! The scheduler carries out each [`Step`] (the store's writes) and, after the commit, makes
//! the submission the sweep (`Sweeps::submitted`).

use super::job_table::JobTable;
use super::jobs::Plan;
use super::jobs::{Job, JobIndex, Key, NewJob, Template};
use super::stored::{JobState, SpecTemplate, StoredJob};
use armada_proto::ids::SweepId;
use std::collections::HashSet;
use std::sync::Arc;

/// A submission being stored.
pub struct Ingest {
    pub name: String,
    pub family: String,
    templates: Vec<Arc<Template>>,
    /// Each template's spec as the store keeps it ([`SpecTemplate::encode`]).
    stored_templates: Vec<Vec<u8>>,
    /// Its jobs in run order; those the sweep has already are skipped.
    jobs: Vec<NewJob>,
    /// Positions in `jobs` in key order (the order they are stored in).
    by_key: Vec<u32>,
    /// Keys of jobs whose trajectories are on disk already: they are added `done`.
    on_disk: HashSet<Key>,
    /// What the sweep has (its job count, keys, and the jobs this submission drops).
    plan: Plan,
    /// How many of `by_key` are stored, then of `jobs` in the table.
    stored: usize,
    applied: usize,
    /// Where its jobs start in the table.
    pub first: JobIndex,
}

/// What the scheduler does next for a submission being stored.
#[derive(Debug)]
pub enum Step {
    /// Write these jobs to the store, in the submission's generation.
    Write(Vec<StoredJob>),
    /// Jobs were added to the table; nothing to write.
    Added,
    /// Everything is stored and in the table: commit the generation, dropping these keys
    /// of the sweep's previous jobs; then the submission is the sweep.
    Commit(Vec<String>),
}

impl Ingest {
    /// A submission of `jobs` (in run order, `by_key` their key order) to sweep `name`,
    /// whose current state `plan` gives, with the jobs of `on_disk` done already; its jobs
    /// go into the table from index `first`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        family: String,
        templates: Vec<Arc<Template>>,
        jobs: Vec<NewJob>,
        by_key: Vec<u32>,
        plan: Plan,
        on_disk: HashSet<Key>,
        first: JobIndex,
    ) -> Self {
        let stored_templates = templates.iter().map(|t| SpecTemplate::encode(&t.spec)).collect();
        Ingest { name, family, templates, stored_templates, jobs, by_key, on_disk, plan, stored: 0, applied: 0, first }
    }

    /// The jobs of the sweep this submission drops.
    pub fn removed(&self) -> &[JobIndex] {
        &self.plan.removed
    }

    /// The next step, over at most `chunk` jobs; jobs enter `table` as sweep `sweep`.
    pub fn step(&mut self, table: &mut JobTable, sweep: &SweepId, chunk: usize) -> Step {
        let n = self.jobs.len();
        if self.stored < n {
            let end = (self.stored + chunk).min(n);
            let rows = self.by_key[self.stored..end]
                .iter()
                .map(|&k| (k as usize, &self.jobs[k as usize]))
                .filter(|(_, job)| !self.plan.known.contains(&job.key))
                .map(|(k, job)| StoredJob {
                    sweep_id: sweep.clone(),
                    key: job.key.to_string(),
                    // Known jobs leave gaps: positions only order the sweep's jobs.
                    ord: (self.plan.base + k) as i64,
                    spec: SpecTemplate::with_seed(&self.stored_templates[job.template as usize], job.seed),
                    state: self.first_state(job),
                    attempts: 0,
                    error: None,
                })
                .collect();
            self.stored = end;
            Step::Write(rows)
        } else if self.applied < n {
            let end = (self.applied + chunk).min(n);
            for job in &self.jobs[self.applied..end] {
                if !self.plan.known.contains(&job.key) {
                    let template = self.templates[job.template as usize].clone();
                    table.push(Job::new(sweep.clone(), template, job.seed, job.key, self.first_state(job)));
                }
            }
            self.applied = end;
            Step::Added
        } else {
            Step::Commit(self.plan.removed.iter().map(|&i| table.job(i).key.to_string()).collect())
        }
    }

    /// How many jobs it added to the table so far.
    pub fn n_added(&self, table: &JobTable) -> usize {
        table.len() - self.first.get()
    }

    fn first_state(&self, job: &NewJob) -> JobState {
        if self.on_disk.contains(&job.key) {
            JobState::Done
        } else {
            JobState::Queued
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::job_table::Policy;
    use super::*;
    use crate::testing::Gen;
    use armada_core::JobSpec;
    use std::collections::BTreeSet;
    use std::time::Duration;

    fn key(k: u64) -> Key {
        Key::parse(&format!("{k:032x}")).unwrap()
    }

    /// Seven jobs in run order with keys 6, 5, ..., 0; the sweep has 2 jobs already (keys 100,
    /// 101; it drops 101) and knows key 3; key 4's trajectory is on disk.
    #[test]
    fn a_submission_is_stored_in_key_order_then_added_in_run_order_then_committed() {
        let mut table =
            JobTable::new(Policy { lease_ttl: Duration::from_secs(1), max_attempts: 1, retry_job_errors: false });
        let spec = JobSpec::new("f", "b", "a");
        let template = Arc::new(Template::new(spec, "f".into(), 0));
        let sweep: SweepId = "s".into();
        for k in [100, 101] {
            table.push(Job::new(sweep.clone(), template.clone(), k, key(k), JobState::Done));
        }
        let jobs: Vec<NewJob> = (0..7u64).map(|i| NewJob { template: 0, seed: 10 + i, key: key(6 - i) }).collect();
        let by_key: Vec<u32> = (0..7).rev().collect();
        let plan = Plan { base: 2, known: [key(3)].into(), removed: vec![JobIndex::new(1)] };
        let mut ingest = Ingest::new(
            "s".into(),
            "f".into(),
            vec![template.clone()],
            jobs,
            by_key,
            plan,
            [key(4)].into(),
            table.end(),
        );
        let mut stored = Vec::new();
        for _ in 0..3 {
            let Step::Write(rows) = ingest.step(&mut table, &sweep, 3) else { panic!("rows to store first") };
            assert!(rows.len() <= 3);
            stored.extend(rows);
        }
        assert_eq!(table.len(), 2, "nothing enters the table before every job is stored");
        let keys: Vec<String> = stored.iter().map(|r| r.key.clone()).collect();
        let expected: Vec<String> = [0, 1, 2, 4, 5, 6].iter().map(|&k| key(k).to_string()).collect();
        assert_eq!(keys, expected, "key order, the known key skipped");
        for row in &stored {
            let k = u64::from_str_radix(&row.key, 16).unwrap();
            let position = 6 - k as i64;
            assert_eq!(row.ord, 2 + position, "after the sweep's jobs, in run order");
            assert_eq!(SpecTemplate::decode(&row.spec).unwrap().1, 10 + position as u64);
            let state = if k == 4 { JobState::Done } else { JobState::Queued };
            assert_eq!((row.state, row.attempts, row.error.as_deref()), (state, 0, None));
        }
        assert!(matches!(ingest.step(&mut table, &sweep, 3), Step::Added));
        assert!(matches!(ingest.step(&mut table, &sweep, 3), Step::Added));
        assert!(matches!(ingest.step(&mut table, &sweep, 3), Step::Added));
        assert_eq!(ingest.n_added(&table), 6);
        let seeds: Vec<u64> = (2..8).map(|i| table.job(JobIndex::new(i)).seed).collect();
        assert_eq!(seeds, [10, 11, 12, 14, 15, 16], "run order, the known job skipped");
        assert!((2..8).all(|i| !table.is_queued(JobIndex::new(i))), "queued only once the submission is the sweep");
        let Step::Commit(dropped) = ingest.step(&mut table, &sweep, 3) else { panic!("then the commit") };
        assert_eq!(dropped, [key(101).to_string()]);
        assert_eq!(ingest.removed(), [JobIndex::new(1)]);
    }

    /// Random submissions (run order shuffled against key order, some keys known to the
    /// sweep, some on disk, some of the sweep's jobs dropped, any chunk size), stepped to
    /// the end: every new job is written once, in key order, before any enters the table;
    /// then each enters once, in run order, in its first state; then one commit drops
    /// exactly the removed keys. The steps are as many as the chunks say.
    #[test]
    fn random_submissions_are_stored_whole_in_key_order_then_added_in_run_order() {
        let spec = JobSpec::new("f", "b", "a");
        let templates: Vec<Arc<Template>> =
            (0..3).map(|id| Arc::new(Template::new(spec.clone(), "f".into(), id))).collect();
        let sweep: SweepId = "s".into();
        let (mut skipped, mut done, mut dropped) = (0, 0, 0);
        for seed in 1..=500u64 {
            let mut rng = Gen::new(seed);
            let context = format!("seed {seed}");
            let mut table =
                JobTable::new(Policy { lease_ttl: Duration::from_secs(1), max_attempts: 1, retry_job_errors: false });
            // The sweep as it stands: `base` jobs with keys 1000.., some of them dropped.
            let base = rng.below(6) as usize;
            for k in 0..base as u64 {
                table.push(Job::new(sweep.clone(), templates[0].clone(), k, key(1000 + k), JobState::Done));
            }
            let removed: Vec<JobIndex> = (0..base).filter(|_| rng.chance(40)).map(JobIndex::new).collect();
            // The submission: n jobs with distinct random keys, in a random run order.
            let n = rng.below(40) as usize;
            let mut keys = BTreeSet::new();
            while keys.len() < n {
                keys.insert(rng.below(500));
            }
            let mut run_order: Vec<u64> = keys.iter().copied().collect();
            for i in (1..run_order.len()).rev() {
                run_order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let jobs: Vec<NewJob> =
                run_order.iter().map(|&k| NewJob { template: (k % 3) as u32, seed: 7 * k, key: key(k) }).collect();
            let mut by_key: Vec<u32> = (0..n as u32).collect();
            by_key.sort_by_key(|&i| jobs[i as usize].key);
            let known: HashSet<Key> = run_order.iter().filter(|_| rng.chance(25)).map(|&k| key(k)).collect();
            let on_disk: HashSet<Key> = run_order.iter().filter(|_| rng.chance(25)).map(|&k| key(k)).collect();
            let fresh: Vec<u64> = run_order.iter().copied().filter(|&k| !known.contains(&key(k))).collect();
            skipped += n - fresh.len();
            done += fresh.iter().filter(|&&k| on_disk.contains(&key(k))).count();
            dropped += removed.len();
            let plan = Plan { base, known: known.clone(), removed: removed.clone() };
            let mut ingest = Ingest::new(
                "s".into(),
                "f".into(),
                templates.clone(),
                jobs,
                by_key,
                plan,
                on_disk.clone(),
                JobIndex::new(base),
            );
            let chunk = 1 + rng.below(12) as usize;
            let (mut rows, mut writes, mut adds) = (Vec::new(), 0, 0);
            let dropped_keys = loop {
                match ingest.step(&mut table, &sweep, chunk) {
                    Step::Write(written) => {
                        assert_eq!(adds, 0, "{context}: a write after the table was touched");
                        assert_eq!(table.len(), base, "{context}: a job entered the table before all were stored");
                        writes += 1;
                        rows.extend(written);
                    }
                    Step::Added => adds += 1,
                    Step::Commit(keys) => break keys,
                }
                assert!(writes + adds <= 2 * n.div_ceil(chunk), "{context}: too many steps");
            };
            assert_eq!((writes, adds), (n.div_ceil(chunk), n.div_ceil(chunk)), "{context}: one step per chunk");
            // Written: the fresh jobs, once each, in key order, placed after the sweep's.
            let mut fresh_by_key = fresh.clone();
            fresh_by_key.sort();
            let written: Vec<String> = rows.iter().map(|r| r.key.clone()).collect();
            let expected: Vec<String> = fresh_by_key.iter().map(|&k| key(k).to_string()).collect();
            assert_eq!(written, expected, "{context}: stored rows");
            for row in &rows {
                let k = u64::from_str_radix(&row.key, 16).unwrap();
                let position = run_order.iter().position(|&r| r == k).unwrap();
                let state = if on_disk.contains(&key(k)) { JobState::Done } else { JobState::Queued };
                assert_eq!((row.ord, row.state, row.attempts), ((base + position) as i64, state, 0), "{context}");
                assert_eq!(SpecTemplate::decode(&row.spec).unwrap().1, 7 * k, "{context}: seed of {k}");
            }
            // Added: the same jobs, in run order, none queued yet.
            assert_eq!(ingest.n_added(&table), fresh.len(), "{context}");
            for (i, &k) in fresh.iter().enumerate() {
                let job = table.job(JobIndex::new(base + i));
                let state = if on_disk.contains(&key(k)) { JobState::Done } else { JobState::Queued };
                assert_eq!((job.key, job.seed, job.state, job.template.id), (key(k), 7 * k, state, (k % 3) as usize));
                assert!(!table.is_queued(JobIndex::new(base + i)), "{context}: queued before the commit");
            }
            let expected: Vec<String> = removed.iter().map(|&i| key(1000 + i.get() as u64).to_string()).collect();
            assert_eq!(dropped_keys, expected, "{context}: the commit drops");
        }
        // The cases reach each branch (floors chosen, not measured).
        assert!(skipped > 500 && done > 500 && dropped > 300, "{skipped} known, {done} on disk, {dropped} dropped");
    }
}
