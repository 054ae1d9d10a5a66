//! The sweeps as a pure state machine beside the job table: which jobs each sweep holds,
//! whether it is cancelled, announced and summarized, and which generation of live
//! summaries it has. Like [`super::job_table`], it does no I/O and reads no clock. A transition
//! changes the sweeps, and the jobs through the table's own transitions, and returns the
//! [`Effect`]s the scheduler carries out. Where the store must agree first (a submission
//! committed, a sweep cancelled or deleted), the scheduler writes, then applies the
//! transition; a check that can refuse the command ([`Sweeps::plan`],
//! [`Sweeps::deletable`], [`Sweeps::get`]) comes before the write.
//!
//! Invariants, checked over random histories by the property test below:
//! - a job is in the list of the sweep it names and of no other; a dropped job (a
//!   tombstone, [`JobTable::drop_jobs`]) is in none;
//! - a resubmission keeps the jobs whose keys it has, drops the others, and adds each new
//!   key once;
//! - a cancelled sweep has nothing queued or running until it is submitted again;
//! - a sweep is announced once it has nothing queued or running, and once only, until a
//!   resubmission re-arms it.

use super::job_table::{Effect, JobTable};
use super::jobs::base_family;
use super::jobs::{plan_of, Job, JobIndex, Key, Plan, SweepKeys};
use super::replies::{CommandError, JobFailed, JobFilter, JobInfo, SweepCounts, SweepState, SweepStatus};
use super::stored::JobState;
use armada_proto::ids::SweepId;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// One sweep's bookkeeping.
pub struct Sweep {
    /// Its id, shared by its jobs.
    pub id: SweepId,
    /// Its families ([`super::jobs::sweep_families`]).
    pub family: String,
    /// Its jobs' positions in the table, in run order.
    pub jobs: Vec<JobIndex>,
    pub cancelled: bool,
    /// Its summary files hold every settled job (the store's flag).
    pub summarized: bool,
    /// The generation of its live summaries.
    pub generation: u64,
    /// Distinct cells among its jobs.
    pub n_cells: u32,
    /// It was announced finished (re-armed by a resubmission).
    pub announced: bool,
    /// Changes with its job list (a submission), never repeating across sweeps: a plan
    /// made from its keys elsewhere is good only at the revision it was made at.
    pub revision: u64,
    /// A resolving sweep's file: once nothing is queued or running, its round is judged
    /// and the next one added, before it is announced.
    pub source: Option<Arc<str>>,
    /// A resolving sweep's round is being judged, or its next round stored: it is not
    /// finished, though nothing is queued or running.
    pub judging: bool,
}

impl Sweep {
    fn new(id: &str, family: String) -> Sweep {
        Sweep {
            id: id.into(),
            family,
            jobs: Vec::new(),
            cancelled: false,
            summarized: false,
            revision: 0,
            source: None,
            judging: false,
            generation: 0,
            n_cells: 0,
            announced: false,
        }
    }
}

pub use super::job_table::Counts;

/// A sweep of `n_jobs` jobs counted as `c`, as status and progress report it (the leased
/// ahead apart from the running).
fn counts_of(n_jobs: usize, c: Counts) -> SweepCounts {
    SweepCounts {
        n_jobs: n_jobs as u32,
        n_queued: c.queued,
        n_running: c.running - c.leased,
        n_leased: c.leased,
        n_done: c.done,
        n_failed: c.failed,
        n_cancelled: c.cancelled,
    }
}

/// Which failures a status lists: a page, so that a reply stays small.
#[derive(Clone, Copy, Debug)]
pub struct FailurePage {
    pub offset: usize,
    pub limit: usize,
}

impl FailurePage {
    pub const DEFAULT_LIMIT: usize = 100;
    pub const MAX_LIMIT: usize = 10_000;
}

impl Default for FailurePage {
    fn default() -> Self {
        FailurePage { offset: 0, limit: Self::DEFAULT_LIMIT }
    }
}

