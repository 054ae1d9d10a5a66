//! Restart recovery as a function of what the store holds: each stored job becomes the job
//! the table loads, with the correction the store needs to agree with it. No I/O and no
//! clock: the scheduler reads the store and the parts' indexes, calls [`Recovery::load`]
//! for each job in store order, and writes the corrections.
//!
//! Two things can make a stored job differ from what it says: a part written whose record
//! the previous coordinator did not live to store (the job is done, in that part), and a
//! build that no longer computes the key the job was stored under, or no longer accepts
//! its spec (the job stays visible, failed with the reason, and never runs).

use super::jobs::{base_family, Key, Template, Templates};
use super::stored::{JobState, SpecTemplate, StoredJob};
use armada_core::{Family, JobSpec, Registry, SpecError};
use std::collections::HashMap;
use std::sync::Arc;

/// A stored job, as the table loads it.
pub struct Loaded {
    pub template: Arc<Template>,
    pub seed: u64,
    pub key: Key,
    pub state: JobState,
    pub error: Option<String>,
    /// What the store must be told so that it agrees with `state`.
    pub fix: Option<StoreFix>,
}

/// A correction of a stored job.
#[derive(Clone, Debug, PartialEq)]
pub enum StoreFix {
    /// It was queued, and it is in `part`, which the store does not know: it is done there.
    Committed { part: String },
    /// This build cannot run it: it is failed, with `error` as the reason.
    Failed { error: String },
}

/// A cell's template with its encoded spec (seed 0) and key salt, kept by the bytes of its
/// stored template: the jobs of a sweep are stored seed by seed, its cells' templates in
/// turn, so most jobs only need their key hashed.
struct KnownCell {
    stored: SpecTemplate,
    /// Kept by its template's own bytes (not by a whole job's, from another encoder).
    exact: bool,
    /// The sweep's families it was loaded under.
    families: String,
    template: Arc<Template>,
    keys: armada_core::SeedKeys,
}

/// Loads the stored jobs of one start-up, in store order.
pub struct Recovery<'a> {
    registry: &'a Registry,
    /// The cells met, by their stored template's bytes (the stored spec without its seed).
    cells: HashMap<Vec<u8>, KnownCell>,
}

/// Cells whose templates a recovery keeps at once; beyond, it starts over (a sweep's jobs
/// are stored seed by seed, so the cells of one seed are what recur).
const CELLS_KEPT: usize = 4096;

impl<'a> Recovery<'a> {
    pub fn new(registry: &'a Registry) -> Self {
        Recovery { registry, cells: HashMap::new() }
    }

