//! The scheduler's job table entries, kept small: a coordinator holds every job of every
//! sweep in memory, a million at a time. A job is its cell's shared [`Template`], a seed,
//! a 16-byte [`Key`] and its state; a [`Submission`] carries new jobs in the same shape.

use super::stored::JobState;
use crate::results::{self, Cell};
use armada_core::{JobKey, JobSpec, Registry, SpecError, ValidJob};
use armada_proto::ids::{AttemptId, SweepId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use tracing::warn;

/// A job's place in the job table: how the table, the sweeps, the queue, the effects and
/// the committer name a job (never a count, an attempt or a seed). An index names one job
/// for the table's life. 32 bits: a coordinator holds millions of jobs, not billions, and
/// sweeps keep lists of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobIndex(u32);

impl JobIndex {
    /// The job at position `i` of the table.
    pub fn new(i: usize) -> JobIndex {
        JobIndex(u32::try_from(i).expect("the job table holds fewer than 2^32 jobs"))
    }

    /// Its position in the table.
    pub fn get(self) -> usize {
        self.0 as usize
    }

    /// The indices from `self` up to `end`, not included.
    pub fn up_to(self, end: JobIndex) -> impl Iterator<Item = JobIndex> + Clone {
        (self.0..end.0).map(JobIndex)
    }
}

impl fmt::Display for JobIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The table's jobs are a `Vec<Job>` indexed by [`JobIndex`].
impl std::ops::Index<JobIndex> for Vec<Job> {
    type Output = Job;

    fn index(&self, i: JobIndex) -> &Job {
        &self[i.get()]
    }
}

impl std::ops::IndexMut<JobIndex> for Vec<Job> {
    fn index_mut(&mut self, i: JobIndex) -> &mut Job {
        &mut self[i.get()]
    }
}

/// A job key in 16 bytes: the 32 hex digits of its [`JobKey`] as bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key([u8; 16]);

impl Key {
    /// Stands in for a stored key that is not one (a damaged store); such a job cannot run.
    pub const ZERO: Key = Key([0; 16]);

    /// The key of 32 hex digits (as [`JobSpec::key`] makes them); `None` for anything else.
    pub fn parse(hex: &str) -> Option<Key> {
        JobKey::parse_bytes(hex).map(Key)
    }

    /// The key of a cell's job of `seed`.
    pub fn of_seed(keys: &armada_core::SeedKeys, seed: u64) -> Key {
        Key(keys.key_bytes(seed))
    }

    /// Of a key this build computed: always 32 hex digits.
    pub fn of(key: &JobKey) -> Key {
        Key::parse(&key.0).unwrap_or_else(|| panic!("job key {key} is not 32 hex digits"))
    }

    pub fn bytes(&self) -> &[u8; 16] {
        &self.0
    }

    pub fn job_key(self) -> JobKey {
        JobKey(self.hex().iter().map(|&c| c as char).collect())
    }

    /// Its 32 lower-case hex digits (every lease and commit names keys: the formatting
    /// machinery, a call per byte, showed in profiles of short jobs).
    fn hex(&self) -> [u8; 32] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 32];
        for (i, b) in self.0.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(b >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(b & 15)];
        }
        out
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.hex()).expect("hex digits are ASCII"))
    }
}

/// What the jobs of one cell share: their spec but the seed (0 here), and their cell.
pub struct Template {
    pub spec: JobSpec,
    pub cell: Arc<Cell>,
    /// Its jobs' description up to the seed ([`ValidJob::describe`]'s start): an event names
    /// each job, and formatting the parameters per job showed in profiles.
    described: String,
    /// The family as the sweep refers to it ([`armada_core::Family::reference`]): a
    /// declared family's jobs are leased only to sessions that declared that very digest.
    pub family: Arc<str>,
    /// Its number among the scheduler's templates (0, 1, ...): jobs are counted by cell
    /// through it, without hashing a cell per job.
    pub id: usize,
}

impl Template {
    /// The template of `spec`'s cell (its seed is ignored), run by `family` (by reference).
    pub fn new(mut spec: JobSpec, family: Arc<str>, id: usize) -> Template {
        spec.seed = 0;
        Template::of_cell(Cell::of_spec(&spec), spec, family, id)
    }

    fn of_cell(cell: Cell, spec: JobSpec, family: Arc<str>, id: usize) -> Template {
        let s = &spec;
        let described =
            format!("{}/{}{} x {}{}", s.family, s.benchmark, s.benchmark_params, s.algorithm, s.algorithm_params);
        Template { cell: Arc::new(cell), spec, family, id, described }
    }
}

/// The templates of every job, shared by cell: jobs of one family reference, cell and
/// sweep seed point to one [`Template`], numbered in order of first use.
#[derive(Default)]
pub struct Templates {
    by_cell: HashMap<(Arc<str>, Cell, u64), Arc<Template>>,
    n: usize,
}