/// Every sweep, by id.
pub struct Sweeps {
    map: BTreeMap<SweepId, Sweep>,
    /// The last revision given to a sweep ([`Sweep::revision`]).
    revisions: u64,
    /// Where results go: `results_dir/<sweep>/` (reported in statuses, never opened here).
    results_dir: PathBuf,
}

fn no_sweep(id: &str) -> CommandError {
    CommandError::not_found(format!("no sweep `{id}`"))
}

impl Sweeps {
    pub fn new(results_dir: PathBuf) -> Sweeps {
        Sweeps { map: BTreeMap::new(), revisions: 0, results_dir }
    }

    pub fn get(&self, id: &str) -> Result<&Sweep, CommandError> {
        self.map.get(id).ok_or_else(|| no_sweep(id))
    }

    /// The sweep's jobs (none for an unknown sweep).
    pub fn jobs(&self, id: &str) -> &[JobIndex] {
        self.map.get(id).map_or(&[], |s| &s.jobs)
    }

    /// What the dashboard shows of the jobs of sweep `id` that `filter` selects (at most
    /// `limit`, in the sweep's order).
    pub fn job_infos(
        &self,
        id: &str,
        table: &JobTable,
        filter: &JobFilter,
        limit: usize,
    ) -> Result<Vec<JobInfo>, CommandError> {
        self.get(id)?;
        let wanted = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        Ok(self
            .jobs(id)
            .iter()
            .map(|&i| table.job(i))
            .filter(|job| {
                let cell = job.cell();
                wanted(&filter.benchmark, &cell.benchmark)
                    && wanted(&filter.benchmark_params, &cell.benchmark_params)
                    && wanted(&filter.algorithm, &cell.algorithm)
                    && wanted(&filter.algorithm_params, &cell.algorithm_params)
            })
            .take(limit)
            .map(|job| {
                let cell = job.cell();
                JobInfo {
                    key: job.key.to_string(),
                    seed: job.seed,
                    benchmark: cell.benchmark.clone(),
                    benchmark_params: cell.benchmark_params.clone(),
                    algorithm: cell.algorithm.clone(),
                    algorithm_params: cell.algorithm_params.clone(),
                    state: job.state.as_str(),
                    attempts: job.attempts,
                    error: job.error.as_deref().map(str::to_owned),
                }
            })
            .collect())
    }