    /// Load one stored job of the sweep whose families are `reference` (as its submission
    /// named them, [`super::jobs::sweep_families`]: a declared one with its digest),
    /// checking that this build computes the key it was stored under. `unrecorded_part` is
    /// the part that holds it, when the store does not know that part. `void_running` ran
    /// before: nothing stored is `running`.
    pub fn load(
        &mut self,
        stored: &StoredJob,
        reference: &str,
        unrecorded_part: Option<&str>,
        templates: &mut Templates,
    ) -> Loaded {
        // Most jobs: the bytes before their seed are a known cell's template's.
        if let Some((bytes, seed)) = SpecTemplate::split_seed(&stored.spec) {
            if let Some(cell) = self.cells.get(bytes).filter(|c| c.exact && c.families == reference) {
                let key = Key::of_seed(&cell.keys, seed);
                if Key::parse(&stored.key) == Some(key) {
                    let template = cell.template.clone();
                    let (state, fix) = committed_unless_recorded(stored.state, unrecorded_part);
                    return Loaded { template, seed, key, state, error: stored.error.clone(), fix };
                }
            }
        }
        let decoded = SpecTemplate::decode(&stored.spec);
        let checked = match &decoded {
            Ok((stored_template, seed)) => {
                // Its template's bytes find its cell (or, from another encoder, all its bytes,
                // and the decoded template is compared).
                let (bytes, exact) = match SpecTemplate::template_bytes(&stored.spec, *seed) {
                    Some(bytes) => (bytes, true),
                    None => (&stored.spec[..], false),
                };
                self.key_of(bytes, exact, stored_template, *seed, reference, templates)
            }
            Err(e) => Err(e.clone()),
        };
        let stored_key = Key::parse(&stored.key);
        match (checked, stored_key) {
            (Ok((template, key)), Some(stored_key)) if Key::of(&key) == stored_key => {
                let seed = decoded.as_ref().map_or(0, |d| d.1);
                let (state, fix) = committed_unless_recorded(stored.state, unrecorded_part);
                Loaded { template, seed, key: stored_key, state, error: stored.error.clone(), fix }
            }
            (other, _) => {
                // A job of an older build: keep it visible, but it cannot run.
                let why = match other {
                    Ok((_, key)) => format!("this build computes key {key} for it (another armada version)"),
                    Err(e) => format!("no longer valid in this build: {e}"),
                };
                let (mut spec, mut seed) = (JobSpec::new("?", "?", "?"), 0);
                if let Ok((stored_template, stored_seed)) = &decoded {
                    let (family, benchmark, algorithm) = stored_template.names();
                    spec = JobSpec::new(family, benchmark, algorithm);
                    seed = *stored_seed;
                }
                let fix = (stored.state != JobState::Failed).then(|| StoreFix::Failed { error: why.clone() });
                Loaded {
                    template: templates.unique(spec, base_family(reference)),
                    seed,
                    key: stored_key.unwrap_or(Key::ZERO),
                    state: JobState::Failed,
                    error: Some(why),
                    fix,
                }
            }
        }
    }

    /// The shared template of a stored template and the key this build computes for it
    /// with `seed`. The template is decoded and validated once per cell, not per job.
    fn key_of(
        &mut self,
        bytes: &[u8],
        exact: bool,
        stored: &SpecTemplate,
        seed: u64,
        reference: &str,
        templates: &mut Templates,
    ) -> Result<(Arc<Template>, armada_core::JobKey), String> {
        let known = self.cells.get(bytes).is_some_and(|c| c.families == reference && (exact || c.stored == *stored));
        if !known {
            let spec = stored.to_spec()?;
            let family = family_of(self.registry, reference, &spec.algorithm).map_err(|e| e.to_string())?;
            let valid = armada_core::validate_as(family, &spec).map_err(|e| e.to_string())?;
            let template = templates.shared(valid.spec, &family.reference());
            let cell = KnownCell {
                stored: stored.clone(),
                exact,
                families: reference.to_string(),
                keys: template.spec.seed_keys(&family.key_salt()),
                template,
            };
            if self.cells.len() >= CELLS_KEPT {
                self.cells.clear();
            }
            self.cells.insert(bytes.to_vec(), cell);
        }
        let cell = self.cells.get(bytes).expect("kept just now");
        Ok((cell.template.clone(), cell.keys.key(seed)))
    }
}

/// A stored job's state and correction: done in `unrecorded_part` if it was queued there.
fn committed_unless_recorded(state: JobState, unrecorded_part: Option<&str>) -> (JobState, Option<StoreFix>) {
    match unrecorded_part.filter(|_| state == JobState::Queued) {
        Some(part) => (JobState::Done, Some(StoreFix::Committed { part: part.to_string() })),
        None => (state, None),
    }
}