impl Templates {
    /// The shared template of a validated spec's cell (made on first use); its seed is
    /// ignored.
    pub fn shared(&mut self, mut spec: JobSpec, family: &str) -> Arc<Template> {
        spec.seed = 0;
        let id = (Arc::<str>::from(family), Cell::of_spec(&spec), spec.sweep_seed);
        if let Some(template) = self.by_cell.get(&id) {
            return template.clone();
        }
        let template = Arc::new(Template::of_cell(id.1.clone(), spec, id.0.clone(), self.next_id()));
        self.by_cell.insert(id, template.clone());
        template
    }

    /// A template of its own, shared with no other job (a stored job this build cannot run).
    pub fn unique(&mut self, spec: JobSpec, family: &str) -> Arc<Template> {
        Arc::new(Template::of_cell(Cell::of_spec(&spec), spec, family.into(), self.next_id()))
    }

    /// How many templates were made: their ids are `0..len()`.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn next_id(&mut self) -> usize {
        self.n += 1;
        self.n - 1
    }
}

pub struct Job {
    pub sweep: SweepId,
    pub template: Arc<Template>,
    pub seed: u64,
    pub key: Key,
    pub state: JobState,
    /// A commit's part is being written.
    pub committing: bool,
    /// Its current attempt started on its worker (not only leased ahead).
    pub started: bool,
    /// It had failed, and a late result revived it: its sweep's summaries counted it
    /// settled without a result, so they are reopened once it is settled again.
    pub revived: bool,
    /// It left its sweep (a tombstone: see `JobTable::drop_jobs`), and counts in no sweep.
    pub dropped: bool,
    pub attempts: u32,
    /// Attempts voided for the worker's fault (records that broke the schema): they do
    /// not count as attempts, but a job voided `MAX_VOIDED` times fails.
    pub voided: u32,
    /// The attempt the job is running (state `running`).
    pub current: Option<AttemptId>,
    /// Every attempt of the job the table still knows (its current one, and expired ones
    /// whose late result may still commit): the table's index from a job to its attempts,
    /// so settling a job never scans the attempts of the others.
    pub known_attempts: Vec<AttemptId>,
    pub error: Option<Box<str>>,
}

impl Job {
    pub fn new(sweep: SweepId, template: Arc<Template>, seed: u64, key: Key, state: JobState) -> Job {
        Job {
            sweep,
            template,
            seed,
            key,
            state,
            committing: false,
            started: false,
            revived: false,
            dropped: false,
            attempts: 0,
            voided: 0,
            current: None,
            known_attempts: Vec::new(),
            error: None,
        }
    }

    /// The job's validated spec (built from its template).
    pub fn valid(&self) -> ValidJob {
        let mut spec = self.template.spec.clone();
        spec.seed = self.seed;
        ValidJob { spec, key: self.key.job_key() }
    }

    /// [`ValidJob::describe`] of [`Job::valid`], without building the spec.
    pub fn describe(&self) -> String {
        format!("{} seed {} ({})", self.template.described, self.seed, self.key)
    }

    /// Leased to a worker that has not said it started it (leased ahead).
    pub fn leased_ahead(&self) -> bool {
        self.state == JobState::Running && !self.started
    }

    /// The family as the sweep refers to it (the queue and the sessions go by it).
    pub fn family(&self) -> &str {
        &self.template.family
    }

    pub fn cell(&self) -> &Cell {
        &self.template.cell
    }
}