    pub fn ids(&self) -> impl Iterator<Item = &SweepId> {
        self.map.keys()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The sweep's results directory.
    pub fn dir(&self, id: &str) -> PathBuf {
        self.results_dir.join(id)
    }

    /// A sweep as the store has it, before its jobs are loaded ([`Sweeps::load_job`]).
    pub fn load(&mut self, id: &str, family: String, cancelled: bool, summarized: bool, source: Option<Arc<str>>) {
        self.revisions += 1;
        let sweep = Sweep { cancelled, summarized, source, revision: self.revisions, ..Sweep::new(id, family) };
        self.map.insert(sweep.id.clone(), sweep);
    }

    /// The sweeps (sorted) whose families include one of `references`.
    pub fn using(&self, references: &[String]) -> Vec<String> {
        let uses = |s: &Sweep| s.family.split(' ').any(|r| references.iter().any(|x| x == r));
        let mut ids: Vec<String> = self.map.values().filter(|s| uses(s)).map(|s| s.id.to_string()).collect();
        ids.sort();
        ids
    }

    /// The sweep's id to give a stored job, or `None` if the store has no such sweep.
    pub fn id_of(&self, id: &str) -> Option<SweepId> {
        self.map.get(id).map(|s| s.id.clone())
    }

    /// Job `i`, just loaded into the table, belongs to its sweep.
    pub fn load_job(&mut self, i: JobIndex, table: &JobTable) {
        let sweep = self.map.get_mut(&*table.job(i).sweep).expect("a loaded job's sweep is loaded");
        sweep.jobs.push(i);
    }

    /// Every job is loaded: a sweep with nothing left to run counts as announced (the
    /// previous coordinator did, or would have), but a resolving one: the store cannot
    /// tell its last round from one whose judging, or whose next round's storing, the
    /// previous coordinator did not live to finish, so it is judged again. Answers whether
    /// its summaries must be rebuilt: cut short by the previous coordinator's end, or
    /// unfinished (`files` says its summary files are on disk).
    pub fn loaded(&mut self, id: &str, table: &JobTable, files: bool) -> bool {
        let counts = self.counts(id, table);
        let sweep = self.map.get_mut(id).expect("loaded");
        let rounds_owed = sweep.source.is_some() && !sweep.cancelled;
        sweep.announced = counts.is_finished() && !rounds_owed;
        !(counts.is_finished() && sweep.summarized && files)
    }

    /// A sweep's jobs by state (kept by the table as they change, not counted here).
    pub fn counts(&self, id: &str, table: &JobTable) -> Counts {
        table.counts(id)
    }

    /// The same counted over the sweep's jobs: what the table's counts must equal.
    #[cfg(test)]
    pub fn counted(&self, id: &str, table: &JobTable) -> Counts {
        let mut c = Counts::default();
        for &i in self.jobs(id) {
            c.leased += u32::from(table.job(i).leased_ahead());
            c.committing += u32::from(table.job(i).committing);
            match table.job(i).state {
                JobState::Queued => c.queued += 1,
                JobState::Running => c.running += 1,
                JobState::Done => c.done += 1,
                JobState::Failed => c.failed += 1,
                JobState::Cancelled => c.cancelled += 1,
            }
        }
        c
    }

    /// A sweep's done jobs.
    pub fn done<'a>(&'a self, id: &str, table: &'a JobTable) -> impl Iterator<Item = &'a Job> + 'a {
        self.jobs(id).iter().map(|&i| table.job(i)).filter(|j| j.state == JobState::Done)
    }

    /// A sweep's status with one page of its failures.
    pub fn status(&self, id: &str, page: FailurePage, table: &JobTable) -> Result<SweepStatus, CommandError> {
        let sweep = self.get(id)?;
        let c = self.counts(id, table);
        let state = if sweep.cancelled {
            SweepState::Cancelled
        } else if c.is_finished() && !sweep.judging {
            SweepState::Finished
        } else {
            SweepState::Running
        };
        // Failures are found by a pass over the sweep's jobs, so none is made when the counts
        // say there is none: a watcher that lags asks for a status as often as every
        // event batch, and a million jobs take milliseconds to pass over.
        let wanted = if c.failed == 0 || page.limit == 0 { &[][..] } else { &sweep.jobs[..] };
        let failures: Vec<JobFailed> = wanted
            .iter()
            .map(|&i| table.job(i))
            .filter(|j| j.state == JobState::Failed)
            .skip(page.offset)
            .take(page.limit)
            .map(|j| JobFailed {
                job_key: j.key.to_string(),
                description: j.describe(),
                error: j.error.as_deref().unwrap_or_default().to_string(),
                attempt: j.attempts,
                is_final: true,
            })
            .collect();
        let SweepCounts { n_jobs, n_queued, n_running, n_leased, n_done, n_failed, n_cancelled } =
            counts_of(sweep.jobs.len(), c);
        Ok(SweepStatus {
            sweep_id: sweep.id.clone(),
            family: sweep.family.clone(),
            state,
            n_jobs,
            n_queued,
            n_running,
            n_leased,
            n_done,
            n_failed,
            n_cancelled,
            results_dir: self.dir(id),
            n_failures_omitted: c.failed - failures.len() as u32,
            failures,
            write_troubles: Vec::new(),
        })
    }

    /// Sweep `id`'s counts (None for a sweep not here): O(1), unlike [`Self::status`].
    pub fn sweep_counts(&self, id: &str, table: &JobTable) -> Option<SweepCounts> {
        let sweep = self.map.get(id)?;
        Some(counts_of(sweep.jobs.len(), table.counts(id)))
    }