/// The family among a sweep's `families` that runs `algorithm`: the extension that
/// declares it, or else the sweep's family (which then validates the job, or says why not).
pub fn family_of<'r>(registry: &'r Registry, families: &str, algorithm: &str) -> Result<&'r dyn Family, SpecError> {
    let mut references = families.split(' ');
    let family = registry.resolve(references.next().unwrap_or_default())?;
    let declares = |f: &&dyn Family| f.algorithms().iter().any(|a| a.name == algorithm);
    Ok(references.filter_map(|r| registry.resolve(r).ok()).find(declares).unwrap_or(family))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Gen;

    fn stored(seed: u64, state: JobState) -> StoredJob {
        stored_with(seed, 2, state)
    }

    /// A stored testkit job; jobs of different horizons are of different cells.
    fn stored_with(seed: u64, horizon: u32, state: JobState) -> StoredJob {
        let mut spec = JobSpec::new("testkit", "constant", "echo");
        spec.horizon = horizon;
        spec.seed = seed;
        let valid = crate::registry().validate(&spec).unwrap();
        let template = SpecTemplate::encode(&valid.spec);
        StoredJob {
            sweep_id: "t".into(),
            key: valid.key.to_string(),
            ord: seed as i64,
            spec: SpecTemplate::with_seed(&template, seed),
            state,
            attempts: 1,
            error: None,
        }
    }

    #[test]
    fn valid_jobs_load_as_stored_sharing_their_cells_template() {
        let registry = crate::registry();
        let (mut recovery, mut templates) = (Recovery::new(&registry), Templates::default());
        let a = recovery.load(&stored(1, JobState::Queued), "testkit", None, &mut templates);
        let b = recovery.load(&stored(2, JobState::Done), "testkit", None, &mut templates);
        assert_eq!((a.state, a.seed, a.fix.clone()), (JobState::Queued, 1, None));
        assert_eq!((b.state, b.seed, b.fix.clone()), (JobState::Done, 2, None));
        assert_eq!(a.key.to_string(), stored(1, JobState::Queued).key);
        assert!(Arc::ptr_eq(&a.template, &b.template) && templates.len() == 1);
        assert_eq!(a.template.spec.seed, 0);
    }

    #[test]
    fn a_queued_job_in_a_part_the_store_does_not_know_is_done_there() {
        let registry = crate::registry();
        let (mut recovery, mut templates) = (Recovery::new(&registry), Templates::default());
        let part = Some("part-1.parquet");
        let queued = recovery.load(&stored(1, JobState::Queued), "testkit", part, &mut templates);
        assert_eq!(queued.state, JobState::Done);
        assert_eq!(queued.fix, Some(StoreFix::Committed { part: "part-1.parquet".into() }));
        // Settled jobs keep their state: a failed or cancelled job's late part is not its result.
        for state in [JobState::Done, JobState::Failed, JobState::Cancelled] {
            let other = recovery.load(&stored(2, state), "testkit", part, &mut templates);
            assert_eq!((other.state, other.fix), (state, None), "{state:?}");
        }
    }

    #[test]
    fn a_job_this_build_cannot_run_is_failed_with_the_reason_once() {
        let registry = crate::registry();
        let (mut recovery, mut templates) = (Recovery::new(&registry), Templates::default());
        // Stored under another key (another armada version).
        let mut moved = stored(1, JobState::Queued);
        moved.key = "0".repeat(32);
        let loaded = recovery.load(&moved, "testkit", Some("part-1.parquet"), &mut templates);
        let error = loaded.error.clone().unwrap();
        assert!(error.starts_with("this build computes key "), "{error}");
        assert_eq!((loaded.state, loaded.fix), (JobState::Failed, Some(StoreFix::Failed { error })));
        assert_eq!(loaded.key.to_string(), "0".repeat(32));
        assert_eq!(loaded.template.spec.family, "testkit");
        // Already failed in the store: nothing to write.
        moved.state = JobState::Failed;
        assert_eq!(recovery.load(&moved, "testkit", None, &mut templates).fix, None);
        // A family this build does not have, and bytes that are no spec.
        let unknown = recovery.load(&stored(2, JobState::Queued), "nope", None, &mut templates);
        assert!(unknown.error.unwrap().starts_with("no longer valid in this build: "));
        let mut garbage = stored(3, JobState::Done);
        garbage.spec = vec![0xff; 7];
        let loaded = recovery.load(&garbage, "testkit", None, &mut templates);
        assert_eq!((loaded.state, loaded.seed), (JobState::Failed, 0));
        assert_eq!(loaded.template.spec.family, "?");
        assert!(matches!(loaded.fix, Some(StoreFix::Failed { .. })));
        // Each job that cannot run has a template of its own.
        assert!(!Arc::ptr_eq(&loaded.template, &unknown.template));
    }

    /// Random stores: jobs of interleaved cells in any order and state, some in parts the
    /// store does not know, some stored under another key, under a family this build lacks,
    /// or as bytes that are no spec. Each loads as checking it alone says (validating its
    /// spec afresh, without the cell cache), and the jobs of a cell share one template.
    #[test]
    fn random_stores_load_as_each_job_checked_alone_says() {
        let registry = crate::registry();
        let states = [JobState::Queued, JobState::Done, JobState::Failed, JobState::Cancelled];
        let (mut fixed, mut failed, mut shared) = (0, 0, 0);
        for seed in 1..=200u64 {
            let mut rng = Gen::new(seed);
            let (mut recovery, mut templates) = (Recovery::new(&registry), Templates::default());
            let mut cells: std::collections::HashMap<u32, Arc<Template>> = Default::default();
            // Cells whose spec this build accepts (a job stored under another key shares its
            // cell's template while checking, then gets one of its own).
            let mut valid_cells = std::collections::HashSet::new();
            let mut unrunnable = 0;
            for n in 0..rng.below(60) {
                let context = format!("seed {seed} job {n}");
                let horizon = 1 + rng.below(3) as u32;
                let state = *rng.pick(&states);
                let mut job = stored_with(n, horizon, state);
                let mut reference = "testkit";
                let corruption = rng.below(20);
                match corruption {
                    0 => job.key = format!("{:032x}", rng.next_u64()),
                    1 => reference = "gone",
                    2 => job.spec = vec![0xff; 1 + rng.below(9) as usize],
                    _ => {}
                }
                let part = rng.chance(30).then(|| format!("part-{}.parquet", rng.below(5)));
                let loaded = recovery.load(&job, reference, part.as_deref(), &mut templates);
                // The oracle: the job's spec validated alone.
                let alone = SpecTemplate::decode(&job.spec).ok().and_then(|(t, s)| {
                    let mut spec = t.to_spec().ok()?;
                    spec.seed = s;
                    let family = registry.resolve(reference).ok()?;
                    armada_core::validate_as(family, &spec).ok()
                });
                if alone.is_some() {
                    valid_cells.insert(horizon);
                }
                let runnable = alone.as_ref().is_some_and(|v| v.key.to_string() == job.key);
                if runnable {
                    let queued_in_part = state == JobState::Queued && part.is_some();
                    let expected_state = if queued_in_part { JobState::Done } else { state };
                    let expected_fix = part.filter(|_| queued_in_part).map(|part| StoreFix::Committed { part });
                    assert_eq!(
                        (loaded.state, &loaded.fix, loaded.seed),
                        (expected_state, &expected_fix, n),
                        "{context}"
                    );
                    assert_eq!(loaded.key.to_string(), job.key, "{context}");
                    let template = cells.entry(horizon).or_insert_with(|| loaded.template.clone());
                    assert!(Arc::ptr_eq(template, &loaded.template), "{context}: a cell's second template");
                    assert_eq!(loaded.template.spec.horizon, horizon, "{context}");
                    fixed += usize::from(expected_fix.is_some());
                } else {
                    unrunnable += 1;
                    failed += 1;
                    assert_eq!(loaded.state, JobState::Failed, "{context}: corruption {corruption}");
                    let error = loaded.error.clone().unwrap_or_default();
                    let expected_fix = (state != JobState::Failed).then(|| StoreFix::Failed { error: error.clone() });
                    assert_eq!(loaded.fix, expected_fix, "{context}");
                    assert!(
                        error.starts_with("this build computes key ")
                            || error.starts_with("no longer valid in this build: "),
                        "{context}: {error}"
                    );
                }
            }
            // One template per valid cell met, and one of its own per job that cannot run.
            assert_eq!(templates.len(), valid_cells.len() + unrunnable, "seed {seed}");
            shared += cells.len();
        }
        // The cases reach each branch (floors chosen, not measured).
        assert!(fixed > 200 && failed > 300 && shared > 400, "{fixed} fixed, {failed} failed, {shared} cells");
    }
}