/// A sweep's families as the store and the scheduler keep them: the reference of its
/// family ([`armada_core::Family::reference`]), then those of the extensions of it whose
/// algorithms its jobs run, space-separated (a reference holds no space).
pub fn sweep_families(family: &str, extensions: &[String]) -> String {
    std::iter::once(family).chain(extensions.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// The declared families of a sweep's [`sweep_families`] `now` whose declaration is not the
/// one they had in `was` (by name: the digest then, and now).
pub fn revised_families<'a>(was: &'a str, now: &'a str) -> Vec<(&'a str, &'a str, &'a str)> {
    let before: HashMap<&str, &str> = was.split(' ').filter_map(|r| r.split_once('+')).collect();
    now.split(' ')
        .filter_map(|r| r.split_once('+'))
        .filter_map(|(name, digest)| before.get(name).filter(|&&d| d != digest).map(|&d| (name, d, digest)))
        .collect()
}

/// The reference of a sweep's own family, first of its [`sweep_families`].
pub fn base_family(families: &str) -> &str {
    families.split(' ').next().unwrap_or_default()
}

/// A submitted sweep's jobs as the scheduler takes them: one spec per distinct template
/// (seed 0) and, per job, its template's index, seed and key; seed-major (the order the
/// local runner uses, so an interrupted sweep is balanced across cells), each key once.
/// Built off the scheduler, from validated jobs.
pub struct Submission {
    pub name: String,
    /// The sweep's families ([`sweep_families`]).
    pub family: String,
    pub templates: Vec<JobSpec>,
    /// The family of each template, by reference: the sweep's, or an extension's.
    pub families: Vec<String>,
    pub jobs: Vec<NewJob>,
    /// Every key of `jobs`.
    pub keys: HashSet<Key>,
    /// Positions in `jobs` in key order: the store's index takes them in that order, a few
    /// pages at a time.
    pub by_key: Vec<u32>,
    /// What it changes in its sweep, worked out off the scheduler ([`Submission::prepare`]);
    /// `None`: the scheduler works it out.
    pub prepared: Option<Prepared>,
    /// A resolving sweep's file (its `[resolve]` table): its rounds are made from it.
    pub source: Option<Arc<str>>,
    /// A round of a resolving sweep: it adds seeds to the sweep it holds whole, and leaves
    /// the sweep's failed jobs failed (a resubmission runs them again).
    pub round: bool,
}

/// What a submission changes in its sweep ([`super::sweeps::Sweeps::plan`]): its keys the sweep knows are
/// not added again, and the sweep's jobs it does not name are dropped.
pub struct Plan {
    /// Jobs the sweep holds already (new ones are ordered after them).
    pub base: usize,
    /// Keys the sweep holds already.
    pub known: HashSet<Key>,
    /// The sweep's jobs the submission drops.
    pub removed: Vec<JobIndex>,
}

/// A sweep's jobs (positions in the table) and their keys, at a revision.
pub struct SweepKeys {
    pub revision: Option<u64>,
    pub jobs: Vec<(JobIndex, Key)>,
}

/// What a submission of `keys` would change in a sweep whose jobs are `jobs`: the keys it
/// knows, and the jobs the submission drops. Pure: made off the scheduler for a large
/// sweep, and checked there against the sweep's revision.
pub fn plan_of(jobs: &[(JobIndex, Key)], keys: &HashSet<Key>) -> Plan {
    let known = jobs.iter().map(|&(_, key)| key).collect();
    let removed = jobs.iter().filter(|(_, key)| !keys.contains(key)).map(|&(i, _)| i).collect();
    Plan { base: jobs.len(), known, removed }
}

/// A submission's plan against its sweep at a revision, and the keys whose trajectories
/// are on disk already: the work of a resubmission that grows with the sweep, done off the
/// scheduler. The scheduler uses it only if the sweep is still at that revision.
pub struct Prepared {
    pub revision: Option<u64>,
    pub plan: Plan,
    pub on_disk: HashSet<Key>,
}

#[derive(Clone, Copy)]
pub struct NewJob {
    pub template: u32,
    pub seed: u64,
    pub key: Key,
}

impl Submission {
    /// Jobs are taken one at a time: a sweep's cells and seeds need not be expanded into
    /// a spec per job first ([`crate::sweep::SweepCells::into_jobs`]).
    pub fn new(name: String, family: String, jobs: impl IntoIterator<Item = ValidJob>) -> Submission {
        let jobs = jobs.into_iter();
        let mut templates: Vec<JobSpec> = Vec::new();
        // Sweep files list a template's seeds together: comparing with the last template
        // is enough for them; the map catches interleaved structured submissions.
        let mut by_text: HashMap<String, u32> = HashMap::new();
        let mut seen = HashSet::with_capacity(jobs.size_hint().0);
        let mut new_jobs = Vec::with_capacity(jobs.size_hint().0);
        for ValidJob { mut spec, key } in jobs {
            let key = Key::of(&key);
            if !seen.insert(key) {
                continue;
            }
            let seed = std::mem::take(&mut spec.seed);
            let template = match templates.last() {
                Some(last) if *last == spec => templates.len() as u32 - 1,
                // The canonical text identifies the template (the version plays no part).
                _ => *by_text.entry(spec.canonical(0)).or_insert_with(|| {
                    templates.push(spec);
                    templates.len() as u32 - 1
                }),
            };
            new_jobs.push(NewJob { template, seed, key });
        }
        new_jobs.sort_by_key(|j| j.seed);
        let mut by_key: Vec<u32> = (0..new_jobs.len() as u32).collect();
        by_key.sort_unstable_by_key(|&k| new_jobs[k as usize].key);
        let families = vec![family.clone(); templates.len()];
        Submission {
            name,
            family,
            templates,
            families,
            jobs: new_jobs,
            keys: seen,
            by_key,
            prepared: None,
            source: None,
            round: false,
        }
    }

    /// Work out off the scheduler what the submission changes in its sweep, whose jobs
    /// stand as `sweep` says, and which of its keys have trajectories in `sweep_dir`
    /// (damaged parts are warned of and left out, as the scheduler would).
    pub fn prepare(mut self, sweep: SweepKeys, sweep_dir: &Path) -> results::Result<Submission> {
        let (on_disk, damaged) = results::stored_keys(sweep_dir)?;
        for e in damaged {
            warn!(sweep = %self.name, error = %e, "a damaged part is left out: `armada check --repair` queues its jobs again");
        }
        let on_disk = on_disk.iter().filter_map(|k| Key::parse(k)).collect();
        let plan = plan_of(&sweep.jobs, &self.keys);
        self.prepared = Some(Prepared { revision: sweep.revision, plan, on_disk });
        Ok(self)
    }

    /// The submission of a sweep that may run algorithms of extensions of its family: each
    /// template's family is the one that declares its algorithm (an extension's jobs are
    /// leased only to the sessions that declared it), and the sweep's lists the
    /// extensions. `family` is the sweep's family's reference.
    pub fn with_extensions(
        name: String,
        family: String,
        jobs: impl IntoIterator<Item = ValidJob>,
        registry: &Registry,
    ) -> Result<Submission, SpecError> {
        let mut submission = Submission::new(name, family, jobs);
        let mut extensions = Vec::new();
        for (spec, family) in submission.templates.iter().zip(&mut submission.families) {
            let declaring = registry.declaring(&spec.family, &spec.algorithm)?;
            if declaring.extends().is_some() {
                *family = declaring.reference();
                if !extensions.contains(family) {
                    extensions.push(family.clone());
                }
            }
        }
        submission.family = sweep_families(&submission.family, &extensions);
        Ok(submission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job describes itself as its validated spec does, parameters and all.
    #[test]
    fn a_job_describes_itself_as_its_spec_does() {
        let mut spec = JobSpec::new("testkit", "constant", "slow");
        spec.algorithm_params = "{ms=3}".parse().unwrap();
        spec.horizon = 4;
        let mut templates = Templates::default();
        for seed in [0, 7, i64::MAX as u64] {
            spec.seed = seed;
            let valid = crate::registry().validate(&spec).unwrap();
            let template = templates.shared(spec.clone(), "testkit");
            let job = Job::new("s".into(), template, seed, Key::of(&valid.key), JobState::Queued);
            assert_eq!(job.describe(), valid.describe());
            assert_eq!(job.valid().describe(), valid.describe());
        }
        assert_eq!(templates.len(), 1, "one cell");
    }

    /// A resubmission names the declared families whose declaration it no longer has.
    #[test]
    fn revised_families_are_those_of_a_name_under_another_digest() {
        let was = "mybo+aaaa my-lse+bbbb other+cccc";
        let now = "mybo+dddd my-lse+bbbb new+eeee";
        assert_eq!(revised_families(was, now), vec![("mybo", "aaaa", "dddd")]);
        assert_eq!(revised_families("lse my-lse+bbbb", "lse my-lse+ffff"), vec![("my-lse", "bbbb", "ffff")]);
        assert!(revised_families("lse", "lse").is_empty());
    }

    #[test]
    fn a_key_round_trips_through_16_bytes_and_anything_else_is_refused() {
        let hex = "00ff10a9b8c7d6e5f4031229384756af";
        assert_eq!(Key::parse(hex).unwrap().to_string(), hex);
        for bad in ["", "00ff", &hex.to_uppercase()[..31], &format!("{hex}0"), "zzff10a9b8c7d6e5f4031229384756af"] {
            assert_eq!(Key::parse(bad), None, "{bad:?}");
        }
        // Upper-case digits parse, and print lower-case as keys are made.
        assert_eq!(Key::parse(&hex.to_uppercase()).unwrap().to_string(), hex);
    }

    #[test]
    fn a_submission_shares_templates_orders_seed_major_and_drops_repeated_keys() {
        let job = |algorithm: &str, seed: u64| {
            let mut spec = JobSpec::new("testkit", "echo", algorithm);
            spec.seed = seed;
            spec.horizon = 1;
            let key = spec.key(2);
            ValidJob { spec, key }
        };
        let jobs = vec![job("a", 1), job("a", 0), job("b", 0), job("a", 2), job("b", 1), job("a", 0)];
        let s = Submission::new("t".into(), "testkit".into(), jobs.clone());
        assert_eq!(s.templates.iter().map(|t| t.algorithm.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(s.templates.iter().all(|t| t.seed == 0));
        let order: Vec<(u32, u64)> = s.jobs.iter().map(|j| (j.template, j.seed)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]);
        let keys: Vec<Key> = s.by_key.iter().map(|&k| s.jobs[k as usize].key).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]) && keys.len() == 5 && s.keys.len() == 5);
        for j in &s.jobs {
            let mut spec = s.templates[j.template as usize].clone();
            spec.seed = j.seed;
            assert_eq!(Key::of(&spec.key(2)), j.key);
        }
    }
}