    /// What a submission of `keys` to sweep `name` of `family` would change; refused when
    /// the sweep exists with another family.
    pub fn plan(&self, name: &str, family: &str, keys: &HashSet<Key>, table: &JobTable) -> Result<Plan, CommandError> {
        self.check_family(name, family)?;
        Ok(plan_of(&self.snapshot(name, table).jobs, keys))
    }

    /// Refused when sweep `name` exists with another family than `family`'s.
    pub fn check_family(&self, name: &str, family: &str) -> Result<(), CommandError> {
        let Some(sweep) = self.map.get(name) else { return Ok(()) };
        // By name: another version or revision of a declared family is the same family.
        fn family_name(families: &str) -> &str {
            base_family(families).split('+').next().unwrap_or_default()
        }
        let (kept, new) = (family_name(&sweep.family), family_name(family));
        if kept != new {
            return Err(CommandError::invalid_argument(format!(
                "family: sweep `{name}` exists with family `{kept}`, not `{new}`"
            )));
        }
        Ok(())
    }

    /// Sweep `name`'s jobs with their keys, at its revision (none of either for a sweep
    /// that does not exist): what a resubmission's plan is made from, off the scheduler.
    pub fn snapshot(&self, name: &str, table: &JobTable) -> SweepKeys {
        let Some(sweep) = self.map.get(name) else { return SweepKeys { revision: None, jobs: Vec::new() } };
        SweepKeys { revision: Some(sweep.revision), jobs: sweep.jobs.iter().map(|&i| (i, table.job(i).key)).collect() }
    }

    /// Sweep `name`'s revision (none for a sweep that does not exist).
    pub fn revision(&self, name: &str) -> Option<u64> {
        self.map.get(name).map(|s| s.revision)
    }

    /// A submission is committed in the store, and its new jobs are in the table from
    /// position `first` on: it becomes the sweep. What it dropped leaves the sweep (a
    /// running attempt of it is told to stop); its new queued jobs are queued; the sweep's
    /// failed and cancelled jobs run again (not in a `round`, which only adds seeds);
    /// `only_submitted` also queues the sweep's queued jobs that the coordinator found in
    /// the store and held back. Returns what follows: the dropped jobs' effects, the live
    /// summaries to reopen, the announcement check.
    #[allow(clippy::too_many_arguments)]
    pub fn submitted(
        &mut self,
        name: &str,
        family: &str,
        source: Option<Arc<str>>,
        round: bool,
        removed: &[JobIndex],
        first: JobIndex,
        table: &mut JobTable,
        only_submitted: bool,
    ) -> Vec<Effect> {
        self.revisions += 1;
        if !self.map.contains_key(name) {
            let sweep = Sweep::new(name, family.to_string());
            self.map.insert(sweep.id.clone(), sweep);
        }
        let sweep = self.map.get_mut(name).expect("inserted if absent");
        sweep.revision = self.revisions;
        // A resubmission may run other extensions of the family.
        sweep.family = family.to_string();
        sweep.source = source;
        sweep.judging = false;
        sweep.cancelled = false;
        sweep.announced = false;
        let mut effects = table.drop_jobs(removed);
        if !removed.is_empty() {
            let removed: HashSet<JobIndex> = removed.iter().copied().collect();
            sweep.jobs.retain(|i| !removed.contains(i));
        }
        let retry: Vec<JobIndex> = sweep
            .jobs
            .iter()
            .copied()
            .filter(|&i| !round && matches!(table.job(i).state, JobState::Cancelled | JobState::Failed))
            .collect();
        table.retry(&retry);
        if only_submitted {
            let held: Vec<JobIndex> = sweep
                .jobs
                .iter()
                .copied()
                .filter(|&i| table.job(i).state == JobState::Queued && !table.is_queued(i))
                .collect();
            for i in held {
                table.enqueue(i, false);
            }
        }
        let new = first.up_to(table.end());
        sweep.jobs.extend(new.clone());
        let queued: Vec<JobIndex> = new.filter(|&i| table.job(i).state == JobState::Queued).collect();
        table.enqueue_all(&queued);
        effects.push(Effect::OpenLive(sweep.id.clone()));
        effects.push(Effect::CheckFinished(sweep.id.clone()));
        effects
    }

    /// The sweep is cancelled in the store: its queued and running jobs are cancelled
    /// (running attempts hear "abandon" at their next heartbeat).
    pub fn cancel(&mut self, id: &str, table: &mut JobTable) -> Result<Vec<Effect>, CommandError> {
        let sweep = self.map.get_mut(id).ok_or_else(|| no_sweep(id))?;
        sweep.cancelled = true;
        let mut effects = table.cancel(&sweep.jobs);
        effects.push(Effect::CheckFinished(sweep.id.clone()));
        Ok(effects)
    }

    /// Whether the sweep may be deleted: it exists, no submission to it is being stored
    /// (`storing` names the one that is), and nothing of it is queued, running or
    /// committing.
    pub fn deletable(&self, id: &str, storing: Option<&str>, table: &JobTable) -> Result<(), CommandError> {
        let sweep = self.get(id)?;
        if storing == Some(id) {
            return Err(CommandError::failed_precondition(format!(
                "sweep `{id}`: a submission to it is being stored; delete it once `submit` has answered"
            )));
        }
        let busy = sweep.jobs.iter().any(|&i| {
            let j = table.job(i);
            matches!(j.state, JobState::Queued | JobState::Running) || j.committing
        });
        if busy {
            return Err(CommandError::failed_precondition(format!(
                "sweep `{id}` has queued or running jobs; cancel it first"
            )));
        }
        Ok(())
    }

    /// The deletable sweep is deleted from the store: forget it and its jobs (tombstones:
    /// their slots stay, so positions are stable). Answers the effects and its job count.
    pub fn delete(&mut self, id: &str, table: &mut JobTable) -> Result<(Vec<Effect>, u32), CommandError> {
        let sweep = self.map.remove(id).ok_or_else(|| no_sweep(id))?;
        let mut effects = table.drop_jobs(&sweep.jobs);
        effects.push(Effect::CloseLive(sweep.id.clone()));
        Ok((effects, sweep.jobs.len() as u32))
    }

    /// The status to announce, if the sweep has nothing queued or running and was not
    /// announced since its last submission; it is announced from here on.
    pub fn check_finished(&mut self, id: &str, table: &JobTable) -> Option<SweepStatus> {
        let sweep = self.map.get(id)?;
        if sweep.announced || !self.counts(id, table).is_finished() {
            return None;
        }
        let status = self.status(id, FailurePage::default(), table).ok()?;
        self.map.get_mut(id).expect("checked").announced = true;
        Some(status)
    }

    /// A resolving sweep's round is being judged (`true`), or its rounds are over.
    pub fn set_judging(&mut self, id: &str, judging: bool) {
        if let Some(sweep) = self.map.get_mut(id) {
            sweep.judging = judging;
        }
    }

    /// The sweep's live summaries were (re)opened as `generation`, over `n_cells` cells:
    /// its summary files are stale until that generation writes them.
    pub fn opened_live(&mut self, id: &str, generation: u64, n_cells: u32) {
        if let Some(sweep) = self.map.get_mut(id) {
            sweep.generation = generation;
            sweep.summarized = false;
            sweep.n_cells = n_cells;
        }
    }

    /// A sweep whose summaries are not rebuilt at startup knows its cells all the same.
    pub fn set_cells(&mut self, id: &str, n_cells: u32) {
        if let Some(sweep) = self.map.get_mut(id) {
            sweep.n_cells = n_cells;
        }
    }

    /// The live summaries of generation `generation` wrote the sweep's files: answers
    /// whether that is news to record in the store (not if a resubmission started newer
    /// ones, or the sweep is gone).
    pub fn summarized(&mut self, id: &str, generation: u64) -> bool {
        match self.map.get_mut(id) {
            Some(sweep) if sweep.generation == generation => {
                sweep.summarized = true;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::job_table::{Cause, CommitStart, Policy};
    use super::super::jobs::Template;
    use super::*;
    use crate::testing::Gen;
    use armada_core::JobSpec;
    use armada_proto::ids::{AttemptId, SessionId};
    use std::collections::{BTreeSet, HashMap};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const NAMES: [&str; 2] = ["a", "b"];

    fn key(k: u64) -> Key {
        Key::parse(&format!("{k:032x}")).unwrap()
    }

    /// What the history says the sweeps must hold.
    #[derive(Default)]
    struct Model {
        /// Each sweep's keys: those of its last submission.
        keys: HashMap<String, BTreeSet<Key>>,
        /// Cancelled since its last submission.
        cancelled: BTreeSet<String>,
        /// Announcements since its last submission.
        announced: HashMap<String, u32>,
    }

    /// Carry out what the scheduler would of `effects`: the announcements.
    fn announce(sweeps: &mut Sweeps, t: &JobTable, m: &mut Model, effects: &[Effect]) {
        for effect in effects {
            if let Effect::CheckFinished(id) = effect {
                if let Some(status) = sweeps.check_finished(id, t) {
                    assert_eq!((status.n_queued, status.n_running), (0, 0), "announced {id} unfinished");
                    *m.announced.entry(id.to_string()).or_default() += 1;
                }
            }
        }
    }

    fn check(sweeps: &Sweeps, t: &JobTable, m: &Model, context: &str) {
        let ids: BTreeSet<&str> = sweeps.ids().map(|id| id.as_str()).collect();
        assert_eq!(ids, m.keys.keys().map(String::as_str).collect(), "{context}: the sweeps");
        let mut owner: HashMap<JobIndex, &str> = HashMap::new();
        for (id, keys) in &m.keys {
            let sweep = sweeps.get(id).unwrap();
            for &i in &sweep.jobs {
                assert_eq!(&*t.job(i).sweep, id.as_str(), "{context}: job {i} of {id} names another sweep");
                if let Some(other) = owner.insert(i, id) {
                    panic!("{context}: job {i} is in {other} and {id}");
                }
            }
            let held: Vec<Key> = sweep.jobs.iter().map(|&i| t.job(i).key).collect();
            assert_eq!(held.len(), keys.len(), "{context}: {id} holds {held:?}, submitted {keys:?}");
            assert_eq!(held.into_iter().collect::<BTreeSet<_>>(), *keys, "{context}: {id}'s keys");
            let counts = sweeps.counts(id, t);
            assert_eq!(counts, sweeps.counted(id, t), "{context}: {id}'s counts, kept against counted");
            if m.cancelled.contains(id) {
                assert_eq!((counts.queued, counts.running), (0, 0), "{context}: cancelled {id} still runs");
            }
            let announced = m.announced.get(id).copied().unwrap_or(0);
            assert!(announced <= 1, "{context}: {id} announced {announced} times");
            assert_eq!(
                announced == 1,
                counts.is_finished(),
                "{context}: {id} finished {counts:?}, announced {announced}"
            );
            assert_eq!(sweep.announced, counts.is_finished(), "{context}: {id}'s flag");
        }
    }

    /// Random histories of submissions and resubmissions (new keys, kept keys, dropped
    /// keys, keys already on disk), leases that commit or fail, cancels, deletes (refused
    /// while anything runs) and summaries written by current or stale generations, against
    /// the module's invariants. No store, no runtime.
    #[test]
    fn random_histories_keep_the_sweep_invariants() {
        let (mut resubmitted, mut dropped, mut deleted, mut refused, mut announced) = (0, 0, 0, 0, 0);
        let spec = JobSpec::new("f", "bench", "algo");
        let template = Arc::new(Template::new(spec.clone(), spec.family.as_str().into(), 0));
        let families: BTreeSet<String> = ["f".to_string()].into();
        for seed in 1..=300u64 {
            let mut rng = Gen::new(seed);
            let mut t =
                JobTable::new(Policy { lease_ttl: Duration::from_secs(10), max_attempts: 2, retry_job_errors: false });
            let mut sweeps = Sweeps::new(PathBuf::from("results"));
            let mut m = Model::default();
            let now = Instant::now();
            let session: SessionId = "s".into();
            let mut next_attempt = 1;
            let mut generation = 0;
            for step in 0..120 {
                let context = format!("seed {seed} step {step}");
                let name = NAMES[rng.below(2) as usize];
                match rng.below(100) {
                    0..=24 => {
                        // Keys 0..10 of sweep a, 100..110 of b: the two share none (a key is
                        // its spec's and names no sweep; the same key in two sweeps would
                        // need the same jobs in both).
                        let base = if name == "a" { 0 } else { 100 };
                        let keys: HashSet<Key> = (0..10).filter(|_| rng.chance(60)).map(|k| key(base + k)).collect();
                        let plan = sweeps.plan(name, "f", &keys, &t).unwrap();
                        if sweeps.get(name).is_ok() {
                            resubmitted += 1;
                            dropped += plan.removed.len();
                        }
                        let first = t.len();
                        let id: SweepId = sweeps.id_of(name).unwrap_or_else(|| name.into());
                        let mut sorted: Vec<Key> = keys.iter().copied().collect();
                        sorted.sort();
                        for k in sorted.into_iter().filter(|k| !plan.known.contains(k)) {
                            let on_disk = rng.chance(20);
                            let state = if on_disk { JobState::Done } else { JobState::Queued };
                            t.push(Job::new(id.clone(), template.clone(), 0, k, state));
                        }
                        let effects = sweeps.submitted(
                            name,
                            "f",
                            None,
                            false,
                            &plan.removed,
                            JobIndex::new(first),
                            &mut t,
                            false,
                        );
                        assert!(effects.contains(&Effect::OpenLive(id.clone())), "{context}: live not reopened");
                        m.keys.insert(name.to_string(), keys.into_iter().collect());
                        m.cancelled.remove(name);
                        m.announced.remove(name);
                        announce(&mut sweeps, &t, &mut m, &effects);
                    }
                    25..=59 => {
                        let picked = t.pick(&families, 1);
                        let Some(&i) = picked.first() else { continue };
                        let attempt = AttemptId(next_attempt);
                        next_attempt += 1;
                        t.start_attempts(&picked, &[attempt], &session, "w", now);
                        let effects = if rng.chance(70) {
                            let (start, mut effects) = t.begin_commit(&"s".into(), attempt).unwrap();
                            let CommitStart::Check { job, revive } = start else { panic!("{context}: {start:?}") };
                            assert_eq!(job, i);
                            t.commit(i, attempt, revive);
                            effects.extend(t.committed(&[(i, attempt)]).0);
                            effects
                        } else {
                            t.fail(&"s".into(), attempt, "boom".into(), Cause::Worker, "w").unwrap().1
                        };
                        announce(&mut sweeps, &t, &mut m, &effects);
                    }
                    60..=69 => {
                        let Ok(effects) = sweeps.cancel(name, &mut t) else { continue };
                        m.cancelled.insert(name.to_string());
                        announce(&mut sweeps, &t, &mut m, &effects);
                    }
                    70..=84 => {
                        let Ok(sweep) = sweeps.get(name) else {
                            assert!(sweeps.deletable(name, None, &t).is_err());
                            continue;
                        };
                        let busy = sweeps.counts(name, &t).queued + sweeps.counts(name, &t).running > 0;
                        let jobs = sweep.jobs.clone();
                        assert!(sweeps.deletable(name, Some(name), &t).is_err(), "{context}: deleted while storing");
                        match sweeps.deletable(name, None, &t) {
                            Err(e) => {
                                assert!(busy, "{context}: {name} refused: {e}");
                                refused += 1;
                            }
                            Ok(()) => {
                                assert!(!busy, "{context}: {name} deletable while busy");
                                let (effects, n) = sweeps.delete(name, &mut t).unwrap();
                                assert_eq!(n as usize, jobs.len());
                                assert!(effects.contains(&Effect::CloseLive(name.into())));
                                m.keys.remove(name);
                                m.cancelled.remove(name);
                                m.announced.remove(name);
                                deleted += 1;
                            }
                        }
                    }
                    _ => {
                        let Ok(sweep) = sweeps.get(name) else { continue };
                        let current = sweep.generation;
                        let stale = rng.chance(30);
                        if rng.chance(50) {
                            generation += 1;
                            sweeps.opened_live(name, generation, 1);
                            assert!(!sweeps.get(name).unwrap().summarized, "{context}: reopened yet summarized");
                        }
                        let written =
                            if stale { current.wrapping_sub(1) } else { sweeps.get(name).unwrap().generation };
                        let news = sweeps.summarized(name, written);
                        assert_eq!(news, written == sweeps.get(name).unwrap().generation, "{context}: generation");
                        assert!(!news || sweeps.get(name).unwrap().summarized);
                    }
                }
                check(&sweeps, &t, &m, &context);
            }
            announced += m.announced.values().sum::<u32>();
        }
        // The histories reach every decision (floors chosen, not measured).
        assert!(resubmitted > 1000 && dropped > 1000, "{resubmitted} resubmissions dropping {dropped} jobs");
        assert!(deleted > 200 && refused > 200, "{deleted} deletes, {refused} refused");
        assert!(announced > 100, "{announced} announcements standing at the end");
    }

    #[test]
    fn a_sweep_of_another_family_is_refused_by_field() {
        let t = JobTable::new(Policy { lease_ttl: Duration::from_secs(1), max_attempts: 1, retry_job_errors: false });
        let mut sweeps = Sweeps::new(PathBuf::from("r"));
        sweeps.load("s", "lse".into(), false, false, None);
        let e = sweeps.plan("s", "safe", &HashSet::new(), &t).err().unwrap();
        assert_eq!(e.message(), "family: sweep `s` exists with family `lse`, not `safe`");
        assert_eq!(sweeps.get("t").err().unwrap().message(), "no sweep `t`");
    }

    #[test]
    fn job_infos_select_by_cell_up_to_the_limit_in_sweep_order() {
        let mut t =
            JobTable::new(Policy { lease_ttl: Duration::from_secs(1), max_attempts: 1, retry_job_errors: false });
        let mut sweeps = Sweeps::new(PathBuf::from("r"));
        let plan = sweeps.plan("s", "f", &(0..6).map(key).collect(), &t).unwrap();
        assert!(plan.known.is_empty());
        let id: SweepId = "s".into();
        for k in 0..6u64 {
            let algorithm = if k % 2 == 0 { "even" } else { "odd" };
            let spec = JobSpec::new("f", "bench", algorithm);
            let template = Arc::new(Template::new(spec, "f".into(), (k % 2) as usize));
            t.push(Job::new(id.clone(), template, 10 + k, key(k), JobState::Queued));
        }
        sweeps.submitted("s", "f", None, false, &[], JobIndex::new(0), &mut t, false);
        let odd = JobFilter { algorithm: Some("odd".into()), ..JobFilter::default() };
        let infos = sweeps.job_infos("s", &t, &odd, 2).unwrap();
        let seeds: Vec<u64> = infos.iter().map(|j| j.seed).collect();
        assert_eq!(seeds, [11, 13]);
        assert!(infos.iter().all(|j| j.algorithm == "odd" && j.state == "queued" && j.benchmark == "bench"));
        assert_eq!(sweeps.job_infos("s", &t, &JobFilter::default(), 100).unwrap().len(), 6);
        let none = JobFilter { benchmark: Some("other".into()), ..JobFilter::default() };
        assert!(sweeps.job_infos("s", &t, &none, 100).unwrap().is_empty());
        assert_eq!(sweeps.job_infos("x", &t, &odd, 1).unwrap_err().message(), "no sweep `x`");
    }
}
